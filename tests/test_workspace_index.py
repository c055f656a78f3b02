"""The workspace index (engine/workspace/): what it holds, what it never holds, how it
stays current, and that a broken index is rebuilt rather than a crash."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from engine.workspace import Limits, WorkspaceContext, WorkspaceIndex
from engine.workspace.files import walk
from engine.workspace.retrieve import Draft, cursor_lines, drafts_for

CODE = "def total(items):\n    result = 0\n    for item in items:\n        result += item.price\n    return result\n"


def indexed_paths(index: WorkspaceIndex) -> set[str]:
    return {path for (path,) in index.db.execute("SELECT path FROM files")}


def all_lines(index: WorkspaceIndex) -> set[str]:
    return {text for (text,) in index.db.execute("SELECT text FROM lines")}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "shop.py").write_text(CODE)
    (root / "pkg" / "util.js").write_text("function add(a, b) {\n  return a + b\n}\n")
    return root


def open_index(root: Path, tmp_path: Path, **kw) -> WorkspaceIndex:
    return WorkspaceIndex(root, cache_dir=tmp_path / "cache", **kw)


def test_indexes_source_files_with_their_lines(workspace: Path, tmp_path: Path) -> None:
    index = open_index(workspace, tmp_path)
    report = index.refresh()
    assert indexed_paths(index) == {"pkg/shop.py", "pkg/util.js"}
    assert report.look_alike and not any("FTS5" in line for line in report.lines_of_text())
    assert "result += item.price" in all_lines(index) and "return a + b" in all_lines(index)
    assert report.files == 2 and report.updated == 2 and report.lines == index.db.execute("SELECT count(*) FROM lines").fetchone()[0]
    # A second refresh reads nothing: sizes and times are unchanged.
    assert index.refresh().updated == 0


def test_ignored_secret_vendored_and_binary_files_never_reach_the_index(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".gitignore").write_text("generated_*.py\nprivate/\n")
    (workspace / "generated_api.py").write_text("IGNORED_BY_GITIGNORE = 1\n")
    (workspace / "private").mkdir()
    (workspace / "private" / "keys.py").write_text("IGNORED_FOLDER = 1\n")
    (workspace / ".infillignore").write_text("drafts.py\n")
    (workspace / "drafts.py").write_text("IGNORED_BY_INFILLIGNORE = 1\n")
    (workspace / ".env").write_text("API_KEY=hunter2hunter2\n")
    (workspace / "settings.py").write_text('KEY = """-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"""\n')
    (workspace / "token.js").write_text("const t = 'ghp_" + "a" * 36 + "'\n")
    (workspace / "node_modules" / "dep").mkdir(parents=True)
    (workspace / "node_modules" / "dep" / "index.js").write_text("VENDORED = 1\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "hook.py").write_text("IN_GIT = 1\n")
    (workspace / "blob.py").write_bytes(b"x = 1\n\x00\x01\x02")
    (workspace / "app.min.js").write_text("var a=1;\n")
    index = open_index(workspace, tmp_path)
    report = index.refresh()
    assert indexed_paths(index) == {"pkg/shop.py", "pkg/util.js"}
    assert report.look_alike and not any("FTS5" in line for line in report.lines_of_text())
    text = " ".join(all_lines(index))
    for marker in ("IGNORED", "hunter2", "PRIVATE KEY", "ghp_", "VENDORED", "IN_GIT"):
        assert marker not in text
    assert report.skipped["secret (file name)"] == 1
    assert report.skipped["secret (content)"] == 2
    assert report.skipped["binary"] == 1 and report.skipped["minified"] == 1
    assert report.skipped["ignored (.gitignore / .infillignore)"] == 3


def test_symlinks_that_leave_the_root_are_not_followed(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.py").write_text("OUTSIDE_THE_ROOT = 1\n")
    (workspace / "link.py").symlink_to(outside / "elsewhere.py")
    (workspace / "linked_dir").symlink_to(outside, target_is_directory=True)
    (workspace / "inside_link.py").symlink_to(workspace / "pkg" / "shop.py")
    index = open_index(workspace, tmp_path)
    report = index.refresh()
    assert "OUTSIDE_THE_ROOT = 1" not in all_lines(index)
    assert "link.py" not in indexed_paths(index) and not any(p.startswith("linked_dir") for p in indexed_paths(index))
    assert "inside_link.py" in indexed_paths(index)  # a link that stays inside is just another name
    assert report.skipped["symlink leaves the workspace"] == 1 and report.skipped["symlinked folder (not followed)"] == 1


def test_a_50_mb_file_is_skipped_by_its_size_without_being_read(workspace: Path, tmp_path: Path) -> None:
    huge = workspace / "huge.py"
    with huge.open("wb") as f:
        f.truncate(50 * 1024 * 1024)  # sparse: 50 MB by its size, nothing written
    report = open_index(workspace, tmp_path).refresh()
    assert report.skipped["over the size cap (1000000 bytes)"] == 1
    assert report.examples["over the size cap (1000000 bytes)"] == "huge.py"


def test_caps_on_files_and_bytes_name_what_they_skipped(workspace: Path) -> None:
    for i in range(5):
        (workspace / f"m{i}.py").write_text(f"value_{i} = {i}\n")
    selection = walk(workspace, Limits(max_files=3))
    assert len(selection.kept) == 3 and selection.skipped["over the cap of 3 files"] == 4
    selection = walk(workspace, Limits(max_total_bytes=40))
    assert selection.skipped["over the cap of 40 bytes in all"] >= 1


def test_files_deleted_or_rewritten_while_indexing(workspace: Path, tmp_path: Path) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (workspace / name).write_text(f"{name[0]}_first = 1\n")
    index = open_index(workspace, tmp_path)

    def meddle(done: int, total: int, path: str) -> None:
        if path == "a.py":  # while a.py is read: b.py goes away, c.py is rewritten
            (workspace / "b.py").unlink()
            (workspace / "c.py").write_text("c_second = 2  # longer than before\n")

    report = index.refresh(progress=meddle)
    assert "b.py" not in indexed_paths(index) and report.skipped["vanished or unreadable"] == 1
    # c.py was read after its rewrite or will be on the next refresh; never a crash, never both.
    index.refresh()
    assert "c_second = 2  # longer than before" in all_lines(index) and "c_first = 1" not in all_lines(index)


def test_one_changed_or_deleted_file_is_updated_alone(workspace: Path, tmp_path: Path) -> None:
    index = open_index(workspace, tmp_path)
    index.refresh()
    (workspace / "pkg" / "shop.py").write_text(CODE.replace("item.price", "item.cost"))
    assert index.update_file(workspace / "pkg" / "shop.py") is None
    assert "result += item.cost" in all_lines(index) and "result += item.price" not in all_lines(index)
    (workspace / "pkg" / "util.js").unlink()
    assert index.update_file(workspace / "pkg" / "util.js") == "deleted"
    assert indexed_paths(index) == {"pkg/shop.py"}
    assert index.update_file(tmp_path / "elsewhere.py") == "outside the workspace"


def test_an_edited_file_holds_the_rows_a_fresh_index_would(workspace: Path, tmp_path: Path) -> None:
    # update_file rewrites only the rows an edit changed and renumbers the lines it moved:
    # after each edit the file's rows, and what lookups return, equal a fresh index's.
    path = workspace / "pkg" / "shop.py"
    base = CODE.split("\n")
    edits = [
        ["import os", ""] + base,                                    # lines added at the top: every line moves
        base[:2] + ["    count = 0", "", "    count += 1"] + base[2:],  # added in the middle
        base[:1] + base[3:],                                         # removed
        base[:1] + ["    x = " + "1" * 500] + base[1:],              # a line too long to hold: still a neighbour
        [line.upper() for line in base],                             # every line changed
        base + ["def again(items):"] + base[1:],                     # lines repeated
        base,
        ["def total(things):"] + base[1:4] + [""] + base[4:],        # a line changed, a blank line added further down
        ["pass"] * 6,                                                # one line six times,
        ["pass"] * 5,                                                # then five
        [""],                                                        # emptied
        base,                                                        # back
    ]
    index = open_index(workspace, tmp_path / "edited")
    index.refresh()
    query = "SELECT line, indent, text, key, prev, prev2, next FROM lines WHERE file = ? ORDER BY line"
    for number, lines in enumerate(edits):
        path.write_text("\n".join(lines))
        assert index.update_file(path) is None
        fresh = open_index(workspace, tmp_path / f"fresh{number}")
        fresh.refresh()
        assert index.db.execute(query, (index.file_id(path),)).fetchall() == fresh.db.execute(query, (fresh.file_id(path),)).fetchall()
        for text in {line.strip() for line in lines} | {""}:
            assert index.lines_after(text, 400) == fresh.lines_after(text, 400)
            assert index.lines_before(text, 400) == fresh.lines_before(text, 400)
        for text in {line.strip() for line in base + lines}:  # the full-text index follows the edits (rows by id: ties may order apart)
            for side in ("after", "before"):
                assert sorted(index.lines_like(text, side, 400)) == sorted(fresh.lines_like(text, side, 400))
        fresh.close()


def test_a_file_rewritten_whole_goes_to_the_side_table_and_reads_the_same(workspace: Path, tmp_path: Path, monkeypatch) -> None:
    # A save that rewrites more than SIDE_ROWS rows (a formatter run) writes the file's rows
    # to the small side table instead of scattering them over the big one's indexes; rows,
    # lookups and the text around a line read as a fresh index's, before and after the next
    # refresh merges the side table back.
    import engine.workspace.index as index_module

    monkeypatch.setattr(index_module, "SIDE_ROWS", 2)
    path = workspace / "pkg" / "shop.py"
    base = CODE.split("\n")
    index = open_index(workspace, tmp_path / "side")
    index.refresh()

    def same_as_fresh(lines: list[str], name: str) -> None:
        fresh = open_index(workspace, tmp_path / name)
        fresh.refresh()
        file_id, fresh_id = index.file_id(path), fresh.file_id(path)
        assert index.rows(file_id) == fresh.rows(fresh_id)
        for text in {line.strip() for line in lines} | {""}:
            assert index.lines_after(text, 400) == fresh.lines_after(text, 400)
            assert index.lines_before(text, 400) == fresh.lines_before(text, 400)
        assert index.around(file_id, 2, 3) == fresh.around(fresh_id, 2, 3)
        if not index.db.execute("SELECT count(*) FROM files WHERE fresh").fetchone()[0]:  # side-table rows wait for the merge
            for text in {line.strip() for line in lines}:
                assert sorted(index.lines_like(text, "after", 400)) == sorted(fresh.lines_like(text, "after", 400))
        assert index.lines_around(file_id, 2, 3) == fresh.lines_around(fresh_id, 2, 3)
        fresh.close()

    for number, lines in enumerate([[line.upper() for line in base], [line.upper() for line in base] + ["x = 1"], base]):
        path.write_text("\n".join(lines))
        assert index.update_file(path) is None
        assert index.db.execute("SELECT fresh FROM files WHERE id = ?", (index.file_id(path),)).fetchone()[0] == 1
        same_as_fresh(lines, f"fresh{number}")
    report = index.refresh()  # merges the side table back
    assert index.db.execute("SELECT count(*) FROM fresh").fetchone()[0] == 0
    assert index.db.execute("SELECT count(*) FROM files WHERE fresh").fetchone()[0] == 0
    assert report.lines == index.db.execute("SELECT count(*) FROM lines").fetchone()[0]
    same_as_fresh(base, "fresh-merged")
    path.unlink()
    assert index.update_file(path) == "deleted"
    assert index.db.execute("SELECT count(*) FROM fresh").fetchone()[0] == 0


def test_a_corrupt_index_is_rebuilt_not_a_crash(workspace: Path, tmp_path: Path) -> None:
    index = open_index(workspace, tmp_path)
    index.refresh()
    index.close()
    index.db_path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(index.db_path) + suffix).unlink(missing_ok=True)
    again = open_index(workspace, tmp_path)
    assert again.refresh().updated == 2
    assert "return result" in all_lines(again)
    sqlite3.connect(again.db_path).execute("SELECT count(*) FROM lines").fetchone()


def test_an_index_of_another_schema_is_rebuilt(workspace: Path, tmp_path: Path, caplog) -> None:
    index = open_index(workspace, tmp_path)
    index.refresh()
    index.db.execute("UPDATE meta SET value = 'old' WHERE key = 'schema'")
    index.db.commit()
    index.close()
    with caplog.at_level("INFO", logger="infill.workspace"):
        assert open_index(workspace, tmp_path).refresh().updated == 2
    # An upgrade says so; it is no warning that the index is unreadable.
    assert any("another version of infill (schema old, now" in r.getMessage() and r.levelname == "INFO" for r in caplog.records)
    assert not any(r.levelname == "WARNING" for r in caplog.records)


def test_lines_like_finds_the_neighbours_of_a_line_sharing_its_rarest_names(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "range.js").write_text("class Range {\n  constructor (range, options) {\n    options = parseOptions(options)\n  }\n}\n")
    (root / "other.js").write_text("function f (options) {\n  return options\n}\n")
    index = open_index(root, tmp_path)
    index.refresh()
    after = index.lines_like("constructor (comp, options) {", "after", 10)
    assert [(text, neighbour) for _, _, _, text, neighbour in after][0] == ("options = parseOptions(options)", "constructor (range, options) {")
    before = index.lines_like("options = parseOptions(opts)", "before", 10)
    assert ("constructor (range, options) {", "options = parseOptions(options)") in [(text, neighbour) for _, _, _, text, neighbour in before]
    # A name in more lines than `rare` is no evidence: `options` (in 4 lines) alone finds nothing then.
    assert index.lines_like("options", "after", 10, rare=3) == [] and index.lines_like("options", "after", 10, rare=4)
    assert index.lines_like("nothing_like_it", "after", 10) == [] and index.lines_like("x", "sideways", 10) == []


def test_a_long_neighbour_line_costs_at_most_like_names_lookups(workspace: Path, tmp_path: Path, monkeypatch) -> None:
    import engine.workspace.index as index_module

    index = open_index(workspace, tmp_path)
    index.refresh()
    asked: list[list[str]] = []
    holding = index._holding
    monkeypatch.setattr(index, "_holding", lambda names: asked.append(names) or holding(names))
    long_line = " + ".join(f"name_{i}" for i in range(5000)) + " + items"
    assert index.lines_like(long_line, "after", 10) == []  # `items` is past the names read
    assert len(asked) == 1 and len(asked[0]) == index_module.LIKE_NAMES
    assert index.lines_like("for item in items:", "after", 10)[0][3] == "result += item.price"


def test_an_sqlite_without_full_text_search_still_indexes_and_drafts(workspace: Path, tmp_path: Path, monkeypatch) -> None:
    import engine.workspace.index as index_module

    monkeypatch.setattr(index_module, "_WORDS_SCHEMA", "CREATE VIRTUAL TABLE words USING no_such_module(text);")
    index = open_index(workspace, tmp_path)
    report = index.refresh()
    assert not index.has_words and report.files == 2 and "result += item.price" in all_lines(index)
    assert any("SQLite has no FTS5" in line for line in report.lines_of_text())  # `infill index` says what is missing
    assert index.lines_like("for item in items:", "after", 10) == []
    prefix = "def grand_total(items):\n    result = 0\n    for item in items:\n        "
    drafts = drafts_for(index, prefix, "\n    return result\n", filename=str(workspace / "pkg" / "new.py"))
    assert drafts and drafts[0].line == "result += item.price"


def test_a_workspace_that_is_not_a_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        WorkspaceIndex(tmp_path / "missing", cache_dir=tmp_path)


# -- drafts --------------------------------------------------------------------------------

def test_drafts_come_from_the_line_that_followed_the_same_line_elsewhere(workspace: Path, tmp_path: Path) -> None:
    index = open_index(workspace, tmp_path)
    index.refresh()
    prefix = "def grand_total(items):\n    result = 0\n    for item in items:\n        "
    drafts = drafts_for(index, prefix, "\n    return result\n", filename=str(workspace / "pkg" / "new.py"))
    assert drafts and drafts[0].line == "result += item.price"
    assert drafts[0].text == "result += item.price" and drafts[0].both == 1 and drafts[0].in_buffer == 0


def test_a_line_whose_neighbour_looks_like_the_cursors_is_a_draft(tmp_path: Path) -> None:
    # No line anywhere follows `constructor (comp, options) {` verbatim, but one follows a
    # line sharing its rarer names: that line is a draft, with how alike the neighbours are.
    root = tmp_path / "repo"
    (root / "classes").mkdir(parents=True)
    (root / "classes" / "range.js").write_text("class Range {\n  constructor (range, options) {\n    options = parseOptions(options)\n"
                                               "    this.raw = range\n  }\n}\n")
    index = open_index(root, tmp_path)
    index.refresh()
    prefix = "class Comparator {\n  constructor (comp, options) {\n    "
    drafts = drafts_for(index, prefix, "\n    this.loose = !!options.loose\n  }\n}\n", filename=str(root / "classes" / "comparator.js"))
    alike = next(d for d in drafts if d.line == "options = parseOptions(options)")
    assert alike.alike == pytest.approx(6 / 8) and alike.after_prev == 0 and alike.origin == "classes/range.js:3"


def test_look_alike_neighbours_are_asked_only_where_the_same_neighbours_found_little(tmp_path: Path, monkeypatch) -> None:
    import engine.workspace.retrieve as retrieve

    root = tmp_path / "repo"
    root.mkdir()
    # Five different lines follow `}` elsewhere: the same neighbours already found plenty.
    (root / "a.js").write_text("".join(f"function f{i} () {{\n  return {i}\n}}\nconst v{i} = f{i}()\n" for i in range(5)))
    index = open_index(root, tmp_path)
    index.refresh()
    asked: list[str] = []
    lines_like = index.lines_like
    monkeypatch.setattr(index, "lines_like", lambda line, *a, **k: asked.append(line) or lines_like(line, *a, **k))
    filename = str(root / "b.js")
    drafts_for(index, "function g () {\n  return 9\n}\n", "\nmodule.exports = g\n", filename=filename)
    assert asked == [] and retrieve.ALIKE_GATE <= 5
    drafts_for(index, "function g () {\n  const nine = 9\n  ", "\n  return nine\n}\n", filename=filename)  # neither neighbour stands anywhere
    assert asked == ["const nine = 9", "return nine"]


def test_the_unsaved_buffer_wins_over_the_disk(workspace: Path, tmp_path: Path) -> None:
    index = open_index(workspace, tmp_path)
    index.refresh()
    path = str(workspace / "pkg" / "shop.py")
    # The buffer of shop.py says item.cost; the disk still says item.price.
    buffer = CODE.replace("item.price", "item.cost") + "\ndef again(items):\n    result = 0\n    for item in items:\n        "
    drafts = drafts_for(index, buffer, "\n    return result\n", filename=path)
    assert drafts[0].line == "result += item.cost" and "result += item.price" not in [d.line for d in drafts]
    # Another open document's unsaved text wins over its file too.
    other = str(workspace / "pkg" / "util.js")
    context = WorkspaceContext(index, buffers={other: "function add(a, b) {\n  return b + a\n}\n"})
    js = context.drafts("function sum(a, b) {\n  ", "\n}\n", filename=str(workspace / "pkg" / "new.js"))
    assert js[0].line == "return b + a" and "return a + b" not in [d.line for d in js]


def test_drafts_fit_what_is_typed_around_the_cursor() -> None:
    buffer = "x = compute(a)\nreturn x\n\nx = compute(a)\nret"
    drafts = drafts_for(None, buffer, "\n")
    assert [(d.line, d.text) for d in drafts] == [("return x", "urn x")]
    assert cursor_lines("a\n  b = (", ")\nc").rest == ")"
    assert drafts_for(None, "", "") == []


def test_a_draft_names_the_file_and_line_of_its_strongest_place(tmp_path: Path) -> None:
    """Draft.origin: "path:line", the path relative to the root, the line 1-based (the
    index numbers lines from 0), of the place with the most evidence: here b.py's, where the
    line sits between the cursor's two neighbours, not a.py's, found first, after one."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "a.py").write_text("def a(items):\n    result = 0\n    result += item.price\n    print(result)\n")
    (root / "pkg" / "b.py").write_text("# b\n\n\ndef b(items):\n    result = 0\n\n    result += item.price\n    return result\n")
    index = open_index(root, tmp_path)
    index.refresh()
    def draft(suffix: str, line: str = "result += item.price", **kw: object) -> Draft:
        (found,) = [d for d in drafts_for(index, "def t(items):\n    result = 0\n    ", suffix, **kw) if d.line == line]  # type: ignore[arg-type]
        return found

    strongest = draft("\n    return result\n", filename=str(root / "new.py"))
    assert (strongest.both, strongest.after_prev) == (1, 2)
    assert strongest.origin == os.path.join("pkg", "b.py") + ":7"
    lines = (root / "pkg" / "b.py").read_text().split("\n")
    assert lines[7 - 1].strip() == "result += item.price"  # the line the origin names, counted from 1
    # One place only: a.py's line 3.
    assert draft("\n    print(result)\n").origin == "a.py:3"


def test_a_draft_from_a_buffer_names_its_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "lib.py").write_text("value = 1\n")
    index = open_index(root, tmp_path)
    index.refresh()
    # The request's own buffer: the place is after the cursor, on line 8 of the file.
    prefix, suffix = "def g(a):\n    x = compute(a)\n    ", "\n\n\ndef f(a):\n    x = compute(a)\n    return x\n"

    def origin(drafts: list[Draft]) -> str:
        (found,) = [d for d in drafts if d.line == "return x"]
        return found.origin

    assert origin(drafts_for(index, prefix, suffix, filename=str(root / "pkg" / "new.py"))) == os.path.join("pkg", "new.py") + ":8"
    assert (prefix + suffix).split("\n")[8 - 1] == "    return x"
    assert origin(drafts_for(None, prefix, suffix, filename="src/new.py")) == "src/new.py:8"  # no index: the name as given
    assert origin(drafts_for(None, prefix, suffix)) == ""  # a buffer with no name: unknown
    # Another open document: by its path relative to the root, or as given outside it.
    other = "import os\n\n\ndef h(a):\n    x = compute(a)\n    return x\n"
    prefix = "def g(a):\n    x = compute(a)\n    "
    assert origin(WorkspaceContext(index, buffers={str(root / "h.py"): other}).drafts(prefix, "\n", None)) == "h.py:6"
    assert origin(WorkspaceContext(index, buffers={"/elsewhere/h.py": other}).drafts(prefix, "\n", None)) == "/elsewhere/h.py:6"
    # Excerpts (an HTTP client's snippets): their line numbers are not their files'.
    assert origin(WorkspaceContext(buffers={"snippet-0": other}, excerpts=True).drafts(prefix, "\n", "x.py")) == ""


# -- lines near the cursor, and the rank -----------------------------------------------------

def test_a_line_near_the_cursor_is_a_draft_where_no_neighbour_repeats() -> None:
    # The entries of one table: the cursor's neighbours (`gt=[`, `iadd=[`) stand nowhere
    # else, but the entry two lines above has the line, after a line of the same shape.
    prefix = "signatures = dict(\n    abs=[\n        lambda a: None],\n    add=[\n        lambda a, b: None],\n    gt=[\n        "
    suffix = "\n    iadd=[\n        lambda a, b: None],\n)\n"
    drafts = drafts_for(None, prefix, suffix)
    assert drafts[0].line == "lambda a, b: None],"
    best = drafts[0]
    assert best.after_prev == best.before_next == 0 and best.near == 2 and best.distance == 2
    assert best.shape_prev and best.shape_next and best.context_match > 0.5
    assert "add=[" in [d.line for d in drafts]  # the other lines near it are candidates too, ranked lower,
    assert not {"gt=[", "iadd=["} & {d.line for d in drafts}  # but not the cursor's own neighbours again
    assert [d.rank for d in drafts] == sorted((d.rank for d in drafts), reverse=True)


def test_lines_near_the_cursor_must_fit_what_is_typed() -> None:
    prefix = "x = 1\nreturn_value = x\ny = 2\nz = 3\nret"
    drafts = drafts_for(None, prefix, "\n")
    assert [d.line for d in drafts] == ["return_value = x"] and drafts[0].text == "urn_value = x"


def test_a_draft_between_the_same_two_lines_outranks_a_line_near_the_cursor(workspace: Path, tmp_path: Path) -> None:
    index = open_index(workspace, tmp_path)
    index.refresh()
    prefix = "def grand_total(items):\n    result = 0\n    for item in items:\n        "
    drafts = drafts_for(index, prefix, "\n    return result\n", filename=str(workspace / "pkg" / "new.py"))
    assert drafts[0].line == "result += item.price" and drafts[0].both == 1
    assert "result = 0" in {d.line for d in drafts[1:]}  # a line near it, after it


def test_the_number_of_drafts_is_bounded_unless_asked(monkeypatch) -> None:
    import engine.workspace.retrieve as retrieve

    prefix = "".join(f"v{i} = {i}\n" for i in range(30))
    assert len(drafts_for(None, prefix, "\nw = 1\n")) == retrieve.MAX_DRAFTS
    assert len(drafts_for(None, prefix, "\nw = 1\n", limit=1 << 30)) == 29  # every line near the cursor but its neighbours
    monkeypatch.setattr(retrieve, "NEAR_LINES", 3)
    assert {d.line for d in drafts_for(None, prefix, "\nw = 1\n", limit=1 << 30)} == {"v27 = 27", "v28 = 28"}  # of the three above


def test_a_lines_shape_sets_names_strings_and_numbers_aside() -> None:
    from engine.workspace.retrieve import shape

    assert shape("gt=[") == shape("iadd=[") == "a=["
    assert shape("this.patch = 0") == shape("this.minor = 12") == "a.a=0"
    assert shape("const x = require('./x')") == shape('const y = require("../y")') == 'aa=a(")'
    assert shape("lambda a, b: None],") != shape("lambda a: None],")

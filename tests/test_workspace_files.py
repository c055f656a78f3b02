"""What the workspace walk (engine/workspace/files.py) does with a real folder: entries it
cannot look at are skips, not errors; `/` and the home folder are refused before anything is
written; an unchanged tree is not listed again, while a changed, added or deleted file is
still picked up; and a `vendor` folder of the project's own code is walked."""
from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

import engine.workspace.files as files_module
from engine.types import InfillError
from engine.workspace import WorkspaceIndex, WorkspaceRefused
from engine.workspace.files import FolderScan, walk, walk_reaches
from infill_lsp import cli

CODE = "def total(items):\n    return sum(items)\n"
LONG_AGO_NS = time.time_ns() - 3600 * 10**9  # an hour ago: past the walk's "too recent to trust" window


def open_index(root: Path, tmp_path: Path) -> WorkspaceIndex:
    return WorkspaceIndex(root, cache_dir=tmp_path / "cache")


def indexed_paths(index: WorkspaceIndex) -> set[str]:
    return {path for (path,) in index.db.execute("SELECT path FROM files")}


def backdate(root: Path) -> None:
    """Every folder, file and ignore file under `root` as if last changed an hour ago."""
    for folder, names, filenames in os.walk(root):
        for name in filenames:
            os.utime(os.path.join(folder, name), ns=(LONG_AGO_NS, LONG_AGO_NS), follow_symlinks=False)
        os.utime(folder, ns=(LONG_AGO_NS, LONG_AGO_NS))


def touch_folder(folder: Path) -> None:
    """A folder's time set back after a change: the change alone does not move it."""
    os.utime(folder, ns=(LONG_AGO_NS, LONG_AGO_NS))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in ("pkg/a", "pkg/b", "docs", "node_modules/dep"):
        (root / folder).mkdir(parents=True)
    (root / "pkg" / "a" / "one.py").write_text(CODE)
    (root / "pkg" / "a" / "two.js").write_text("function two() {\n  return 2\n}\n")
    (root / "pkg" / "b" / "three.py").write_text("THREE = 3\n")
    (root / "pkg" / "b" / "notes.txt").write_text("not code\n")
    (root / "docs" / "guide.md").write_text("# guide\n")
    (root / "node_modules" / "dep" / "index.js").write_text("DEP = 1\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "run.log").write_text("log\n")
    return root


# -- entries the walk cannot look at -----------------------------------------------------------

def test_a_symlink_loop_or_dead_link_is_a_counted_skip_not_an_error(tree: Path, tmp_path: Path) -> None:
    (tree / "pkg" / "loop").symlink_to("loop")  # stat: "Too many levels of symbolic links"
    (tree / "pkg" / "loop.py").symlink_to("loop.py")
    (tree / "pkg" / "gone.py").symlink_to(tmp_path / "nowhere" / "gone.py")
    index = open_index(tree, tmp_path)
    report = index.refresh()
    assert indexed_paths(index) == {"pkg/a/one.py", "pkg/a/two.js", "pkg/b/three.py"}
    loops = [reason for reason in report.skipped if reason.startswith("unreadable (")]
    assert loops and sum(report.skipped[r] for r in loops) == 2
    assert report.skipped["broken symlink"] == 1


def test_an_entry_that_refuses_a_stat_is_skipped_under_its_reason(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What `ln -s /proc/1/cwd badlink` gives: is_dir / is_symlink / stat raise PermissionError.
    (tree / "pkg" / "badlink").symlink_to(tree / "pkg" / "a")
    (tree / "pkg" / "badfile.py").write_text("BAD = 1\n")
    real_scandir = os.scandir

    class Refusing:
        def __init__(self, entry: os.DirEntry) -> None:
            self.entry, self.name, self.path = entry, entry.name, entry.path

        def _refuse(self, *args: object, **kwargs: object) -> bool:
            raise PermissionError(13, "Permission denied", self.path)

        is_dir = is_symlink = is_file = stat = _refuse

    class Listing:
        def __init__(self, path: object) -> None:
            self.inner = real_scandir(path)

        def __enter__(self) -> "Listing":
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def __iter__(self):
            for entry in self.inner:
                yield Refusing(entry) if entry.name in ("badlink", "badfile.py") else entry

    monkeypatch.setattr(os, "scandir", Listing)
    real_lstat = os.lstat

    def lstat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).endswith("badfile.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    selection = walk(tree)
    assert sorted(p.name for p in selection.kept) == ["one.py", "three.py", "two.js"]
    assert selection.skipped["unreadable (Permission denied)"] == 2
    assert selection.examples["unreadable (Permission denied)"] in ("pkg/badfile.py", "pkg/badlink")


def test_complete_still_gets_its_folder_when_one_link_in_it_is_unreadable(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "pkg" / "a" / "loop").symlink_to("loop")
    monkeypatch.setenv("INFILL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    folder = cli.default_workspace(tree / "pkg" / "a" / "one.py")
    assert folder == (tree / "pkg" / "a").resolve()  # no git root: the file's folder
    context = cli.open_workspace(folder, io.StringIO())
    assert context is not None and indexed_paths(context.index) == {"one.py", "two.js"}


# -- folders too broad to index ----------------------------------------------------------------

def test_the_root_and_the_home_folder_are_refused_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    cache = tmp_path / "cache"
    for folder in (Path("/"), home):
        with pytest.raises(WorkspaceRefused, match="too broad to index"):
            WorkspaceIndex(folder, cache_dir=cache)
        with pytest.raises(InfillError, match="^--workspace: .*too broad to index"):  # every front end: an InfillError
            cli.open_workspace(folder, io.StringIO())
    assert not cache.exists()
    WorkspaceIndex(home / "project", cache_dir=cache).close()  # a folder in it is a workspace


def test_infill_index_of_the_root_is_one_line_exit_2_and_no_cache_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("INFILL_CACHE_DIR", str(cache))
    monkeypatch.setenv("HOME", str(tmp_path))
    for folder in ("/", str(tmp_path)):
        assert cli.main(["index", folder]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "too broad to index" in err and "Traceback" not in err
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    assert cli.main(["complete", str(source), "--line", "1", "--column", "1", "--workspace", "/"]) == 2
    assert "too broad to index" in capsys.readouterr().err
    assert not cache.exists()
    assert cli.main(["index", "/", "--forget"]) == 0  # forgetting opens nothing
    assert "no index" in capsys.readouterr().out and not cache.exists()


def test_a_home_folder_kept_in_git_is_not_the_default_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert cli.default_workspace(home / "project" / "x.py") == (home / "project").resolve()
    assert cli.default_workspace(home / "x.py") is None


# -- refreshing an unchanged tree lists nothing -------------------------------------------------

def test_a_walk_with_the_stored_scans_selects_what_a_fresh_walk_does(tree: Path) -> None:
    backdate(tree)
    first = walk(tree)
    again = walk(tree, known=first.folders)
    assert first.listed == len(first.folders) == 5 and again.listed == 0  # the root, pkg, pkg/a, pkg/b, docs
    assert again.kept == first.kept and [r for r, _ in again.found] == [r for r, _ in first.found]
    assert again.skipped == first.skipped and again.examples == first.examples
    assert first.skipped["dependency, build or tool folder"] == 1 and first.skipped["ignored (.gitignore / .infillignore)"] == 1


def test_an_unchanged_tree_is_not_listed_and_changes_are_still_picked_up(tree: Path, tmp_path: Path) -> None:
    backdate(tree)
    index = open_index(tree, tmp_path)
    first = index.refresh()
    assert first.listed == first.folders == 5 and first.updated == 3
    second = index.refresh()
    assert (second.listed, second.updated, second.removed) == (0, 0, 0)
    assert second.skipped == first.skipped and second.files == first.files
    lines = lambda: {text for (text,) in index.db.execute("SELECT text FROM lines")}  # noqa: E731

    # A file rewritten in place: its folder's time does not move; its own does.
    (tree / "pkg" / "a" / "one.py").write_text(CODE.replace("sum(items)", "total_of(items)"))
    touch_folder(tree / "pkg" / "a")
    report = index.refresh()
    assert report.listed == 0 and report.updated == 1 and "return total_of(items)" in lines()

    # A file added, one deleted, a folder added: only the folders that changed are listed.
    (tree / "pkg" / "b" / "four.py").write_text("FOUR = 4\n")
    (tree / "pkg" / "a" / "two.js").unlink()
    (tree / "pkg" / "c").mkdir()
    (tree / "pkg" / "c" / "five.py").write_text("FIVE = 5\n")
    report = index.refresh()
    assert indexed_paths(index) == {"pkg/a/one.py", "pkg/b/three.py", "pkg/b/four.py", "pkg/c/five.py"}
    assert report.listed == 4 and report.removed == 1  # pkg, pkg/a, pkg/b and the new pkg/c

    # An ignore file edited in place: the folders below it are listed again.
    backdate(tree)
    index.refresh()
    (tree / ".gitignore").write_text("*.log\npkg/b/\n")
    touch_folder(tree)
    report = index.refresh()
    assert "pkg/b/three.py" not in indexed_paths(index) and report.listed == report.folders


def test_a_folder_changed_within_its_clock_tick_is_listed_again(tree: Path, tmp_path: Path) -> None:
    # A file added right after the folder was listed may leave the folder's time as it was
    # (one clock tick): a folder changed that recently is never trusted on the next walk.
    index = open_index(tree, tmp_path)
    index.refresh()
    folder = tree / "pkg" / "b"
    before = folder.stat().st_mtime_ns
    (folder / "late.py").write_text("LATE = 1\n")
    os.utime(folder, ns=(before, before))
    index.refresh()
    assert "pkg/b/late.py" in indexed_paths(index)


def test_scans_stored_under_other_rules_are_not_reused(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backdate(tree)
    index = open_index(tree, tmp_path)
    index.refresh()
    assert index.refresh().listed == 0
    monkeypatch.setattr(files_module, "PACKAGE_MANIFESTS", files_module.PACKAGE_MANIFESTS | {"BUILD"})
    assert index.refresh().listed == 5
    index.db.execute("UPDATE folders SET scan = 'not json'")
    index.db.commit()
    assert index.refresh().listed == 5  # a row that does not parse: listed again, no error


def test_folder_scans_round_trip_through_json() -> None:
    scan = FolderScan(12, ".gitignore:1:2", ["a.py"], ["sub"], {"minified": [1, "x.min.js"]}, {"vendor": 7})
    assert FolderScan.from_json(scan.to_json()) == scan


# -- vendor folders of the project's own code -----------------------------------------------------

@pytest.fixture
def vendored(tmp_path: Path) -> Path:
    root = tmp_path / "package"
    (root / "source" / "vendor" / "parser").mkdir(parents=True)
    (root / "source" / "vendor" / "parser" / "lexer.js").write_text("function lex() {\n  return []\n}\n")
    (root / "source" / "vendor" / "util.js").write_text("exports.id = x => x\n")
    (root / "vendor" / "left-pad").mkdir(parents=True)  # dependencies: a manifest in a subfolder
    (root / "vendor" / "left-pad" / "package.json").write_text("{}\n")
    (root / "vendor" / "left-pad" / "index.js").write_text("module.exports = pad\n")
    (root / "go" / "vendor" / "github.com" / "x").mkdir(parents=True)  # `go mod vendor`
    (root / "go" / "vendor" / "modules.txt").write_text("# github.com/x v1.0.0\n")
    (root / "go" / "vendor" / "github.com" / "x" / "x.go").write_text("package x\n")
    return root


def test_a_vendor_folder_without_a_package_manifest_is_the_projects_own_code(vendored: Path, tmp_path: Path) -> None:
    index = open_index(vendored, tmp_path)
    report = index.refresh()
    assert indexed_paths(index) == {"source/vendor/util.js", "source/vendor/parser/lexer.js"}
    assert report.skipped["dependency, build or tool folder"] == 2  # vendor/, go/vendor/
    assert walk_reaches(vendored, vendored / "source" / "vendor" / "parser" / "lexer.js")
    assert not walk_reaches(vendored, vendored / "vendor" / "left-pad" / "index.js")


def test_a_manifest_added_to_a_vendor_subfolder_makes_it_dependencies(vendored: Path, tmp_path: Path) -> None:
    backdate(vendored)
    index = open_index(vendored, tmp_path)
    index.refresh()
    assert indexed_paths(index) == {"source/vendor/util.js", "source/vendor/parser/lexer.js"}
    # Only parser/'s time moves, not source/'s, whose scan decided about vendor/: its listing is watched.
    (vendored / "source" / "vendor" / "parser" / "setup.py").write_text("setup()\n")
    index.refresh()
    assert indexed_paths(index) == set()


def test_infillignore_takes_back_a_folder_skipped_by_its_name(vendored: Path, tmp_path: Path) -> None:
    (vendored / "build").mkdir()
    (vendored / "build" / "gen.py").write_text("GENERATED_HERE = 1\n")
    (vendored / ".infillignore").write_text("!vendor\n!build/\n")
    index = open_index(vendored, tmp_path)
    index.refresh()
    assert {"vendor/left-pad/index.js", "build/gen.py", "go/vendor/github.com/x/x.go"} <= indexed_paths(index)
    assert walk_reaches(vendored, vendored / "vendor" / "left-pad" / "index.js")
    (vendored / ".infillignore").write_text("!/vendor\n")  # anchored: the top one only
    index.refresh()
    assert "vendor/left-pad/index.js" in indexed_paths(index)
    assert not any(path.startswith(("build/", "go/")) for path in indexed_paths(index))

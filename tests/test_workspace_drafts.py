"""Drafts from the workspace inside the engine (engine/drafts.py, engine/api.py) and on the
batch and CLI surfaces. The accept rule's threshold is pinned per test (always / never
keep) so that these tests check the mechanism, not the fitted weights."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import engine
import engine.drafts as drafts_module
from engine.workspace import WorkspaceContext, WorkspaceIndex

# The line after `x = compute(a)` elsewhere in the buffer is `return x`.
PREFIX = "def f(a):\n    x = compute(a)\n    return x\n\n\ndef g(a):\n    x = compute(a)\n    "
SUFFIX = "\n\n\nprint(g(1))\n"


@pytest.fixture(scope="module")
def eng():
    return engine.load()


def test_a_kept_draft_is_the_middle_of_the_first_pass(eng, monkeypatch) -> None:
    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    result = eng.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext())
    assert result.middle == "return x"
    assert result.draft == "workspace" and result.drafts_verified >= 1
    assert result.forwards == 1  # the context's encoding and the first pass, which judged the drafts
    assert result.stop_reason == "end_of_middle" and result.candidates_tried == 1


def test_a_draft_not_kept_leaves_the_model_to_write(eng, monkeypatch) -> None:
    monkeypatch.setattr(drafts_module, "ACCEPT", 1.1)  # no probability reaches it
    steps = list(eng.stream(PREFIX, SUFFIX, "python", workspace=WorkspaceContext()))
    result = steps[-1].result
    assert result.draft == "" and result.drafts_verified >= 1
    # The sampler went on from the first pass: its canvas was wide enough for the drafts.
    assert len(steps[0].canvas) >= len(eng.tokenizer.encode("    return x")) + 1


def test_a_draft_the_syntax_check_refuses_is_not_shown(eng, monkeypatch) -> None:
    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    prefix = "def f(a):\n    x = compute(a)\n    return (x\n\n\ndef g(a):\n    x = compute(a)\n    "
    result = eng.infill(prefix, SUFFIX, "python", workspace=WorkspaceContext())
    assert result.middle != "return (x" and result.draft == ""
    assert result.candidates_tried >= 2  # the draft, then the model's own candidates
    assert result.replayed >= 1  # which start from the first pass's logits, not a new forward


def test_drafts_can_be_turned_off(eng, monkeypatch) -> None:
    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    result = eng.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext(), workspace_drafts=False)
    assert result.draft == "" and result.drafts_verified == 0


def test_candidates_fit_the_first_canvas(eng) -> None:
    from engine.workspace.retrieve import Draft

    tok = eng.tokenizer
    found = drafts_module.candidates(tok, [Draft("return x", "return x"), Draft("y = 1 " * 40, "y = 1 " * 40)], "    ", block=8, max_tokens=64)
    assert [d.line for d in found.drafts] == ["return x"]  # the long one has no room
    ids = found.tokens[0]
    assert tok.decode(list(ids[:-1])) == "    return x" and ids[-1] == tok.eom_id
    assert found.width == 8 and found.width >= len(ids)
    long_line = Draft("value = compute(alpha, beta, gamma)", "value = compute(alpha, beta, gamma)")
    wide = drafts_module.candidates(tok, [long_line], "", block=8, max_tokens=64)
    assert wide.width % 8 == 0 and wide.width >= len(wide.tokens[0])
    assert drafts_module.candidates(tok, [long_line], "", block=8, max_tokens=4) is None


def _run(args: list[str], stdin: str = "", env_cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {"INFILL_CACHE_DIR": str(env_cache)} if env_cache else {}
    import os

    return subprocess.run([sys.executable, "-m", "infill_lsp.cli", *args], input=stdin, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env, "OMP_NUM_THREADS": "1"})


def test_batch_lines_take_a_workspace_and_a_filename(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def f(a):\n    x = compute(a)\n    return x\n")
    (root / "b.py").write_text("# on disk: replaced by the request's text\n")
    lines = [
        {"id": "ws", "prefix": "def g(a):\n    x = compute(a)\n    ", "suffix": "\n", "workspace": str(root), "filename": str(root / "b.py")},
        {"id": "no-folder", "prefix": "x", "suffix": "", "workspace": str(tmp_path / "missing")},
        {"id": "outside", "prefix": "x", "suffix": "", "workspace": str(root), "filename": "/etc/passwd"},
        {"id": "not-a-path", "prefix": "x", "suffix": "", "workspace": 7},
    ]
    done = _run(["batch"], "".join(json.dumps(line) + "\n" for line in lines), env_cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["id"] for o in out] == ["ws", "no-folder", "outside", "not-a-path"]
    assert out[0]["drafts_verified"] >= 1 and "error" not in out[0]
    assert "is not a folder" in out[1]["error"]
    assert "is not inside the workspace" in out[2]["error"]
    assert "must be a string" in out[3]["error"]
    assert "1 files" in done.stderr or "2 files" in done.stderr  # the index's report, once


def test_infill_index_reports_what_it_holds_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("value = 1\n")
    (root / ".env").write_text("TOKEN=x\n")
    done = _run(["index", str(root), "--json"], env_cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files"] == 1 and report["skipped"] == {"secret (file name)": 1}
    assert Path(report["index"]).exists()
    assert WorkspaceIndex(root, cache_dir=tmp_path / "cache").db_path == Path(report["index"])
    forgotten = _run(["index", str(root), "--forget"], env_cache=tmp_path / "cache")
    assert forgotten.returncode == 0 and not Path(report["index"]).exists()
    missing = _run(["index", str(tmp_path / "nope")], env_cache=tmp_path / "cache")
    assert missing.returncode != 0 and "is not a folder" in missing.stderr


def _writing(eng, text: str, monkeypatch) -> "engine.api.Engine":
    """An engine whose model writes `text` and whose accept rule keeps no draft: what is
    shown from the workspace comes from the draft fallback alone."""
    from engine.api import Engine
    from lab.fixtures.scripted_model import WritesText

    monkeypatch.setattr(drafts_module, "ACCEPT", 1.1)  # no probability reaches it
    return Engine(WritesText(eng.tokenizer, text), eng.tokenizer)


def test_when_the_model_gives_nothing_the_likeliest_valid_draft_is_shown(eng, monkeypatch) -> None:
    scripted = _writing(eng, "    ) ) )", monkeypatch)  # only a syntax error here: every candidate is refused
    alone = scripted.infill(PREFIX, SUFFIX, "python")
    assert alone.middle == "" and alone.stop_reason == "rejected"
    result = scripted.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext())
    assert result.middle == "return x" and result.draft == "workspace" and result.tokens == 2
    assert result.forwards == alone.forwards  # no pass spent on it


def test_a_middle_that_repeats_the_line_above_gives_way_to_the_likeliest_valid_draft(eng, monkeypatch) -> None:
    scripted = _writing(eng, "x = compute(a)", monkeypatch)  # the line above the cursor again: answered empty
    alone = scripted.infill(PREFIX, SUFFIX, "python")
    assert alone.middle == "" and alone.stop_reason == "degenerate"
    result = scripted.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext())
    assert (result.middle, result.draft, result.stop_reason) == ("return x", "workspace", "end_of_middle")
    # A draft that itself repeats the line above is never the one shown.
    only_repeats = "def f(a):\n    x = compute(a)\n    x = compute(a)\n\n\ndef g(a):\n    x = compute(a)\n    "
    repeated = scripted.infill(only_repeats, SUFFIX, "python", workspace=WorkspaceContext())
    assert repeated.middle == "" and repeated.stop_reason == "degenerate"


def test_a_draft_from_an_open_buffer_with_a_lone_surrogate_is_judged_not_a_crash(eng, monkeypatch) -> None:
    """Another open document's text comes from the client as is, and JSON allows "\\udc80":
    a draft taken from it reached the tokenizer, which raised TypeError (the LSP fuzz's
    traceback). Its lone surrogates become U+FFFD, as the request's own text's do."""
    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    other = "def h(a):\n    x = compute(a)\n    return x\udc80\n"
    prefix = "def g(a):\n    x = compute(a)\n    "
    result = eng.infill(prefix, SUFFIX, "python", workspace=WorkspaceContext(buffers={"other.py": other}), constrained=False)
    assert result.drafts_verified >= 1
    assert (result.draft, result.middle) == ("workspace", "return x\ufffd")


def test_the_cli_workspace_is_the_git_root_else_the_folder_never_home(tmp_path: Path, monkeypatch) -> None:
    from infill_lsp.cli import default_workspace

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    assert default_workspace(repo / "pkg" / "a.py") == repo.resolve()
    loose = tmp_path / "loose"
    loose.mkdir()
    assert default_workspace(loose / "b.py") == loose.resolve()
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: loose))
    assert default_workspace(loose / "b.py") is None  # a file straight in the home folder: no workspace


def test_a_kept_draft_says_where_it_stands(eng, monkeypatch) -> None:
    """The result names the draft's place (`draft_origin`: the file's name, the line 1-based)
    and every JSON surface gives it as `source` / `origin`; the model's own middle has none."""
    monkeypatch.setattr(drafts_module, "ACCEPT", 0.0)
    result = eng.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext(), filename="pkg/mod.py")
    assert (result.middle, result.draft, result.draft_origin) == ("return x", "workspace", "pkg/mod.py:3")
    assert PREFIX.split("\n")[3 - 1] == "    return x"
    out = result.to_dict()
    assert (out["source"], out["origin"]) == ("workspace", "pkg/mod.py:3") and "draft_origin" not in out
    alone = eng.infill(PREFIX, SUFFIX, "python", filename="pkg/mod.py")
    assert alone.draft == "" and alone.draft_origin == "" and alone.source == "model"
    assert alone.to_dict()["source"] == "model" and "origin" not in alone.to_dict()


def test_the_draft_shown_when_the_model_gives_nothing_says_where_it_stands(eng, monkeypatch) -> None:
    from engine.api import Engine
    from lab.fixtures.scripted_model import WritesText

    monkeypatch.setattr(drafts_module, "ACCEPT", 1.1)  # no draft is kept by the rule
    scripted = Engine(WritesText(eng.tokenizer, "    ) ) )"), eng.tokenizer)
    result = scripted.infill(PREFIX, SUFFIX, "python", workspace=WorkspaceContext(), filename="mod.py")
    assert (result.middle, result.draft, result.draft_origin, result.source) == ("return x", "workspace", "mod.py:3", "workspace")


def test_the_rank_margin_says_how_far_a_draft_stands_above_the_others() -> None:
    feats = [{"rank": -1.0}, {"rank": -2.5}, {"rank": -9.0}]
    drafts_module.with_margins(feats)
    assert [f["rank_margin"] for f in feats] == [1.5, -1.5, -drafts_module.MARGIN_CLIP]
    alone = [{"rank": -4.0}]
    drafts_module.with_margins(alone)
    assert alone[0]["rank_margin"] == drafts_module.MARGIN_CLIP  # judged alone: nothing stands beside it


def test_the_first_pass_judges_the_best_ranked_drafts(eng) -> None:
    from engine.workspace.retrieve import Draft

    many = [Draft(f"value_{i} = {i}", f"value_{i} = {i}", rank=-float(i)) for i in range(drafts_module.VERIFIED_DRAFTS + 4)]
    found = drafts_module.candidates(eng.tokenizer, many, "", block=8, max_tokens=64)
    assert [d.line for d in found.drafts] == [d.line for d in many[: drafts_module.VERIFIED_DRAFTS]]


def test_a_draft_ranked_past_the_first_few_does_not_widen_the_first_canvas(eng) -> None:
    from engine.workspace.retrieve import Draft

    short = [Draft(f"x{i} = {i}", f"x{i} = {i}") for i in range(drafts_module.WIDTH_DRAFTS)]
    long_line = Draft("value = compute(alpha, beta, gamma, delta)", "value = compute(alpha, beta, gamma, delta)")
    narrow = drafts_module.candidates(eng.tokenizer, [*short, long_line, Draft("y = 2", "y = 2")], "", block=8, max_tokens=64)
    assert long_line not in narrow.drafts and narrow.drafts[-1].line == "y = 2"  # judged: it fits the canvas
    assert narrow.width == 8
    wide = drafts_module.candidates(eng.tokenizer, [long_line, *short], "", block=8, max_tokens=64)
    assert wide.drafts[0] is long_line and wide.width >= len(wide.tokens[0]) > 8
    # A weak draft (rank under WIDEN_RANK) does not widen it either, even ranked first.
    weak = Draft(long_line.text, long_line.line, rank=drafts_module.WIDEN_RANK - 1)
    found = drafts_module.candidates(eng.tokenizer, [weak, *short], "", block=8, max_tokens=64)
    assert weak not in found.drafts and found.width == 8

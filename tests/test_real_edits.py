"""The real-edit benchmark (lab/evaluation/real_edits.py) on tiny version pairs made in
temporary folders: tasks with and without an edit due, the seeded draw, the kinds of
real next edits, the figures, the command. No network: the released versions are laid
out in the cache the benchmark would fetch them into."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from engine.next_edit import HistoryEntry
from lab.evaluation import real_edits
from lab.training.edits import EditTask, real_edit_tasks

FILLER = [f"value_{i} = {i}\n" for i in range(60)]
CALLS = {3: "value_3 = compute(3)\n", 6: "value_6 = compute(6)\n"}


def _release(cache: Path, name: str, version: str, files: dict[str, str]) -> None:
    """One released version as `release_dir` leaves it: CACHE/NAME-VERSION/<top>/..."""
    top = cache / f"{name}-{version}" / f"{name}-{version}"
    for relative, text in files.items():
        (top / relative).parent.mkdir(parents=True, exist_ok=True)
        (top / relative).write_text(text)


def _module(changed: dict[int, str]) -> str:
    lines = list(FILLER)
    for index, line in changed.items():
        lines[index] = line
    return "".join(lines)


@pytest.fixture()
def tiny_pairs(monkeypatch) -> None:
    """The benchmark's toolz pair replaced by the tiny one `_toolz_pair` lays out."""
    monkeypatch.setitem(real_edits.PAIRS, "toolz", (("0.1", "0.2"),))


def _toolz_pair(cache: Path) -> None:
    """toolz 0.1 -> 0.2: one file with hunks at lines 3, 6 and 50 (the third beyond the
    window of the second), one unchanged file, one file outside the package's globs."""
    old = {"toolz/a.py": _module(CALLS), "toolz/same.py": "x = 1\n", "tests/t.py": "a = 1\n"}
    new = {"toolz/a.py": _module({3: "value_3 = compute(3, strict=True)\n", 6: "value_6 = compute(6, strict=True)\n",
                                  50: "value_50 = other(50)\n"}),
           "toolz/same.py": "x = 1\n", "tests/t.py": "a = 2\nb = 3\n"}
    _release(cache, "toolz", "0.1", old)
    _release(cache, "toolz", "0.2", new)


def test_tasks_replay_hunks_in_order_with_and_without_an_edit_due(tmp_path) -> None:
    _toolz_pair(tmp_path)
    tasks = real_edits.package_tasks("toolz", [("0.1", "0.2")], cache=tmp_path)
    assert [t.task.kind for t in tasks] == ["real", "real_no_edit", "real_no_edit"]
    due, far, last = (t.task for t in tasks)
    assert due.source == "toolz/a.py" and len(due.history) == 1 and due.history[0].after == due.current
    assert due.current.split("\n")[3].endswith("strict=True)") and due.target.split("\n")[6].endswith("strict=True)")
    assert due.current.count("\n", 0, due.cursor) == 4  # the cursor where the applied hunk ends
    assert not far.expects_edit and len(far.history) == 2  # the next hunk (line 50) is outside the window
    assert not last.expects_edit and last.current == last.final  # nothing left after the file's last hunk
    assert all(t.task.final == _module({3: "value_3 = compute(3, strict=True)\n", 6: "value_6 = compute(6, strict=True)\n", 50: "value_50 = other(50)\n"}) for t in tasks)
    # Without no_edit, only the tasks with an edit due (what training draws from).
    old, new = real_edits.release_dir("toolz", "0.1", tmp_path), real_edits.release_dir("toolz", "0.2", tmp_path)
    assert [t.kind for t in real_edit_tasks(old, new)] == ["real"]


def test_draw_is_seeded_and_balances_the_two_halves() -> None:
    def task(due: bool) -> real_edits.RealTask:
        return real_edits.RealTask("toolz", "0.1..0.2", EditTask("real", "python", [], "a", "b" if due else "a", 0))

    pool = [task(i % 3 == 0) for i in range(60)]  # 20 with an edit due, 40 without
    drawn = real_edits.draw(pool, 10, random.Random("s"))
    assert sum(t.task.expects_edit for t in drawn) == 5 and len(drawn) == 10
    assert drawn == real_edits.draw(pool, 10, random.Random("s"))
    where = [next(i for i, p in enumerate(pool) if p is t) for t in drawn]
    assert where == sorted(where)  # in their original order
    few = real_edits.draw(pool[:4], 10, random.Random("s"))  # fewer than asked: all of them
    assert len(few) == 4


def _classify(history: list[tuple[str, str]], current: str, target: str) -> tuple[str, str]:
    return real_edits.classify(EditTask("real", "python", [HistoryEntry(b, a) for b, a in history], current, target, 0))


def test_the_kinds_of_real_next_edits() -> None:
    base = "def f(a: Optional[int]):\n    pass\n\n\ndef g(b: Optional[str]):\n    pass\n\n\ndef h():\n    pass\n"
    v1 = base.replace("Optional[int]", "int | None")
    assert _classify([(base, v1)], v1, v1.replace("Optional[str]", "str | None")) == ("repeat", "rewrite")
    renamed = v1.replace("def g(b", "def g(c")
    assert _classify([(v1, renamed)], renamed, renamed.replace("def h()", "def h(c)")) == ("new_change", "")
    decorated = v1.replace("def f", "@cache\ndef f")
    assert _classify([(v1, decorated)], decorated, decorated.replace("def g", "@cache\ndef g")) == ("repeat", "inserted_line")
    assert _classify([(v1, decorated)], decorated, decorated.replace("def h():\n    pass\n", "")) == ("deletion", "")
    assert _classify([(v1, decorated)], decorated, decorated + "x = 1\n") == ("new_line", "")
    assert _classify([(base, v1)], v1, v1) == ("none", "")
    uses = "def g(b):\n    return b\n"
    first = uses.replace("g(b)", "g(c)")
    assert _classify([(uses, first)], first, first.replace("return b", "return c")) == ("repeat", "rename")
    assert real_edits.signature("Optional[int]", "int | None") == real_edits.signature("Optional[str]", "str | None")


def test_right_with_later_hunks_and_the_strict_measure() -> None:
    current = "a = f(x)\nb = f(y)\nc = f(z)\nd = 1\n"
    target = current.replace("b = f(y)", "b = g(y)")
    final = current.replace("f(", "g(").replace("d = 1", "d = 2")
    task = EditTask("real", "python", [], current, target, 0, final=final)
    assert real_edits.right_ahead(task, current.replace("b = f", "b = g").replace("c = f", "c = g"))  # the next hunk and a later one
    assert not real_edits.right_ahead(task, current.replace("c = f", "c = g"))  # a later hunk, not the next
    assert not real_edits.right_ahead(task, target.replace("d = 1", "d = 3"))  # something the release never does
    assert not real_edits.right_ahead(task, current)


def test_run_scores_answers_and_summarizes(tiny_pairs, tmp_path) -> None:
    _toolz_pair(tmp_path)
    tasks = real_edits.build(["toolz"], n=10, cache=tmp_path)
    rows = real_edits.run(None, tasks, mode="replay")
    report = real_edits.summarize(rows)
    overall = report["overall"]
    assert overall["tasks"] == 3 and overall["edit_due"] == 1 and overall["no_edit_due"] == 2
    # The added keyword argument repeats at the next call: exactly the next hunk.
    assert overall["exact"] == 1 and overall["exact_pct"] == 100.0 and overall["right_with_later"] == 1
    assert overall["false_edits"] == 0 and overall["breaks_parse"] == 0
    assert report["by_package"]["toolz"]["tasks"] == 3 and report["latency_ms"]["p50"] >= 0
    assert report["by_kind"]["repeat"] == {"tasks": 1, "exact": 1, "right_with_later": 1}
    assert report["by_rule"]["added_argument"]["exact"] == 1


def test_a_proposal_that_breaks_the_code_is_counted(tiny_pairs, tmp_path, monkeypatch) -> None:
    from engine.next_edit import suggest

    _toolz_pair(tmp_path)
    tasks = real_edits.build(["toolz"], n=10, cache=tmp_path)
    real = suggest.next_edit

    def breaking(eng, document, cursor, history, language=None, **limits):
        result = real(eng, document, cursor, history, language=language, **limits)
        result.edits = [suggest.SuggestedEdit(0, 0, "(((", 1.0, "test")]  # what a broken rule would answer
        return result

    monkeypatch.setattr(real_edits, "next_edit", breaking)
    rows = real_edits.run(None, tasks, mode="replay")
    assert sum(r["breaks"] for r in rows) == 3 and real_edits.figures(rows)["false_edits"] == 2


def test_the_command_prints_the_report_and_dumps_each_task(tiny_pairs, tmp_path, capsys) -> None:
    _toolz_pair(tmp_path)
    dump = tmp_path / "dump.jsonl"
    assert real_edits.main(["--set", "tune", "--package", "toolz", "--modes", "replay", "--json", "--cache", str(tmp_path), "--dump", str(dump)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["replay"]["overall"]["tasks"] == 3 and report["history"] == "lines"
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(lines) == 3 and lines[0]["kind"] == "repeat" and lines[0]["answers"]["replay"]["exact"]


def test_both_history_forms_score_the_same(tiny_pairs, tmp_path) -> None:
    _toolz_pair(tmp_path)
    tasks = real_edits.build(["toolz"], n=10, cache=tmp_path)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "ms"} for r in rows]  # noqa: E731
    assert strip(real_edits.run(None, tasks, history="lines", mode="replay")) == strip(real_edits.run(None, tasks, history="documents", mode="replay"))


def test_pinned_pairs_are_consecutive_releases_of_the_reserved_packages() -> None:
    from lab.workspace.lines import ASIDE, CHECK, TUNE

    assert set(real_edits.PAIRS) == set(TUNE) | set(ASIDE) | set(CHECK)
    assert not set(TUNE) & set(ASIDE) and not (set(TUNE) | set(ASIDE)) & set(CHECK)
    for name, pairs in real_edits.PAIRS.items():
        assert pairs and all(old != new for old, new in pairs), name
        assert real_edits.project_name(name) in PACKAGE_NAMES[name]


PACKAGE_NAMES = {"toolz": "toolz", "marshmallow": "marshmallow", "semver": "semver", "knex": "knex", "boltons": "boltons",
                 "more-itertools": "more-itertools", "qs": "qs", "ws": "ws", "humanize": "humanize", "tomlkit": "tomlkit",
                 "body-parser": "body-parser", "debug": "debug"}


def test_benchmark_packages_are_not_in_the_training_corpus() -> None:
    import tomllib
    from pathlib import Path

    from lab.workspace.lines import PACKAGES

    sources = tomllib.loads((Path(__file__).parents[1] / "lab/training/corpus_sources.toml").read_text())
    corpus = {entry["name"] for kind in ("pypi", "npm") for entry in sources.get(kind, [])}
    assert corpus and not {real_edits.project_name(name) for name in PACKAGES} & corpus

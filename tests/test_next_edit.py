"""Next-edit: the engine API, the replay rules, the training layout, the batch contract,
the evaluation figures and the LSP edit history. Tiny random model; seconds in all."""
from __future__ import annotations

import io
import json
import random

import pytest

from engine.next_edit import NextEditLimits, apply_edits, history_ids, next_edit, offset_of, position_of
from engine.next_edit.replay import changed_region, pattern_of
from engine.types import InfillError

RENAME_BEFORE = "def total(items):\n    count = 0\n    for x in items:\n        count += x\n    return count\n"
RENAME_AFTER = RENAME_BEFORE.replace("count = 0", "acc = 0", 1)


def test_rename_replays_on_the_other_occurrences() -> None:
    result = next_edit(None, RENAME_AFTER, (1, 7), [(RENAME_BEFORE, RENAME_AFTER)], mode="replay")
    assert [e.kind for e in result.edits] == ["rename", "rename"]
    assert result.apply(RENAME_AFTER) == RENAME_BEFORE.replace("count", "acc")


def test_history_as_changed_region_or_dicts_gives_the_same_answer() -> None:
    whole = next_edit(None, RENAME_AFTER, (1, 7), [(RENAME_BEFORE, RENAME_AFTER)], mode="replay")
    region = next_edit(None, RENAME_AFTER, (1, 7), [{"before": "    count = 0", "after": "    acc = 0"}], mode="replay")
    assert [e.to_dict() for e in whole.edits] == [e.to_dict() for e in region.edits]


def test_no_history_and_finished_renames_give_no_edit() -> None:
    assert next_edit(None, RENAME_AFTER, 0, [], mode="replay").edits == []
    done = RENAME_BEFORE.replace("count", "acc")
    assert next_edit(None, done, 0, [(RENAME_BEFORE, done)], mode="replay").edits == []


def test_switching_to_an_existing_name_is_not_a_rename() -> None:
    before = "a = 1\nb = 2\nprint(a)\nprint(a + b)\n"
    after = before.replace("print(a)", "print(b)")
    result = next_edit(None, after, 0, [(before, after)], mode="replay")
    assert result.edits == [] and result.scored and all(e.kind == "rename_existing" and e.confidence < 0.5 for e in result.scored)


def test_attributes_strings_and_comments_do_not_follow_a_variable_rename() -> None:
    before = "count = 0\nself.count = count\ns = 'count'  # count\nprint(count)\n"
    after = before.replace("count = 0", "total = 0", 1)
    out = next_edit(None, after, 0, [(before, after)], mode="replay").apply(after)
    assert out == "total = 0\nself.count = total\ns = 'count'  # count\nprint(total)\n"


def test_added_argument_follows_the_latest_edited_call() -> None:
    v0 = "def f(a, b):\n    pass\nf(1, 2)\nf(3, 4)\nf()\n"
    v1 = v0.replace("def f(a, b)", "def f(a, b, c=None)")
    v2 = v1.replace("f(1, 2)", "f(1, 2, c=5)")
    out = next_edit(None, v2, (2, 0), [(v0, v1), (v1, v2)], mode="replay").apply(v2)
    assert out == "def f(a, b, c=None):\n    pass\nf(1, 2, c=5)\nf(3, 4, c=5)\nf(c=5)\n"


def test_changed_region_widens_to_whole_identifiers() -> None:
    region = changed_region("x = items\n", "x = item_list\n")
    assert (region.old, region.new) == ("items", "item_list")
    assert pattern_of(changed_region("n = 30\n", "n = 60\n")) is None  # a literal is not replayed


def test_positions_count_code_points_and_bad_input_is_an_infill_error() -> None:
    text = "é😀 x\nsecond\n"
    assert offset_of(text, 0, 3) == 3 and position_of(text, 3) == (0, 3)
    assert offset_of(text, 1, 99) == len("é😀 x\nsecond")
    for cursor in [(5, 0), (-1, 0), {"line": "0"}, True, 999]:
        with pytest.raises(InfillError):
            next_edit(None, text, cursor, [], mode="replay")
    with pytest.raises(InfillError, match="unknown setting .bogus"):
        next_edit(None, text, 0, [], bogus=1)
    with pytest.raises(InfillError, match="history"):
        next_edit(None, text, 0, ["not a pair"], mode="replay")
    with pytest.raises(InfillError, match="min_confidence"):
        NextEditLimits().replace(min_confidence=2)


def test_apply_edits_is_order_independent() -> None:
    from engine.next_edit import SuggestedEdit

    edits = [SuggestedEdit(4, 5, "BB", 1, "x"), SuggestedEdit(0, 1, "A", 1, "x")]
    assert apply_edits("a = b", edits) == apply_edits("a = b", edits[::-1]) == "A = BB"


def test_history_prompt_layout(tiny_engine) -> None:
    tok = tiny_engine.tokenizer
    ids = history_ids(tok, [("x = 1\n", "y = 1\n"), ("a\n", "b\n")], budget=200)
    marks = {tok.hf.token_to_id(t): t for t in ("<edit>", "<old>", "<new>", "<sep>")}
    sequence = [marks[i] for i in ids if i in marks]
    assert sequence == ["<edit>", "<old>", "<new>", "<edit>", "<old>", "<new>", "<sep>"]
    assert len(history_ids(tok, [("x" * 400, "y" * 400)] * 5, budget=40)) <= 40


def test_model_modes_run_through_the_real_model(tiny_engine) -> None:
    scored = next_edit(tiny_engine, RENAME_AFTER, (1, 7), [(RENAME_BEFORE, RENAME_AFTER)], model_weight=1.0, min_confidence=0.0)
    assert scored.forwards >= 2 and len(scored.edits) == 2
    assert all(0.0 < e.confidence < 1.0 for e in scored.edits)
    window = next_edit(tiny_engine, RENAME_AFTER, (1, 7), [(RENAME_BEFORE, RENAME_AFTER)], mode="model")
    assert window.forwards == 2  # one context encoding, one canvas pass
    assert all(window.window[0] <= e.start <= e.end <= window.window[1] for e in window.edits)


def test_a_cancelled_request_skips_the_model(tiny_engine) -> None:
    import threading

    cancel = threading.Event()
    cancel.set()
    result = next_edit(tiny_engine, RENAME_AFTER, 0, [(RENAME_BEFORE, RENAME_AFTER)], cancel=cancel, model_weight=1.0)
    assert result.forwards == 0


# ----------------------------------------------------------------- training recipe
def test_edit_examples_use_the_training_layout(tiny_engine) -> None:
    from lab.training.data import DataConfig, collate
    from lab.training.edits import example_from_task, make_edit_task

    tok, cfg = tiny_engine.tokenizer, DataConfig()
    text = "def add(a, b):\n    total = a + b\n    print(total)\n    return total\n\nadd(1, 2)\n"
    task = make_edit_task(text, random.Random(3), "rename")
    assert task is not None and task.expects_edit and len(task.history) in (1, 2)
    examples = [example_from_task(task, tok, cfg, random.Random(seed)) for seed in range(6)]
    for ex in examples:
        assert ex.prefix[0] == tok.bos_id and tok.hf.token_to_id("<sep>") in ex.prefix
        assert len(ex.canvas) % cfg.block_size == 0 and ex.canvas[-1] == tok.eom_id
        middle = tok.decode([t for t in ex.canvas if t != tok.eom_id])
        assert middle and middle in task.target  # the canvas holds text after the next edit
    batch = collate(examples, tok, cfg, random.Random(0))
    hidden = tiny_engine.model(batch.ids, batch.positions, batch.segments)
    assert hidden.shape[:2] == batch.ids.shape


def test_every_synthetic_kind_is_made_and_no_edit_kinds_change_nothing() -> None:
    from lab.training.edits import EDIT_KINDS, NO_EDIT_KINDS, make_edit_task

    text = (
        "def load(path, mode):\n    data = read(path)\n    if data == None:\n        return None\n"
        "    items = parse(data)\n    if items == None:\n        return None\n    extra = parse(items)\n"
        "    if extra == None:\n        return None\n    return items\n"
    )
    for kind in EDIT_KINDS + NO_EDIT_KINDS:
        task = next(t for t in (make_edit_task(text, random.Random(s), kind) for s in range(20)) if t is not None)
        assert task.expects_edit == (kind in EDIT_KINDS), kind
        if kind != "no_history":
            assert task.history and task.history[-1].after == task.current


def test_real_edit_tasks_replay_diffs_between_versions(tmp_path) -> None:
    from lab.training.edits import real_edit_tasks

    old, new = tmp_path / "v1", tmp_path / "v2"
    (old / "pkg").mkdir(parents=True)
    (new / "pkg").mkdir(parents=True)
    lines = [f"x{i} = {i}\n" for i in range(30)]
    (old / "pkg" / "m.py").write_text("".join(lines))
    changed = list(lines)
    changed[3], changed[8] = "x3 = 33\n", "x8 = 88\n"
    (new / "pkg" / "m.py").write_text("".join(changed))
    (old / "pkg" / "same.py").write_text("a = 1\n")
    (new / "pkg" / "same.py").write_text("a = 1\n")
    tasks = list(real_edit_tasks(old, new))
    assert len(tasks) == 1
    assert tasks[0].current.splitlines()[3] == "x3 = 33" and tasks[0].target == "".join(changed)


# -------------------------------------------------------------------- evaluation
def test_evaluation_builds_held_out_tasks_and_scores_them() -> None:
    from lab.evaluation.next_edit import build_tasks, run_tasks

    tasks = build_tasks(2)
    kinds = {t.kind for t in tasks}
    assert {"rename", "completed_rename", "no_history"} <= kinds
    assert {t.language for t in tasks} == {"python", "javascript"}
    report = run_tasks(None, tasks, mode="replay")
    assert report["overall"]["tasks"] == len(tasks)
    assert report["by_kind"]["no_history"]["false_edit_rate"] == 0.0
    assert report["latency_ms"]["p50"] >= 0


def test_summary_figures() -> None:
    from lab.evaluation.next_edit import summarize

    rows = [
        {"kind": "rename", "language": "python", "expects_edit": True, "edited": True, "exact": True, "ms": 1.0},
        {"kind": "rename", "language": "python", "expects_edit": True, "edited": False, "exact": False, "ms": 3.0},
        {"kind": "no_history", "language": "python", "expects_edit": False, "edited": True, "exact": False, "ms": 2.0},
        {"kind": "no_history", "language": "python", "expects_edit": False, "edited": False, "exact": True, "ms": 2.0},
    ]
    report = summarize(rows)
    assert report["by_kind"]["rename"] == {"tasks": 2, "exact_match": 50.0, "answered_no_edit": 50.0}
    assert report["by_kind"]["no_history"]["false_edit_rate"] == 50.0
    assert report["latency_ms"]["p50"] == 2.0


# ------------------------------------------------------------------------ batch
def test_batch_contract_keeps_order_and_reports_errors(tiny_engine) -> None:
    from infill_lsp.next_edit_batch import run

    lines = [
        {"id": "ok", "language": "python", "text": RENAME_AFTER, "cursor": {"line": 1, "character": 7}, "history": [{"before": RENAME_BEFORE, "after": RENAME_AFTER}], "limits": {"mode": "replay"}},
        "not json",
        {"id": "bad-cursor", "text": "x", "cursor": {"line": 3, "character": 0}},
        {"id": "bad-limit", "text": "x", "cursor": {"line": 0, "character": 0}, "limits": {"lines_before": "ten"}},
        {"id": "emoji", "text": "😀 count = 1\nprint(count)\n", "cursor": {"line": 0, "character": 3}, "history": [{"before": "😀 n = 1", "after": "😀 count = 1"}], "limits": {"mode": "replay"}},
    ]
    stdin = io.StringIO("\n".join(l if isinstance(l, str) else json.dumps(l) for l in lines) + "\n")
    stdout = io.StringIO()
    assert run(stdin, stdout, tiny_engine) == 0
    out = [json.loads(l) for l in stdout.getvalue().splitlines()]
    assert [o["id"] for o in out] == ["ok", None, "bad-cursor", "bad-limit", "emoji"]
    assert len(out[0]["edits"]) == 2 and out[0]["edits"][0]["start"] == {"line": 3, "character": 8}
    assert out[0]["edits"][0]["end"] == {"line": 3, "character": 13} and out[0]["edits"][0]["text"] == "acc"
    assert "error" in out[1] and "error" in out[2] and "error" in out[3]
    assert out[4]["edits"] == []  # a rename of "n" with no "n" left to rename


# ------------------------------------------------------------- LSP edit history
def test_edit_history_coalesces_typing_and_splits_distant_edits() -> None:
    from infill_lsp.edit_history import EditHistory

    history = EditHistory()
    text = "count = 0\nx = 1\ny = 2\nprint(count)\n"
    history.opened("u", text)
    # Typing "total" over "count", one keystroke at a time.
    steps = ["", "t", "to", "tot", "tota", "total"]
    previous = text
    for typed in steps:
        now = typed + text[len("count"):]
        history.record("u", previous, now)
        previous = now
    assert history.entries("u") == [{"before": "count = 0", "after": "total = 0"}]
    later = previous.replace("y = 2", "y = 3")
    history.record("u", previous, later)
    assert history.entries("u") == [{"before": "count = 0", "after": "total = 0"}, {"before": "y = 2", "after": "y = 3"}]
    history.closed("u")
    assert history.entries("u") == []


# ------------------------------------------------------------- real-edit rules
def test_an_edit_that_breaks_parsing_code_is_dropped() -> None:
    # `*, ` added to a definition is a keyword-only marker; at a call it is a syntax error.
    v0 = "def f(a, b):\n    return a\n\n\nh = f(a, 2)\n"
    v1 = v0.replace("def f(a, b)", "def f(*, a, b)")
    result = next_edit(None, v1, (0, 8), [(v0, v1)], language="python", mode="replay")
    assert [e.text for e in result.scored] == ["*, "] and result.scored[0].confidence >= 0.5
    assert result.edits == [] and result.unparseable == 1
    # Where the code is broken already (mid-edit), nothing tells the edit's error from it: not judged.
    broken = v1 + "x = (\n"
    kept = next_edit(None, broken, (0, 8), [(v0 + "x = (\n", broken)], language="python", mode="replay", lines_after=30)
    assert [e.text for e in kept.edits] == ["*, "] and kept.unparseable == 0


def test_parse_check_judges_the_window_when_the_document_is_broken_elsewhere() -> None:
    from engine.next_edit import SuggestedEdit
    from engine.next_edit.parse_check import Syntax, breaks_parse

    text = "a = [1, 2]\nb = 3\n" + "\n" * 40 + "c = (\n"
    window = (0, 20)
    syntax = Syntax("python", text, window)
    assert syntax.scope == "window"
    good, bad = SuggestedEdit(5, 6, "7", 0.9, "x"), SuggestedEdit(9, 10, "", 0.8, "x")  # `]` deleted: the list never closes
    assert syntax.keep([good, bad]) == ([good], 1)
    assert breaks_parse("python", text, window, [bad]) and not breaks_parse("python", text, window, [good])
    assert not breaks_parse("no-such-language", text, window, [bad])  # no grammar: not judged


def test_whole_documents_and_changed_lines_give_the_same_proposals() -> None:
    # A plain insertion: the character diff of the whole documents starts inside `return`
    # (the inserted line begins with "re"), which once made it a substitution of `return`.
    v0 = "def f(x):\n    return x\n\n\ndef g(y):\n    return y\n"
    v1 = v0.replace("def f(x):\n", "def f(x):\n    result = x\n", 1)
    whole = next_edit(None, v1, (1, 0), [(v0, v1)], language="python", mode="replay")
    lines = next_edit(None, v1, (1, 0), [("", "    result = x")], language="python", mode="replay")
    assert [e.to_dict() for e in whole.scored] == [e.to_dict() for e in lines.scored]
    assert whole.edits == [] and {e.kind for e in whole.scored} == {"inserted_line"}  # below the cut: seen once
    # A name the document had already: its whole text and its changed line agree it is no rename.
    m0 = "from typing import Mapping\n\n\ndef f(d):\n    if isinstance(d, dict):\n        return dict(d)\n    return isinstance(d, dict)\n"
    m1 = m0.replace("isinstance(d, dict):", "isinstance(d, Mapping):", 1)
    whole = next_edit(None, m1, (4, 0), [(m0, m1)], language="python", mode="replay")
    lines = next_edit(None, m1, (4, 0), [{"before": "    if isinstance(d, dict):", "after": "    if isinstance(d, Mapping):"}], language="python", mode="replay")
    assert [e.to_dict() for e in whole.scored] == [e.to_dict() for e in lines.scored]
    assert whole.edits == [] and {e.kind for e in whole.scored} == {"rename_existing"}


def test_an_inserted_decorator_goes_above_the_sibling_functions() -> None:
    v0 = "class A:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n\n    x = [\n        1,\n    ]\n"
    v1 = v0.replace("    def a(self)", "    @cached\n    def a(self)")
    out = next_edit(None, v1, (1, 4), [(v0, v1)], language="python", mode="replay").apply(v1)
    assert out == v1.replace("    def b(self)", "    @cached\n    def b(self)")
    # A plain inserted line (a new list item) is no pattern until a second entry repeats it.
    l0 = "items = [\n    'a',\n    'b',\n    'c',\n]\n"
    l1 = l0.replace("    'a',\n", "    'a',\n    'z',\n")
    once = next_edit(None, l1, (2, 0), [(l0, l1)], language="python", mode="replay")
    assert once.edits == [] and once.scored and all(e.confidence < 0.5 for e in once.scored)


def test_annotation_rewrites_follow_with_the_captured_type() -> None:
    v0 = "def f(a: Optional[int], b: Optional[dict[str, int]] = None) -> Optional[str]:\n    x: Optional[int] = None\n"
    v1 = v0.replace("a: Optional[int]", "a: int | None", 1)
    result = next_edit(None, v1, (0, 5), [(v0, v1)], language="python", mode="replay")
    assert {e.kind for e in result.edits} == {"rewrite"}
    assert result.apply(v1) == "def f(a: int | None, b: dict[str, int] | None = None) -> str | None:\n    x: int | None = None\n"


def test_tokens_added_or_deleted_follow_where_the_same_tokens_surround_them() -> None:
    v0 = "async function f() {\n  const a = fetch(x);\n  const b = fetch(y);\n  return fetch(z);\n}\n"
    v1 = v0.replace("const a = fetch", "const a = await fetch")
    out = next_edit(None, v1, (1, 0), [(v0, v1)], language="javascript", mode="replay").apply(v1)
    assert out == v1.replace("const b = fetch", "const b = await fetch")  # not after `return`: another token
    d0 = "async def f():\n    a = await load(x)\n    b = await load(y)\n    return await save(a, b)\n"
    d1 = d0.replace("a = await load", "a = load")
    out = next_edit(None, d1, (1, 0), [(d0, d1)], language="python", mode="replay").apply(d1)
    assert out == d1.replace("b = await load", "b = load")


def test_a_name_replaced_by_an_expression_follows_only_as_a_receiver_or_callee() -> None:
    v0 = "x = utils.make(a)\ny = utils.make(b)\nz = utils\n"
    v1 = v0.replace("x = utils.make", "x = self.helpers.make")
    out = next_edit(None, v1, (0, 0), [(v0, v1)], language="python", mode="replay").apply(v1)
    assert out == v1.replace("y = utils.make", "y = self.helpers.make")  # `z = utils` is no member use
    b0 = "log(`${range}`)\nuse(range)\n"
    b1 = b0.replace("${range}", "${this.raw}")
    assert next_edit(None, b1, (0, 0), [(b0, b1)], language="javascript", mode="replay").edits == []


def test_edits_in_docstrings_are_not_replayed_and_none_land_there() -> None:
    # A docstring's inner lines hold no quote: only the grammar tells they are prose.
    v0 = 'def f(data):\n    """\n    Load data from\n    the data store.\n    """\n    return data\n'
    v1 = v0.replace("def f(data)", "def f(obj)")
    out = next_edit(None, v1, (0, 6), [(v0, v1)], language="python", mode="replay").apply(v1)
    assert out == v1.replace("return data", "return obj")  # the prose keeps its words
    p0 = 'def g(x):\n    """\n    Keep the\n    words the same.\n    """\n    return x\n'
    p1 = p0.replace("    Keep the\n", "    Keep these\n")
    assert next_edit(None, p1, (2, 0), [(p0, p1)], language="python", mode="replay").scored == []


def test_synthetic_tasks_judged_by_the_grammar_never_rename_prose() -> None:
    from lab.evaluation.next_edit import grammar_text
    from lab.training.edits import make_edit_task

    text = 'def load(path):\n    """\n    path path path\n    """\n    data = read(path)\n    return data + data\n'
    for seed in range(8):
        task = make_edit_task(text, random.Random(seed), "rename", "python", grammar_text(text, "python"))
        assert task is not None
        inner = task.target.split("\n")[2]
        assert inner == "    path path path"  # the docstring's words stay

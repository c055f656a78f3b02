"""Right characters per second per user on real lines with the workspace
(lab/concurrency/real_lines_speed.py): the left-to-right baseline verifies the workspace's
drafts as one tree in its first pass (lab/baseline/autoregressive.py), the metric counts
right characters, and the sweep runs end to end on a package the test writes (no registry)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.workspace.retrieve import Draft
from lab.baseline.autoregressive import DecodeBatch, DraftTree, GreedyDecode, greedy_tokens, keep_path, line_drafts, prefill_stream, prefill_tree
from lab.concurrency import real_lines_speed
from lab.concurrency.items import Item
from lab.concurrency.servers import Autoregressive, Finished, WORKSPACE_DRAFTED
from lab.concurrency.sweep import Record, run_level
from tests.test_model_batched import _ids, _model, _Tok
from tests.test_model_batched import naive_greedy as _naive_greedy
from tests.test_real_lines import fake_package  # noqa: F401  (the fixture)


def _decode(model, tok, prefix, max_tokens, first_drafts=(), lines=0):
    state = GreedyDecode.prefill(model, tok, prefix, "", max_tokens, lines=lines, first_drafts=first_drafts)
    batch = DecodeBatch(model)
    batch.join(state)
    while batch.active:
        batch.step()
    return state


def test_draft_tree_merges_drafts_that_start_alike_and_masks_each_branch():
    tree = DraftTree.of([[5, 6, 7], [5, 6, 8], [9]])
    assert tree.tokens == (5, 6, 7, 8, 9) and tree.parents == (-1, 0, 1, 1, -1) and tree.depths == (0, 1, 2, 2, 0)
    mask = tree.mask(2)
    assert mask.shape == (5, 7) and bool(mask[:, :2].all())  # every node sees the prefix
    assert mask[3, 2:].tolist() == [True, True, False, True, False]  # 8 sees 5, 6 and itself, not its sibling 7
    # the path the greedy predictions follow: after the prefix 5, after 5 then 6, after 6 then 8
    assert tree.follow([5, 6, 8, 0, 0, 0]) == [0, 1, 3]
    assert tree.follow([9, 0, 0, 0, 0, 4]) == [4] and tree.follow([4, 0, 0, 0, 0, 0]) == []


def test_tree_prefill_rows_equal_each_drafts_own_causal_pass():
    model = _model(5)
    prefix = _ids(20, 5)
    drafts = [_ids(6, 1), _ids(6, 1)[:3] + _ids(4, 2), _ids(5, 3)]
    tree = DraftTree.of(drafts)
    _, logits = prefill_tree(model, prefix, tree)
    children = tree.children()
    for draft in drafts:
        _, chain = prefill_stream(model, prefix, draft=draft)
        node, rows = -1, [0]
        for token in draft:
            node = children[(node, token)]
            rows.append(1 + node)
        torch.testing.assert_close(logits[rows], chain, atol=1e-4, rtol=1e-4)


def test_a_draft_equal_to_the_line_is_kept_in_fewer_passes_and_the_text_is_the_greedy_decodes():
    model, tok = _model(6), _Tok()
    prefix = _ids(25, 6)
    line = _naive_greedy(model, prefix, 10, tok.special_ids)  # the line the greedy decode writes
    plain = _decode(model, tok, prefix, 10)
    drafted = _decode(model, tok, prefix, 10, first_drafts=[_ids(10, 99), line, line[:4] + _ids(6, 98)])
    assert drafted.result.middle == plain.result.middle == tok.decode(line)
    assert plain.result.forwards == 10 and drafted.result.forwards == 1  # the whole line in the prefill
    assert drafted.accepted == 9  # nine drafted tokens kept, the tenth is the pass's own
    wrong = _decode(model, tok, prefix, 10, first_drafts=[_ids(10, 99)])
    assert wrong.result.middle == plain.result.middle and wrong.result.forwards >= 9


def test_keep_path_leaves_a_stream_that_decodes_on_as_the_greedy_decode():
    model, tok = _model(7), _Tok()
    prefix = _ids(18, 7)
    line = _naive_greedy(model, prefix, 14, tok.special_ids)
    tree = DraftTree.of([line[:5] + _ids(3, 1), _ids(4, 2)])  # right for 5 tokens, then wrong
    stream, logits = prefill_tree(model, prefix, tree, room=20)
    path = tree.follow(greedy_tokens(logits, tok))
    assert len(path) == 5
    keep_path(stream, len(prefix), path)
    assert stream.length == len(prefix) + 5
    drafted = _decode(model, tok, prefix, 14, first_drafts=[line[:5] + _ids(3, 1), _ids(4, 2)])
    assert drafted.result.middle == tok.decode(line) and drafted.result.forwards == 14 - 5


def test_line_drafts_heal_and_end_with_the_newline():
    tok = _Tok()
    drafts = [Draft("bc", "bc"), Draft("x" * 40, "x" * 40), Draft("de", "de")]
    assert line_drafts(tok, drafts, removed="a") == [tok.encode("abc\n"), tok.encode("ade\n")]  # the long one left out
    assert line_drafts(tok, drafts, max_drafts=1) == [tok.encode("bc\n")]


def test_the_metric_counts_right_lines_and_acceptable_prefixes():
    assert real_lines_speed.right_chars("return x\n    more", "return x") == 8
    assert real_lines_speed.right_chars("  return x  ", "return x") == 8
    assert real_lines_speed.right_chars("return y", "return x") == 0
    assert real_lines_speed.right_chars("", "") == 0
    assert real_lines_speed.prefix_chars("return y", "return x") == 7
    assert real_lines_speed.prefix_chars("\nreturn x", "return x") == 0  # an empty first line
    item = Item("a", "python", "", "return x", "", "real-line")
    records = [Record(Finished(0, "return x\n", 3, 1), item, 100.0), Record(Finished(1, "retur", 2, 2), item, 300.0), Record(Finished(2, "", 0, 1), item, 200.0)]
    level = real_lines_speed.summarize("batched", 2, records, wall=0.5)
    assert level["right_chars"] == 8 and level["prefix_chars"] == 8 + 5
    assert level["right_chars_per_s_per_user"] == 8.0  # 8 characters / 0.5 s / 2 users
    assert level["prefix_chars_per_s_per_user"] == 13.0
    assert level["exact_match"] == round(1 / 3, 4) and level["empty"] == 1
    assert level["prefix_share"] == round(13 / 24, 4)  # of the three answers' 24 line characters
    assert level["tpf"] == round(5 / 4, 3) and level["p50_ms"] == 200.0


@pytest.fixture()
def engine_and_items(fake_package: str, tiny_model_dir: Path, tmp_path: Path):  # noqa: F811
    from lab.concurrency.sweep import load_engine

    eng = load_engine(tiny_model_dir, "cpu", None, None, settings={"max_tokens": 32})
    return eng, real_lines_speed.build_items([fake_package], 2, tmp_path / "work", eng)


def test_items_carry_their_workspace_and_the_baseline_verifies_its_drafts(engine_and_items):
    eng, items = engine_and_items
    assert len(items) == 2 and len({id(item.workspace) for item in items}) == 1  # one index for the package copy
    for item in items:
        assert item.kind == "real-line" and Path(item.filename).is_relative_to(item.workspace.index.root)
        assert item.workspace.drafts(item.prefix, item.suffix, item.filename)  # the cursor's line has candidates
    plain, _ = run_level(eng, "autoregressive+drafts", items, 1, 2)
    drafted, _ = run_level(eng, WORKSPACE_DRAFTED, items, 1, 2)
    by_key = {r.finished.key: r.finished for r in plain}
    for record in drafted:
        # the same greedy text; the first pass fed the workspace's lines too
        assert record.finished.middle == by_key[record.finished.key].middle
        assert record.finished.drafted > by_key[record.finished.key].drafted
    first = Autoregressive(eng, 0, 16).first_drafts(items[0], "    ")
    assert first and all(ids[-1] == eng.tokenizer.encode("\n")[-1] for ids in first)
    assert Autoregressive(eng, 0, 0).first_drafts(items[0], "") == []


def test_the_sweep_runs_end_to_end_on_two_items_at_one_and_two_users(engine_and_items):
    eng, items = engine_and_items
    report = real_lines_speed.run(eng, items, [1, 2], list(real_lines_speed.MODES), repeats=2, chunk=1)
    levels = report["levels"]
    assert [(l["concurrency"], l["mode"]) for l in levels] == [(c, m) for c in (1, 2) for m in real_lines_speed.MODES]
    for level in levels:
        assert level["requests"] == 4  # two items, two passes
        assert level["right_chars_per_s_per_user"] >= 0 and level["p50_ms"] <= level["p90_ms"]
        assert 0 <= level["empty"] <= 4 and level["tpf"] > 0
    assert [r["concurrency"] for r in report["ratios"]] == [1, 2]
    assert report["lines_among_drafts"]["lines"] == 2
    assert "C=2" in real_lines_speed.table(report)


def test_lab_bench_real_lines_forwards_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from lab.evaluation import bench

    assert real_lines_speed.main(["--modes", "nonsense"]) == 2  # refused before any model loads
    seen = []
    monkeypatch.setattr(real_lines_speed, "main", lambda argv: seen.append(argv) or 0)
    assert bench.main(["--real-lines", "aside", "--n", "5", "--json", "--set", "max_tokens=16"]) == 0
    assert seen == [["--set", "aside", "--concurrency", "1,4", "--json", "--n", "5", "--knob", "max_tokens=16"]]

"""The concurrency sweep (lab/concurrency): its closed loop, report shape, crossover and plot."""
import json

import pytest

from lab.concurrency.items import load_items
from lab.concurrency.sweep import WAVES, crossover, main, parse_levels, parse_settings, run_sweep

LEVEL_KEYS = {"concurrency", "mode", "tokens_per_s", "tokens_per_s_per_user", "p50_ms", "p99_ms", "tpf", "exact_match"}


def test_items_mix_single_and_multi_line_middles_cut_from_the_held_out_text():
    items = load_items()
    multi = [i for i in items if i.kind == "multi-line"]
    assert len(items) == 180 and 20 <= len(multi) <= 60
    for item in multi:
        assert item.middle.count("\n") == 3 and item.middle.endswith("\n")
    assert len({i.id for i in items}) == len(items)


def test_sweep_reports_every_mode_at_every_level(tiny_model_dir):
    import engine

    eng = engine.load(tiny_model_dir)
    eng.settings = eng.settings.replace(max_tokens=6)  # short middles: a quick sweep
    report = run_sweep(eng, [1, 3], ["batched", "sequential", "autoregressive"], min_requests=3, repeats=2)
    levels = report["levels"]
    assert [(l["concurrency"], l["mode"]) for l in levels] == [(c, m) for c in (1, 3) for m in ("batched", "sequential", "autoregressive")]
    for level in levels:
        assert LEVEL_KEYS <= set(level)
        assert level["requests"] == 2 * max(3, WAVES * level["concurrency"])  # two runs (ABBA) pooled
        assert level["p50_ms"] <= level["p99_ms"]
        # tokens/s per user is the tokens a request returns over the time it takes
        assert level["tokens_per_request"] == round(level["tokens"] / level["requests"], 2)
        assert 0 <= level["empty_answers"] <= level["requests"]
        assert level["right_chars"] >= 0 and level["right_chars_per_s_per_user"] >= 0
        if level["tokens"]:
            assert abs(level["tokens_per_s_per_user"] - level["tokens"] / (level["mean_ms"] * level["requests"] / 1000)) <= 0.02 * level["tokens_per_s_per_user"] + 0.1
        if level["mode"] == "autoregressive":
            assert 0 < level["tpf"] <= 1.0  # one token per pass at most, the prefill counted as one
    # Batched and sequential denoise the same requests to the same middles (temperature 0).
    assert report["batched_identical_to_sequential"]["identical"] == report["batched_identical_to_sequential"]["requests"] == 2 * max(3, WAVES * 1) + 2 * max(3, WAVES * 3)
    json.dumps(report)  # the --json line


def test_drafted_baseline_writes_the_autoregressive_middles_in_fewer_passes(tiny_model_dir):
    """autoregressive+drafts verifies the copy rule's drafts: the same middles as the plain
    baseline on the same requests, batched too, with every level's share and tpf reported."""
    import engine

    eng = engine.load(tiny_model_dir)
    eng.settings = eng.settings.replace(max_tokens=12)
    report = run_sweep(eng, [1, 3], ["autoregressive", "autoregressive+drafts"], min_requests=6, repeats=1, draft_tokens=4)
    plain = {l["concurrency"]: l for l in report["levels"] if l["mode"] == "autoregressive"}
    for level in report["levels"]:
        if level["mode"] != "autoregressive+drafts":
            continue
        assert level["identical_to_autoregressive"] == 1.0
        assert level["tokens"] == plain[level["concurrency"]]["tokens"] and level["exact_match"] == plain[level["concurrency"]]["exact_match"]
        assert level["tpf"] >= plain[level["concurrency"]]["tpf"] and level["drafted"] > 0 and 0 <= level["draft_accept"] <= 1
    assert report["draft_tokens"] == 4 and "autoregressive+drafts" in report["crossover_per_user_drafts"]["text"]
    json.dumps(report)


def _level(c, mode, per_user):
    return {"concurrency": c, "mode": mode, "tokens_per_s_per_user": per_user, "tokens_per_s": per_user * c}


def test_crossover_names_the_level_where_autoregressive_overtakes_for_good():
    levels = [_level(1, "batched", 30), _level(1, "autoregressive", 20), _level(8, "batched", 10), _level(8, "autoregressive", 12),
              _level(4, "batched", 20), _level(4, "autoregressive", 21)]
    # Ahead at 4, behind... no: at 4 AR leads (21 > 20) and stays ahead at 8.
    assert crossover(levels)["at"] == 4
    flip_back = levels + [_level(16, "batched", 9), _level(16, "autoregressive", 5)]
    assert crossover(flip_back)["at"] is None and "no crossover" in crossover(flip_back)["text"]
    never = [_level(1, "batched", 1), _level(1, "autoregressive", 2)]
    assert crossover(never)["at"] is None and "every level" in crossover(never)["text"]
    assert crossover([_level(1, "batched", 1)])["at"] is None


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        parse_levels("1,two")
    with pytest.raises(ValueError):
        parse_levels("0,4")
    assert parse_levels("16, 1,4,4") == [1, 4, 16]
    assert parse_settings(["constrained=false", "max_tokens=32", "language=python"]) == {"constrained": False, "max_tokens": 32, "language": "python"}
    with pytest.raises(ValueError):
        parse_settings(["oops"])
    assert main(["--concurrency", "1,x"]) == 2
    assert main(["--concurrency", "1", "--modes", "batched,fast"]) == 2
    assert main(["--concurrency", "1", "--modes", "autoregressive+drafts", "--draft-tokens", "0"]) == 2


def test_command_writes_the_json_report_and_the_plot(tiny_model_dir, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    plot, out = tmp_path / "sweep.png", tmp_path / "sweep.json"
    assert main(["--concurrency", "1,2", "--requests", "2", "--repeats", "1", "--model", str(tiny_model_dir),
                 "--json", "--plot", str(plot), "--out", str(out), "--set", "max_tokens=4"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    report = json.loads(last)
    assert {l["mode"] for l in report["levels"]} == {"batched", "sequential", "autoregressive", "autoregressive+drafts"}
    assert report["settings"]["max_tokens"] == 4
    assert json.loads(out.read_text())["levels"] == report["levels"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_breakdown_meter_parts_add_up_and_nested_parts_leave_their_parent():
    import time

    from lab.concurrency.breakdown import Meter

    meter = Meter()

    def spin(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    with meter.part("sampler"):
        spin(0.02)
        with meter.part("syntax"):
            spin(0.03)
    assert 0.025 <= meter.seconds["syntax"] < 0.2
    assert 0.015 <= meter.seconds["sampler"] < 0.03 + 0.1  # its own time only, not the syntax check's


def test_breakdown_meters_both_modes_on_the_same_requests(tiny_model_dir):
    import engine
    from lab.concurrency.breakdown import PARTS, metered_level, summarize

    eng = engine.load(tiny_model_dir)
    eng.settings = eng.settings.replace(max_tokens=6)
    items = load_items()
    runs = [metered_level(eng, mode, items, 3, 6) for mode in ("sequential", "batched")]
    for run in runs:
        assert set(run["parts_cpu_s"]) == set(PARTS) | {"other"}
        assert run["parts_cpu_s"]["forward"] > 0 and run["parts_cpu_s"]["encode"] > 0
        assert abs(sum(run["parts_cpu_s"].values()) - run["cpu_s"]) < 0.01
        assert len(run["middles"]) == 6
    assert runs[0]["middles"] == runs[1]["middles"]
    report = summarize(runs)
    assert report["batched_gain"] > 0 and report["gain_bound_if_forward_were_free"] > 1
    # the meter is removed afterwards: the model's own methods are back
    assert "canvas_logits" not in vars(eng.model) and "encode_context" not in vars(eng.model)


def test_right_chars_count_the_answer_up_to_its_first_difference():
    from lab.concurrency.sweep import right_chars

    assert right_chars("return self.x\n", "return self.x  \n") == len("return self.x")  # whole and right
    assert right_chars("return self.y(a, b, c, d)", "return self.x") == len("return self.")  # runs on wrong: no credit past the difference
    assert right_chars("ret", "return self.x") == 3  # a right start
    assert right_chars("", "return") == 0 and right_chars("x", "") == 0


def test_summary_counts_right_characters_over_the_users_waits():
    from lab.concurrency.items import Item
    from lab.concurrency.servers import Finished
    from lab.concurrency.sweep import Record, summarize

    item = Item("x", "python", "def f():\n    ", "return self.x\n", "\n", "single-line")
    records = [
        Record(Finished(0, "return self.x\n", 4, 4), item, 200.0),                 # all 13 right
        Record(Finished(1, "return self.y(a, b, c, d, e)", 12, 12), item, 600.0),  # 12 right, then a run-on
        Record(Finished(2, "", 0, 3), item, 200.0),                                # empty: nothing
    ]
    level = summarize("batched", 1, records, wall=1.0)
    assert level["right_chars"] == 13 + 12
    assert level["right_chars_per_s_per_user"] == 25.0  # 25 characters over 1 s of waits
    assert level["tokens_per_s_per_user"] == 16.0 and level["exact_match"] == round(1 / 3, 4)

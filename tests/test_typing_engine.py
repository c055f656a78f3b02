"""The typing replay's keystrokes straight into the engine (lab/loadtest/typing_engine.py):
every keystroke asked once per round, rounds compared answer by answer, and the summary's
counts taken from the keystrokes it was given (no verdict depends on how fast they ran)."""
from lab.loadtest import typing_engine
from lab.loadtest.typing_engine import Keystroke, Round, summarize


def _keys(ms: list[float], middles: list[str]) -> list[Keystroke]:
    parts = {part: 1.0 for part in typing_engine.PARTS}
    return [Keystroke(m, 2, middle, "end_of_middle", dict(parts)) for m, middle in zip(ms, middles)]


def test_the_summary_counts_what_it_was_given() -> None:
    rounds = [
        Round(3, _keys([50.0, 200.0, 90.0], ["a", "", "c"])),
        Round(0, _keys([120.0, 80.0, 60.0], ["a", "", "x"])),
        Round(3, _keys([40.0, 110.0, 100.0], ["a", "", "c"])),
    ]
    by_width = {row["width"]: row for row in summarize(rounds, budget_ms=100.0)}
    assert list(by_width) == [3, 0]  # the order the widths first ran in
    three, zero = by_width[3], by_width[0]
    assert three["rounds"] == 2 and zero["rounds"] == 1
    assert three["keystrokes"] == zero["keystrokes"] == 3
    assert three["over_budget"] == [1, 1] and zero["over_budget"] == [1]
    assert three["middles_differing"] == [0, 0] and zero["middles_differing"] == [1]  # 'x' against the first round's 'c'
    assert three["empty"] == zero["empty"] == 1
    assert three["forwards"] == 6
    assert three["total_s"] == [0.34, 0.25]
    assert three["parts_ms_per_keystroke"] == {part: 1.0 for part in typing_engine.PARTS}


def test_a_round_asks_every_keystroke_and_the_same_width_answers_the_same(tmp_path) -> None:
    """On a tiny random model (unconstrained: its tokens rarely parse): one answer per typed
    character, and a second round of the same width gives the same middles (the engine is
    deterministic; the context cache starts cold each round)."""
    import engine
    from lab.fixtures.tiny_model import make_tiny_model_dir
    from lab.loadtest.typing_replay import keystrokes, typed_stretch

    eng = engine.load(make_tiny_model_dir(tmp_path / "tiny"), device="cpu")
    text = typing_engine.DEFAULT_FILE.read_text(encoding="utf-8")
    start, end = typed_stretch(text, 0.5, 8, "none")
    start, typed = keystrokes(text, start, end, "as-written")
    document = text[:start] + text[start + len(typed):]
    first, second = (typing_engine.run_round(eng, document, start, typed, "suggestion_cache.py", 2, constrained=False) for _ in range(2))
    assert len(first.keys) == len(typed) == 8
    assert [k.middle for k in first.keys] == [k.middle for k in second.keys]
    assert all(k.forwards >= 1 and k.parts_ms["forward"] > 0 for k in first.keys)
    assert eng.lookahead_width == 2


def test_bad_arguments_are_a_clear_error(capsys) -> None:
    assert typing_engine.main(["--tiny", "--rounds", "0"]) == 2
    assert "--rounds" in capsys.readouterr().err
    assert typing_engine.main(["--tiny", "--chars", "3", "--widths", "3,-1"]) == 2
    assert "--widths" in capsys.readouterr().err

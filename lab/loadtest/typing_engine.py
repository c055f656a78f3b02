"""The typing replay's keystrokes straight into the engine: where a keystroke's time goes.

    python -m lab.loadtest.typing_engine                          # every keystroke, one round
    python -m lab.loadtest.typing_engine --widths 3,6 --rounds 4  # drafted-canvas widths A/B
    python -m lab.loadtest.typing_engine --tiny --chars 20        # a tiny random model (tests)

`python -m lab.loadtest.typing_replay` measures what an editor user feels, through the
language server: its typed-through cache, debounce and cancellation decide which
keystrokes reach the model, and one slow request makes the next one wait. This tool asks
the engine for every keystroke of the same typed stretch (the same file, `--start`,
`--chars`, `--align`, `--order`), one after another with the document's context cache as
the server keeps it (`cache_key`), and times each request alone: its milliseconds, its
forward passes, and the CPU milliseconds spent in the model's forward calls, the final
syntax check and the commit check (lab.concurrency.breakdown's Meter). `--budget-ms` (default: the replay's 120 ms keystroke interval
less the server's 15 ms debounce) counts the requests that could not have answered before
the next keystroke.

With several `--widths` (drafted canvases per pass, engine/lookahead.py) the rounds
alternate between them, so a busy machine weighs on each alike; the middles of every
round are compared with the first width's first round (the work bound counts forwards,
so a width may change an answer where the bound binds: engine/stopping.py `WASTE_BOUND`).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from lab.concurrency.breakdown import Meter
from lab.loadtest.typing_replay import DEFAULT_FILE, add_model_arguments, add_stretch_arguments, model_directory, stretch_to_type

REPLAY_INTERVAL_MS = 120.0  # typing_replay's default keystroke interval
SERVER_DEBOUNCE_MS = 15.0  # infill_lsp/config.py's default debounce
PARTS = ("forward", "final_check", "commit_check")


@dataclass
class Keystroke:
    ms: float
    forwards: int
    middle: str
    stop_reason: str
    parts_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class Round:
    width: int
    keys: list[Keystroke]

    @property
    def total_s(self) -> float:
        return sum(k.ms for k in self.keys) / 1000


@contextmanager
def metered(eng: Any) -> Iterator[Meter]:
    """The engine's forward calls and the syntax checks under lab.concurrency.breakdown's
    Meter (CPU seconds of this thread per part) while inside."""
    from grammars.constraint import TreeSitterConstraint

    meter = Meter()
    undo = [meter.wrap(eng.model, name, "forward") for name in ("encode_context", "encode_with_canvas", "encode_with_canvas_many", "canvas_logits", "canvas_logits_many") if hasattr(eng.model, name)]
    undo += [meter.wrap(TreeSitterConstraint, "accept_final", "final_check"), meter.wrap(TreeSitterConstraint, "allows", "commit_check")]
    try:
        yield meter
    finally:
        for restore in reversed(undo):
            restore()


def run_round(eng: Any, document: str, cursor: int, typed: str, filename: str, width: int, **settings: Any) -> Round:
    """Every keystroke of `typed` at `cursor` as one request (the language from `filename`,
    as the server passes it), the context cache starting cold."""
    from engine.sampler import run_to_end

    eng.lookahead_width = width
    eng.forget_context()
    keys: list[Keystroke] = []
    with metered(eng) as meter:
        for char in typed:
            document = document[:cursor] + char + document[cursor:]
            cursor += len(char)
            meter.seconds.clear()
            started = time.perf_counter()
            result = run_to_end(eng.stream(document[:cursor], document[cursor:], cache_key="typing", filename=filename, **settings))
            ms = (time.perf_counter() - started) * 1000
            keys.append(Keystroke(ms, result.forwards, result.middle, result.stop_reason, {p: meter.seconds.get(p, 0.0) * 1000 for p in PARTS}))
    return Round(width, keys)


def summarize(rounds: list[Round], budget_ms: float) -> list[dict[str, Any]]:
    """Per width: its rounds pooled (totals, over-budget counts and differing middles per round;
    percentiles and per-keystroke means over all its keystrokes)."""
    reference = rounds[0].keys
    out = []
    for width in dict.fromkeys(r.width for r in rounds):
        mine = [r for r in rounds if r.width == width]
        ms = sorted(k.ms for r in mine for k in r.keys)
        n_keys = len(mine[0].keys)
        out.append({
            "width": width,
            "rounds": len(mine),
            "keystrokes": n_keys,
            "total_s": [round(r.total_s, 2) for r in mine],
            "p50_ms": round(statistics.median(ms), 1),
            "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 1),
            "over_budget": [sum(k.ms > budget_ms for k in r.keys) for r in mine],
            "forwards": sum(k.forwards for k in mine[0].keys),
            "parts_ms_per_keystroke": {p: round(sum(k.parts_ms[p] for r in mine for k in r.keys) / (n_keys * len(mine)), 1) for p in PARTS},
            "ms_per_keystroke": round(sum(ms) / len(ms), 1),
            "middles_differing": [sum(a.middle != b.middle for a, b in zip(r.keys, reference)) for r in mine],
            "empty": sum(not k.middle for k in mine[0].keys),
        })
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m lab.loadtest.typing_engine", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_stretch_arguments(p, chars=200)
    p.add_argument("--widths", default=None, help="drafted canvases per pass, comma-separated (default: the engine's)")
    p.add_argument("--rounds", type=int, default=1, help="rounds per width, alternating (default 1)")
    p.add_argument("--unconstrained", action="store_true", help="the syntax constraint off (a random model's tokens rarely parse)")
    p.add_argument("--budget-ms", type=float, default=REPLAY_INTERVAL_MS - SERVER_DEBOUNCE_MS)
    add_model_arguments(p)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.rounds < 1 or args.chars < 1:
        print("typing_engine: --rounds and --chars must be at least 1", file=sys.stderr)
        return 2
    import engine

    document, start, typed = stretch_to_type(args)
    if not typed:
        print("typing_engine: nothing to type (file too short for --start/--chars)", file=sys.stderr)
        return 2
    with model_directory(args) as model_dir:
        eng = engine.load(model_dir, device="cpu")
        try:
            widths = [int(w) for w in args.widths.split(",")] if args.widths else [eng.lookahead_width]
        except ValueError:
            widths = []
        if not widths or any(not 0 <= w <= 16 for w in widths):
            print(f"typing_engine: --widths must be whole numbers from 0 to 16, not {args.widths!r}", file=sys.stderr)
            return 2
        rounds = []
        for round_ in range(args.rounds):
            for width in widths:
                done = run_round(eng, document, start, typed, args.file.name, width, **({"constrained": False} if args.unconstrained else {}))
                rounds.append(done)
                print(f"round {round_ + 1} width {width}: {done.total_s:.1f} s for {len(typed)} keystrokes", file=sys.stderr, flush=True)
    print(f"{len(typed)} keystrokes of {args.file.name}, each a request alone; budget {args.budget_ms:g} ms")
    for row in summarize(rounds, args.budget_ms):
        parts = ", ".join(f"{k} {v}" for k, v in row["parts_ms_per_keystroke"].items())
        print(f"width {row['width']}: total s {row['total_s']}  ms/keystroke {row['ms_per_keystroke']} ({parts})  "
              f"p50 {row['p50_ms']} p90 {row['p90_ms']} ms  over budget {row['over_budget']}  forwards {row['forwards']}  "
              f"empty {row['empty']}  middles differing from the first {row['middles_differing']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

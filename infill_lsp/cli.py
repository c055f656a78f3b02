"""`infill` command line: one subcommand per job, each a thin wrapper over a module.

This module sits above the front ends: it is the only one that knows all of them (the
language server, the live server, the batch contracts), the engine, and the lab. The lab
(training, evaluation, benchmarks: the top-level `lab/` folder) exists only in a source
checkout; the commands that need it say so when it is absent (an installed wheel).

User mistakes (a missing file, a bad position, a corrupt model) print one line on
stderr and exit 2; they never print a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from engine.text import ANY_BREAK, UTF32, TextIndex
from engine.types import InfillError

MAX_FILE_BYTES = 8_000_000
CHECKOUT = Path(__file__).resolve().parent.parent  # the source checkout, when running from one


def require_lab(command: str) -> None:
    """Make the checkout's `lab/` importable, or say why `infill COMMAND` cannot run.

    An editable install maps only the shipped packages, so the checkout root is put on
    sys.path when it holds `lab/`."""
    if (CHECKOUT / "lab" / "__init__.py").is_file():
        if str(CHECKOUT) not in sys.path:
            sys.path.insert(0, str(CHECKOUT))
        return
    raise InfillError(f"`infill {command}` needs a source checkout of infill (its lab/ folder: training, "
                      "evaluation, benchmarks); the installed package ships only the runtime. "
                      "Clone the repository, `pip install -e .` there, and run it from the checkout")


def _lsp(argv: list[str]) -> int:
    from infill_lsp.server import main

    return main(argv)


def _serve(argv: list[str]) -> int:
    from infill_lsp.live.server import main

    return main(argv)


def _quantize(argv: list[str]) -> int:
    from engine.quant.quantized_dir import main

    return main(argv)


def _models(argv: list[str]) -> int:
    from engine.families.describe import main

    return main(argv)


def _next_edit_batch(argv: list[str]) -> int:
    from infill_lsp.next_edit_batch import main

    return main(argv)


def _corpus(argv: list[str]) -> int:
    require_lab("corpus")
    from lab.training.corpus import main

    return main(argv)


def _tokenizer(argv: list[str]) -> int:
    require_lab("tokenizer")
    from lab.training.tokenizer_train import main

    return main(argv)


def _train(argv: list[str]) -> int:
    require_lab("train")
    from lab.training.train import main

    return main(argv)


def _eval(argv: list[str]) -> int:
    require_lab("eval")
    from lab.evaluation.run import main

    return main(argv)


# Subcommands that parse their own arguments: name -> (runner, help). Each runner is main(argv) -> int.
DELEGATED: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "lsp": (_lsp, "run the language server (stdio, or --tcp on loopback)"),
    "serve": (_serve, "run the HTTP API, WebSocket live rewrites and the playground (--replicas: on Ray Serve)"),
    "quantize": (_quantize, "write an int8/int4 quantized copy of a model directory"),
    "models": (_models, "list the model families infill can load"),
    "corpus": (_corpus, "build the training corpus from pinned sources (source checkout)"),
    "tokenizer": (_tokenizer, "train the BPE tokenizer on the corpus (source checkout)"),
    "train": (_train, "train or resume the embedded model (source checkout)"),
    "eval": (_eval, "evaluate a model: HumanEval single-line infilling, held-out exact match (source checkout)"),
    "next-edit-batch": (_next_edit_batch, "next-edit suggestions for a JSONL batch (stdin -> stdout)"),
}


def read_source_file(path: Path) -> str:
    if not path.exists():
        raise InfillError(f"{path}: no such file")
    if not path.is_file():
        raise InfillError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InfillError(f"{path}: file is {size / 1e6:.1f} MB; infill completes files up to {MAX_FILE_BYTES / 1e6:.0f} MB")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise InfillError(f"{path}: looks like a binary file (NUL bytes); infill completes text files")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InfillError(f"{path}: not valid UTF-8 (byte {exc.start}); infill reads UTF-8 text files") from None


def split_at(text: str, line: int, column: int) -> tuple[str, str]:
    """Split at a 1-based line and column (columns count characters, lines end as editors
    show them: "\\r\\n", "\\r" or "\\n"; the engine's position codec, engine/text.py)."""
    index = TextIndex(text, ANY_BREAK)
    if line < 1 or line > index.line_count:
        raise InfillError(f"line {line} is outside the file (1..{index.line_count})")
    width = len(index.line_text(line - 1))
    if column < 1 or column > width + 1:
        raise InfillError(f"column {column} is outside line {line} (1..{width + 1})")
    offset = index.offset_at(line - 1, column - 1, UTF32)
    return text[:offset], text[offset:]


def _check_language(name: Optional[str]) -> None:
    """--language, checked before the model loads (engine/language.py decides)."""
    if name:
        from engine.language import UnknownLanguage, check_language

        try:
            check_language(name)
        except UnknownLanguage as exc:
            raise InfillError(f"--language: {exc}") from None


# Why a completion came back empty, in words (the figures line says `stop: <reason>`).
EMPTY_ANSWER = {
    "rejected": "every middle the model wrote would have left the code here unparseable, so infill "
    "shows nothing rather than broken code (--no-constrained shows the model's raw text)",
    "end_of_middle": "the model judged that nothing is missing at this cursor",
    "max_tokens": "the model's text ran to --max-tokens without a usable end",
    "empty": "--max-tokens is 0",
}


def _language_note(result: Any) -> str:
    """`language: python (from the file name)`, or `no language (unconstrained)`."""
    if result.language is None:
        return "no language (unconstrained)"
    where = {"request": "--language", "filename": "from the file name", "detected": "detected"}
    return f"language: {result.language} ({where.get(result.language_source, result.language_source)})"


def explain_empty(stop_reason: str) -> str:
    return "no suggestion: " + EMPTY_ANSWER.get(stop_reason, f"the completion stopped ({stop_reason}) before writing anything")


def cmd_complete(args: argparse.Namespace) -> int:
    import engine

    _check_language(args.language)
    text = read_source_file(args.file)
    prefix, suffix = split_at(text, args.line, args.column)
    load_start = time.perf_counter()
    eng = engine.load(args.model)
    load_ms = (time.perf_counter() - load_start) * 1000
    settings = {"max_tokens": args.max_tokens, "constrained": args.constrained}
    # The language: --language, else the file's extension, else detected (a script without one).
    result = eng.infill(prefix, suffix, language=args.language, filename=str(args.file), detect_language=True,
                        **{k: v for k, v in settings.items() if v is not None})
    if args.json:
        print(json.dumps({**result.to_dict(), "model": eng.model_name, "load_ms": round(load_ms, 1)}))
    else:
        sys.stdout.write(result.middle)
        if not result.middle.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()  # the completion's line before the figures on stderr, in a terminal too
        print(f"-- {result.tokens} tokens in {result.forwards} passes ({result.tokens_per_forward:.2f} tokens/pass), {result.ms:.1f} ms, stop: {result.stop_reason}, {_language_note(result)}, model {eng.model_name} (loaded in {load_ms:.0f} ms)", file=sys.stderr)
        if not result.middle.strip():
            print(f"-- {explain_empty(result.stop_reason)}", file=sys.stderr)
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from infill_lsp.batch import run_batch

    return run_batch(sys.stdin, sys.stdout, model_dir=args.model, language=args.language)


def cmd_bench(args: argparse.Namespace) -> int:
    require_lab("bench")
    if args.concurrency:
        from lab.concurrency import sweep

        forwarded = ["--concurrency", args.concurrency] + (["--json"] if args.json else [])
        for flag, value in (("--model", args.model), ("--plot", args.plot), ("--out", args.out), ("--modes", args.modes), ("--requests", args.requests), ("--device", args.device), ("--shapes", args.shapes), ("--threads", args.threads), ("--dtype", args.dtype)):
            if value is not None:
                forwarded += [flag, str(value)]
        for setting in args.set:
            forwarded += ["--set", setting]
        return sweep.main(forwarded)
    if args.syntax:
        from lab.syntax_bench import bench as syntax_bench

        forwarded = (["--model", str(args.model)] if args.model else []) + (["--json"] if args.json else []) + (["--limit", str(args.limit)] if args.limit else [])
        return syntax_bench.main(forwarded)
    from lab.evaluation.bench import run_bench

    return run_bench(model_dir=args.model, limit=args.limit, as_json=args.json)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infill", description="Local code completion with a diffusion language model.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("complete", help="write the middle at a position in a file")
    p.add_argument("file", type=Path)
    p.add_argument("--line", type=int, required=True, help="1-based line of the cursor")
    p.add_argument("--column", type=int, required=True, help="1-based column of the cursor (characters)")
    p.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    p.add_argument("--language", default=None, help="language (default: from the file extension)")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=None, help="syntax-constrained commits (default on)")
    p.add_argument("--json", action="store_true", help="print the middle with its figures as JSON")
    p.set_defaults(handler=cmd_complete)

    p = sub.add_parser("batch", help="infill a JSONL batch: stdin -> stdout (contract in README.md)")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--language", default=None, help="default language for lines without one")
    p.set_defaults(handler=cmd_batch)

    p = sub.add_parser("bench", help="speed and exact match vs the reference (LLaDA-style) sampler (source checkout)")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--limit", type=int, default=None, help="number of benchmark items")
    p.add_argument("--json", action="store_true")
    p.add_argument("--syntax", action="store_true", help="run the syntax-constraint on/off benchmark instead")
    p.add_argument("--concurrency", metavar="LEVELS", default=None, help="run the concurrency sweep instead, e.g. 1,2,4,8,16,32,64 (batched vs one at a time vs autoregressive; lab/concurrency)")
    p.add_argument("--plot", type=Path, default=None, help="with --concurrency: write the PNG plot here")
    p.add_argument("--out", type=Path, default=None, help="with --concurrency: also write the JSON report here")
    p.add_argument("--modes", default=None, help="with --concurrency: a subset of batched,sequential,autoregressive")
    p.add_argument("--requests", type=int, default=None, help="with --concurrency: requests per level at least")
    p.add_argument("--device", default=None, help="with --concurrency: torch device (cpu, cuda)")
    p.add_argument("--shapes", type=Path, default=None, help="with --concurrency: ModelConfig JSON, random weights of these shapes (speed only)")
    p.add_argument("--threads", type=int, default=None, help="with --concurrency: torch threads")
    p.add_argument("--dtype", default=None, help="with --concurrency: cast the weights (e.g. bfloat16)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="with --concurrency: a sampler setting for every request")
    p.set_defaults(handler=cmd_bench)

    for name, (_, help_text) in DELEGATED.items():
        p = sub.add_parser(name, help=help_text, add_help=False)
        p.set_defaults(handler=None)
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] in DELEGATED:
        runner = DELEGATED[argv[0]][0]
        try:
            return int(runner(argv[1:]) or 0)
        except InfillError as exc:
            print(f"infill {argv[0]}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 130
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)  # no command is a usage error, as for any CLI
        return 2
    try:
        return args.handler(args)
    except InfillError as exc:
        print(f"infill {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

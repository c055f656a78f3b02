"""Replay a typing session against `infill lsp` and measure what the user would feel.

A real file is opened with a stretch of it missing; that stretch is then typed at the
cursor one character at a time, the way an editor with inline completion talks to the
server: each keystroke is a `didChange` followed by `textDocument/inlineCompletion`,
and a request still unanswered when the next key comes is cancelled ($/cancelRequest).

Reported: p50/p90/p99 from keystroke to suggestion delivered, and how many model passes
the typed-through cache, the debounce/supersede logic and cancellation avoided (from the
server's own `infill/stats`).

    python -m lab.loadtest.typing_replay --tiny                 # a tiny random model (fast)
    python -m lab.loadtest.typing_replay --model DIR --chars 300 --interval-ms 100
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import time
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from lsprotocol import types

from infill_lsp import suggestion_cache
from lab.fixtures.lsp_client import LspClient, LspResponseError
from infill_lsp.usage_stats import percentile
from infill_lsp.text import UTF16, TextDocument

DEFAULT_FILE = Path(suggestion_cache.__file__)  # real code, shipped with the package


def add_stretch_arguments(parser: argparse.ArgumentParser, chars: int) -> None:
    """--file, --start, --chars, --align, --order: what is typed (`stretch_to_type`)."""
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="the file to type (default: %(default)s)")
    parser.add_argument("--start", type=float, default=0.5, help="where the typed stretch starts, as a fraction of the file")
    parser.add_argument("--chars", type=int, default=chars, help="characters to type (default: %(default)s)")
    parser.add_argument("--align", choices=["statements", "lines", "none"], default="statements",
                        help="statements: whole lines whose removal leaves the file parsing (Python; default); "
                        "lines: whole lines; none: exactly --chars characters from --start")
    parser.add_argument("--order", choices=["as-written", "enter-first"], default="as-written",
                        help="as-written: each line's characters, then its newline (the text after the cursor is "
                        "the next line, on the cursor's line); enter-first: a newline first, then each line "
                        "(the way an editor user writes new lines: Enter at the end of the line above, then type), "
                        "so the cursor's line ends where its text does. The same text at the end either way")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """--model or --tiny: the model that answers (`model_directory`)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    group.add_argument("--tiny", action="store_true", help="use a tiny random model made on the fly (for quick runs)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab.loadtest.typing_replay", description=__doc__.split("\n\n")[0])
    add_stretch_arguments(parser, chars=300)
    parser.add_argument("--interval-ms", type=float, default=120.0, help="time between keystrokes")
    parser.add_argument("--debounce-ms", type=float, default=None, help="server debounce (default: the server's)")
    parser.add_argument("--max-tokens", type=int, default=None, help="sampler max_tokens")
    parser.add_argument(
        "--unconstrained", action="store_true",
        help="turn the syntax constraint off (a random model's tokens rarely parse, so with --tiny "
        "the constraint retries until it gives up, which measures the constraint, not the server)",
    )
    add_model_arguments(parser)
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    parser.add_argument("--no-drafts", action="store_true", help="no workspace drafts (the workspaceDrafts setting off)")
    parser.add_argument("--workspace", type=Path, default=None, help="the workspace folder the server indexes (default: none; the open file's own lines still give drafts)")
    return parser


def stretch_to_type(args: argparse.Namespace) -> tuple[str, int, str]:
    """(the file without the stretch, where typing starts, the keys), from args' --file,
    --start, --chars, --align and --order; the keys are "" when the file is too short."""
    text = args.file.read_text(encoding="utf-8")
    start, end = typed_stretch(text, args.start, args.chars, args.align)
    start, typed = keystrokes(text, start, end, args.order)
    return text[:start] + text[start + len(typed):], start, typed


@contextmanager
def model_directory(args: argparse.Namespace) -> Iterator[Path | None]:
    """args' --model, or with --tiny a tiny random model made for the run (removed after);
    None: the embedded model."""
    if not args.tiny:
        yield args.model
        return
    from lab.fixtures.tiny_model import make_tiny_model_dir

    with tempfile.TemporaryDirectory() as scratch:
        yield make_tiny_model_dir(Path(scratch) / "tiny")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    initial, start, typed = stretch_to_type(args)
    if not typed:
        print("bench_typing: nothing to type (file too short for --start/--chars)", file=sys.stderr)
        return 2
    with model_directory(args) as model_dir:
        summary = run_session(initial, start, typed, model_dir, args)
    summary["order"] = args.order
    summary["file"] = str(args.file)
    summary["typed_chars"] = len(typed)
    summary["typed_text"] = typed
    summary["align"] = args.align
    summary["settings"] = {"debounce_ms": args.debounce_ms, "max_tokens": args.max_tokens, "constrained": not args.unconstrained}
    summary["model"] = summary.get("model") or ("tiny random model" if args.tiny else str(args.model or "embedded"))
    print(_report(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


def typed_stretch(text: str, start_fraction: float, chars: int, align: str) -> tuple[int, int]:
    """[start, end) of the text to type. `lines`: from the start of the line at or after
    the fraction to the end of the line where `chars` runs out (whole lines, as a user
    writes new code: the rest of the file after the cursor stays intact). `statements`
    (Python files): those lines, then more until the file without them parses. `none`: exactly
    `chars` characters from the fraction, which can leave the file's rest starting in the
    middle of an identifier (`gestion] | None:`) that no short completion can repair."""
    start = max(0, min(len(text), int(len(text) * start_fraction)))
    if align == "none":
        return start, min(len(text), start + chars)
    if start > 0 and text[start - 1] != "\n":
        newline = text.find("\n", start)
        start = len(text) if newline < 0 else newline + 1
    end = min(len(text), start + chars)
    if end > start and text[end - 1] != "\n":
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline + 1
    if align == "statements":
        # Whole statements: the file without the stretch still parses (CPython), as when a
        # user writes new code into a working file. A stretch that ends inside a docstring
        # or a block leaves a rest that no completion of the current line can repair.
        for _ in range(MAX_EXTRA_LINES):
            if _parses(text[:start] + text[end:]) or end >= len(text):
                break
            newline = text.find("\n", end)
            end = len(text) if newline < 0 else newline + 1
    return start, end


def keystrokes(text: str, start: int, end: int, order: str) -> tuple[int, str]:
    """Where typing starts and what is typed, for the stretch text[start:end] of whole lines.
    `as-written`: the stretch itself, from `start`. `enter-first`: from just before the
    newline that ends the line above, a newline and then the stretch without its last
    newline (the one already there ends it): the file ends the same, but the text after the
    cursor always starts on the next line, as in an editor where each new line is opened
    with Enter. A stretch that does not start a line (`--align none`) is typed as written."""
    stretch = text[start:end]
    if order == "as-written" or start == 0 or text[start - 1] != "\n" or not stretch.endswith("\n"):
        return start, stretch
    return start - 1, "\n" + stretch[:-1]


MAX_EXTRA_LINES = 40  # lines a `statements` stretch may grow by to end at a statement boundary


def _parses(source: str) -> bool:
    try:
        compile(source, "<typing replay>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def run_session(initial: str, cursor: int, typed: str, model_dir: Path | None, args: argparse.Namespace) -> dict:
    command = [sys.executable, "-m", "infill_lsp"]
    if model_dir is not None:
        command += ["--model", str(model_dir)]
    settings: dict = {}
    if args.debounce_ms is not None:
        settings["debounceMs"] = args.debounce_ms
    if args.max_tokens is not None:
        settings["maxTokens"] = args.max_tokens
    if args.unconstrained:
        settings["constrained"] = False
    if args.no_drafts:
        settings["workspaceDrafts"] = False
    client = LspClient(command, configuration=settings)
    uri = "file:///bench/" + args.file.name
    try:
        client.initialize({"workspace": {"configuration": True}, "window": {"workDoneProgress": True}},
                          root_uri=args.workspace.resolve().as_uri() if args.workspace else None)
        client.open(uri, initial, language_id="python")
        document = TextDocument(uri, "python", 1, initial)
        _wait_until_loaded(client, uri, document.position_at(cursor, UTF16))
        before = client.request("infill/stats")

        latencies: list[float] = []  # keystroke -> non-empty suggestion
        answered: list[float] = []  # keystroke -> any answer (empty included)
        outstanding: tuple[int, Future, float] | None = None
        sent: list[tuple[int, Future, float]] = []
        delivered = cancelled = 0

        log: list[dict] = []  # per keystroke: what came back, when (the JSON's "keystrokes_log")

        def settle(entry: tuple[int, Future, float], wait: float) -> None:
            nonlocal delivered, cancelled
            message_id, future, sent = entry
            try:
                result = future.result(timeout=wait)
            except LspResponseError:
                cancelled += 1
                log.append({"key": len(log), "outcome": "cancelled"})
                return
            elapsed = (_arrival(future) - sent) * 1000
            answered.append(elapsed)
            items = (result or {}).get("items") or []
            log.append({"key": len(log), "outcome": "delivered" if items else "empty", "ms": round(elapsed, 1),
                        "text": items[0].get("insertText") if items else ""})
            if items:
                delivered += 1
                latencies.append(elapsed)

        next_key = time.perf_counter()
        for version, char in enumerate(typed, start=2):
            next_key += args.interval_ms / 1000
            if outstanding is not None and not outstanding[1].done():
                client.cancel(outstanding[0])  # the editor moved on (its reply is read at the end)
            position = document.position_at(cursor, UTF16)
            keystroke = time.perf_counter()
            client.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": _range(position, position), "text": char}],
                },
            )
            document.text = document.text[:cursor] + char + document.text[cursor:]
            cursor += len(char)
            message_id, future = client.request_async(
                "textDocument/inlineCompletion",
                {
                    "textDocument": {"uri": uri},
                    "position": _pos(document.position_at(cursor, UTF16)),
                    "context": {"triggerKind": 2},
                },
            )
            future.add_done_callback(_stamp)
            outstanding = (message_id, future, keystroke)
            sent.append(outstanding)
            # Wait for the next keystroke time (or the answer, whichever is later is fine).
            time.sleep(max(0.0, next_key - time.perf_counter()))
        for entry in sent:
            settle(entry, wait=120)
        after = client.request("infill/stats")
    finally:
        client.close()

    counts = {k: after["counts"].get(k, 0) - before["counts"].get(k, 0) for k in after["counts"]}
    requests = counts.get("requests", 0)

    def ms(samples: list[float], q: float) -> float | None:
        value = percentile(samples, q)
        return None if value is None else round(value, 1)

    return {
        "model": after.get("model"),
        "keystrokes": len(typed),
        "interval_ms": args.interval_ms,
        "requests": requests,
        "suggestions_delivered": delivered,
        "empty_answers": len(answered) - delivered,
        "cancelled_replies": cancelled,
        "keystroke_to_suggestion_ms": {"p50": ms(latencies, 0.5), "p90": ms(latencies, 0.9), "p99": ms(latencies, 0.99)},
        "keystroke_to_any_answer_ms": {"p50": ms(answered, 0.5), "p99": ms(answered, 0.99)},
        "model_passes_run": counts.get("model_runs", 0),
        "model_passes_avoided": {
            "typed_through_cache": counts.get("cache_hits", 0),
            "debounce_or_superseded_before_model": counts.get("superseded_before_model", 0),
            "cancelled_by_client_before_or_during_model": counts.get("cancelled_by_client", 0),
        },
        "model_runs_stopped_midway": counts.get("cancelled_during_model", 0),
        "forwards": counts.get("forwards", 0),
        "server_counts": counts,
        "keystrokes_log": [{**entry, "char": char} for entry, char in zip(log, typed)],
    }


def _wait_until_loaded(client: LspClient, uri: str, position: types.Position, timeout: float = 600) -> None:
    """Block until the model answers once (loading happens in the background)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        client.request(
            "textDocument/inlineCompletion",
            {"textDocument": {"uri": uri}, "position": _pos(position), "context": {"triggerKind": 1}},
            timeout=timeout,
        )
        if client.request("infill/stats").get("model"):
            return
        time.sleep(0.5)
    raise TimeoutError("the model did not load")


def _stamp(future: Future) -> None:
    future.arrived = time.perf_counter()  # type: ignore[attr-defined]


def _arrival(future: Future) -> float:
    return getattr(future, "arrived", time.perf_counter())


def _pos(position: types.Position) -> dict:
    return {"line": position.line, "character": position.character}


def _range(start: types.Position, end: types.Position) -> dict:
    return {"start": _pos(start), "end": _pos(end)}


def _report(summary: dict) -> str:
    avoided = summary["model_passes_avoided"]
    latency = summary["keystroke_to_suggestion_ms"]
    return "\n".join(
        [
            f"typing replay: {summary['keystrokes']} keystrokes every {summary['interval_ms']:g} ms of {summary['file']}",
            f"model: {summary['model']}",
            f"keystroke -> suggestion delivered: p50 {latency['p50']} ms, p90 {latency['p90']} ms, p99 {latency['p99']} ms"
            f" ({summary['suggestions_delivered']} delivered, {summary['empty_answers']} empty, {summary['cancelled_replies']} cancelled)",
            f"keystroke -> any answer: p50 {summary['keystroke_to_any_answer_ms']['p50']} ms, p99 {summary['keystroke_to_any_answer_ms']['p99']} ms",
            f"model passes: {summary['model_passes_run']} run for {summary['requests']} requests; avoided: "
            f"{avoided['typed_through_cache']} by the typed-through cache, "
            f"{avoided['debounce_or_superseded_before_model']} by debounce/supersede, "
            f"{avoided['cancelled_by_client_before_or_during_model']} by client cancellation; "
            f"{summary['model_runs_stopped_midway']} runs stopped midway",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())

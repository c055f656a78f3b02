"""`infill` command line: one subcommand per job, each a thin wrapper over a module.

This module sits above the front ends: it is the only one that knows all of them (the
language server, the live server, the batch contracts) and the engine. The lab (training,
evaluation, benchmarks: the top-level `lab/` folder) is not imported: it exists only in a
source checkout and runs there by its own entry, `python -m lab COMMAND`; `infill train`
and the other lab commands print that line and exit 2.

User mistakes (a missing file, a bad position, a corrupt model) print one line on
stderr and exit 2; they never print a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, TextIO

from engine.text import ANY_BREAK, UTF32, TextIndex
from engine.types import DEFAULT_MAX_BATCH, DenoiseStep, InfillError, InfillResult, SamplerSettings

# Why a completion came back empty, in words: shared with the live server and the playground.
from infill_lsp.empty_answer import EMPTY_ANSWER, REFUSED, explain_empty  # noqa: F401 (EMPTY_ANSWER: re-exported)

MAX_FILE_BYTES = 8_000_000


# The lab's commands: they run from a source checkout by the lab's own entry (lab/__main__.py),
# so the shipped package imports nothing of lab/. `infill COMMAND` only says where they went.
LAB_COMMANDS = {
    "corpus": "build the training corpus from pinned sources",
    "tokenizer": "train the BPE tokenizer on the corpus",
    "train": "train or resume the embedded model",
    "eval": "evaluate a model: HumanEval single-line infilling, held-out exact match",
    "bench": "speed and exact match vs the reference (LLaDA-style) sampler",
}


def lab_moved(command: str) -> Callable[[list[str]], int]:
    def say_where(argv: list[str]) -> int:
        print(f"infill {command}: a lab command; run `python -m lab {command} ...` from a source checkout of infill "
              "(the installed package ships only the runtime)", file=sys.stderr)
        return 2

    return say_where


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


# Subcommands that parse their own arguments: name -> (runner, help). Each runner is main(argv) -> int.
DELEGATED: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "lsp": (_lsp, "run the language server (stdio, or --tcp on loopback)"),
    "serve": (_serve, "run the HTTP API, WebSocket live rewrites and the playground (--replicas: on Ray Serve)"),
    "quantize": (_quantize, "write an int8/int4 quantized copy of a model directory"),
    "models": (_models, "list the model families infill can load"),
    "next-edit-batch": (_next_edit_batch, "next-edit suggestions for a JSONL batch (stdin -> stdout)"),
    **{name: (lab_moved(name), f"{help_text} (source checkout: python -m lab {name})") for name, help_text in LAB_COMMANDS.items()},
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


def _language_note(result: Any) -> str:
    """`language: python (from the file name)`, or `no language (unconstrained)`."""
    if result.language is None:
        return "no language (unconstrained)"
    where = {"request": "--language", "filename": "from the file name", "detected": "detected"}
    return f"language: {result.language} ({where.get(result.language_source, result.language_source)})"


def _source_note(result: Any) -> str:
    """`, from utils.py:120` when the middle is a line of the workspace (`, from the
    workspace` when its place is not known; `, edited from ...` for a line the model
    edited); nothing for the model's own."""
    if result.source not in ("workspace", "edited"):
        return ""
    verb = "edited from" if result.source == "edited" else "from"
    return f", {verb} {result.draft_origin}" if result.draft_origin else f", {verb} the workspace"


PROGRESS_EVERY_SECONDS = 5.0  # a request running longer says so on stderr this often


def _run_with_progress(steps: Iterator[DenoiseStep], stream: TextIO) -> InfillResult:
    """The stream's result; a line on `stream` every PROGRESS_EVERY_SECONDS while it runs
    (a long request must not look hung: a 3000-token one printed nothing for 11 minutes)."""
    started = last = time.perf_counter()
    result: Optional[InfillResult] = None
    for step in steps:  # to its end: the stream holds the engine's lock until it is exhausted
        if step.result is not None:
            result = step.result
            continue
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY_SECONDS:
            last = now
            written = sum(1 for piece in step.canvas if piece is not None)
            print(f"-- still working: {now - started:.0f} s, pass {step.step}, {written} of {len(step.canvas)} canvas tokens written", file=stream, flush=True)
    if result is None:
        raise RuntimeError("the engine's stream ended without a result")
    return result


def _server_url(args: argparse.Namespace) -> Optional[str]:
    """The running server `complete` asks: --server, else $INFILL_SERVER unless --model names
    a model directory to load here. None: load the model in this process."""
    import os

    url = args.server if args.server is not None else (os.environ.get("INFILL_SERVER", "").strip() if args.model is None else "")
    if not url:
        return None  # infill_lsp.remote (httpx, asyncio: ~0.2 s of imports) only when there is a server to ask
    from infill_lsp.remote import check_url

    if args.server is not None and args.model is not None:
        raise InfillError("--server and --model: the server answers with the model it serves; give one of them")
    try:
        return check_url(url)
    except ValueError as exc:
        raise InfillError(f"--server: {exc}") from None


def _complete_on_server(args: argparse.Namespace, url: str, prefix: str, suffix: str, settings: dict[str, Any],
                        workspace: Any = None, filename: Optional[str] = None) -> bool:
    """Ask the running `infill serve` at `url` (issue 35, item 8: no model load, no torch
    import in this process) and print its answer as a local run does. The server never
    reads this machine's disk, so the workspace travels as the text around its drafts'
    places (`infill.workspace_snippets`, as `infill lsp --remote` sends it): the server
    verifies the drafts a local run would. False, with a line on stderr, when the server
    cannot answer: the caller then loads the model here."""
    from infill_lsp.remote import RemoteConfig, RemoteUnavailable, complete_once, name_origin, read_token, snippets_for

    try:
        token = read_token(args.server_token_file)
    except ValueError as exc:
        raise InfillError(f"--server-token-file: {exc}") from None
    timeout = settings.get("deadline_seconds", SamplerSettings().deadline_seconds) + 30.0
    drafts = workspace.drafts(prefix, suffix, filename) if workspace is not None else []
    snippets = snippets_for(workspace, prefix, suffix, filename, drafts)
    try:
        result, model = complete_once(RemoteConfig(url, token, timeout_s=timeout), prefix, suffix, language=args.language,
                                      filename=filename or str(args.file), settings=settings, snippets=snippets)
    except RemoteUnavailable as exc:
        print(f"-- {exc}; loading the model here instead", file=sys.stderr)
        return False
    name_origin(result, drafts)  # the server saw snippets; the drafts here know their places
    if args.json:
        print(json.dumps({**result.to_dict(), "model": model, "server": url, "snippets_sent": len(snippets)}))
        return True
    _print_middle(result.middle)
    print(f"-- {result.tokens} tokens in {result.forwards} passes ({result.tokens_per_forward:.2f} tokens/pass), {result.ms:.1f} ms, stop: {result.stop_reason}, {_language_note(result)}{_source_note(result)}, model {model} on the server at {url} (no model loaded here; {len(snippets)} workspace snippets sent)", file=sys.stderr)
    if not result.middle.strip():
        print(f"-- {explain_empty(result.stop_reason)}", file=sys.stderr)
    return True


def _print_middle(middle: str) -> None:
    sys.stdout.write(middle)
    if not middle.endswith("\n"):
        sys.stdout.write("\n")
    sys.stdout.flush()  # the completion's line before the figures on stderr, in a terminal too


def cmd_complete(args: argparse.Namespace) -> int:
    """The middle at a cursor. Every check of the input (language, file, position, settings,
    server URL, workspace folder) answers before the model loads: the load takes seconds,
    most of them `import torch`, and a mistake should not wait for it."""
    _check_language(args.language)
    text = read_source_file(args.file)
    prefix, suffix = split_at(text, args.line, args.column)
    settings = {k: v for k, v in {"max_tokens": args.max_tokens, "constrained": args.constrained, "deadline_seconds": args.deadline}.items() if v is not None}
    SamplerSettings().replace(**settings)  # the schema's bounds, before seconds go into loading the model
    url = _server_url(args)
    folder = None if args.no_workspace else (args.workspace or default_workspace(args.file))
    workspace = None if folder is None else open_workspace(folder, sys.stderr)
    # Absolute: the index reads a relative path from the workspace's root, not from here.
    filename = str(args.file.resolve())
    if url is not None and _complete_on_server(args, url, prefix, suffix, settings, workspace, filename):
        return 0
    import engine  # torch: most of a call's wall time when the model loads here (`infill complete --help`)

    load_start = time.perf_counter()
    eng = engine.load(args.model)
    load_ms = (time.perf_counter() - load_start) * 1000
    # The language: --language, else the file's extension, else detected (a script without one).
    language = {"language": args.language, "filename": filename, "detect_language": True}
    steps = eng.stream(prefix, suffix, **language, workspace=workspace, **settings)
    result = _run_with_progress(steps, sys.stderr)
    if args.json:
        print(json.dumps({**result.to_dict(), "model": eng.model_name, "load_ms": round(load_ms, 1)}))
    else:
        _print_middle(result.middle)
        print(f"-- {result.tokens} tokens in {result.forwards} passes ({result.tokens_per_forward:.2f} tokens/pass), {result.ms:.1f} ms, stop: {result.stop_reason}, {_language_note(result)}{_source_note(result)}, model {eng.model_name} (loaded in {load_ms:.0f} ms)", file=sys.stderr)
        if not result.middle.strip():
            unconstrained = None
            if result.stop_reason in REFUSED:  # would the raw text differ? ask, rather than hint blindly
                unconstrained = eng.infill(prefix, suffix, **language, **{**settings, "constrained": False}).middle
            print(f"-- {explain_empty(result.stop_reason, unconstrained)}", file=sys.stderr)
    return 0


def default_workspace(file: Path) -> Optional[Path]:
    """The enclosing git repository's root, else the file's folder; the file's folder also
    when the repository is the home folder (dotfiles kept in git); None when the folder is
    the home folder or the file system's root (a file outside any project: indexing all of
    it is not what was asked)."""
    from engine.workspace import too_broad

    folder = file.resolve().parent
    for candidate in (folder, *folder.parents):
        try:
            if (candidate / ".git").exists() and too_broad(candidate) is None:
                return candidate
        except OSError:  # a folder above that cannot be looked into: no repository known there
            continue
    reason = too_broad(folder)
    if reason is not None:
        print(f"-- {reason}: no workspace indexed (--workspace DIR names one)", file=sys.stderr)
        return None
    return folder


def open_workspace(folder: Path, log: TextIO) -> Any:
    """The folder's index, brought up to date (progress on `log` when it takes a while), as
    the request's WorkspaceContext; None, with a line on `log`, when the index cannot be
    opened or written (the completion goes on without it). A folder that is not one, or is
    too broad to index (`/`, the home folder), is the user's error."""
    import sqlite3

    from engine.workspace import WorkspaceContext, WorkspaceIndex, WorkspaceRefused

    try:
        index = WorkspaceIndex(folder)
    except (NotADirectoryError, WorkspaceRefused) as exc:
        raise InfillError(f"--workspace: {exc}") from None
    except (OSError, sqlite3.Error) as exc:  # the cache folder cannot be written, the database is locked
        print(f"-- the workspace index could not be opened ({type(exc).__name__}: {exc}): completing without it", file=log)
        return None
    try:
        index.refresh(progress=_index_progress(log))
    except (OSError, sqlite3.Error) as exc:
        index.close()
        print(f"-- the workspace could not be indexed ({type(exc).__name__}: {exc}): completing without it", file=log)
        return None
    # One request: the copy rule's table of the workspace (engine/workspace/ngrams.py) is not
    # built for it, neither before it (seconds on a large repository, for one line) nor beside
    # it (the build would slow the request and be thrown away with the process; docs/workspace.md).
    return WorkspaceContext(index, copy_tables=False)


def _index_progress(log: TextIO, every: float = 2.0) -> Callable[[int, int, str], None]:
    """A refresh's progress callback: a line on `log` every `every` seconds."""
    last = [time.perf_counter()]

    def progress(done: int, total: int, path: str) -> None:
        now = time.perf_counter()
        if now - last[0] >= every and total:
            last[0] = now
            print(f"-- indexing the workspace: {done} of {total} files", file=log, flush=True)

    return progress


def cmd_index(args: argparse.Namespace) -> int:
    from engine.workspace import WorkspaceIndex, forget_index

    if args.forget:  # without opening the index: a folder refused or gone can be forgotten too
        removed = forget_index(args.folder)
        if removed is None:
            print(f"no index of {args.folder.resolve()} to remove")
        else:
            print(f"removed the index of {args.folder.resolve()} ({removed})")
        return 0
    try:
        index = WorkspaceIndex(args.folder)  # WorkspaceRefused (an InfillError) for / or the home folder
    except NotADirectoryError as exc:
        raise InfillError(str(exc)) from None
    report = index.refresh(progress=_index_progress(sys.stderr))
    if args.json:
        print(json.dumps({**asdict(report), "index": str(index.db_path)}))
    else:
        print("\n".join(report.lines_of_text()))
        print(f"index: {index.db_path}")
    return 0


def _max_batch(text: str) -> int:
    """--max-batch: a whole number from 1 to DEFAULT_MAX_BATCH."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= DEFAULT_MAX_BATCH:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..{DEFAULT_MAX_BATCH}")
    return value


def cmd_batch(args: argparse.Namespace) -> int:
    from infill_lsp.batch import run_batch

    return run_batch(sys.stdin, sys.stdout, model_dir=args.model, language=args.language, max_batch=args.max_batch)


COMPLETE_DESCRIPTION = """Write the middle at a position in a file.

Loading the model is most of a call's wall time, and `import torch` most of the load:
measured on a 2-core CPU shared with other work, a call took 4.5-6.5 s, of which
import torch 2.3-2.8 s, the engine's and grammars' imports 0.2-0.3 s, the weights and
tokenizer 0.2-0.3 s, the completion 0.2-0.4 s. From a script or an editor's external
command, start `infill serve` once and pass --server http://127.0.0.1:8765 (or set
INFILL_SERVER, and INFILL_TOKEN to the token it prints): a call then imports no torch
and loads nothing (0.8-1.4 s there, the same middles). The workspace is indexed here and
the text around its drafts' places goes with the request (the server never reads this
disk). The server's own limits apply then (--deadline is not sent). If the server cannot
answer, the model loads here. Mistakes in the input (file, position, settings, a missing
--workspace folder) are reported before anything loads."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infill", description="Local code completion with a diffusion language model.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("complete", help="write the middle at a position in a file", description=COMPLETE_DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", type=Path)
    p.add_argument("--line", type=int, required=True, help="1-based line of the cursor")
    p.add_argument("--column", type=int, required=True, help="1-based column of the cursor (characters)")
    p.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    p.add_argument("--language", default=None, help="language (default: from the file extension)")
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--constrained", action=argparse.BooleanOptionalAction, default=None, help="syntax-constrained commits (default on)")
    p.add_argument("--deadline", type=float, default=None, metavar="SECONDS", help="stop after this much work and print what was written (default 60; 0 = after one pass)")
    p.add_argument("--server", default=None, metavar="URL", help="ask the `infill serve` running at URL instead of loading the model here "
                   "(default: $INFILL_SERVER, unless --model is given); if it cannot answer, the model is loaded here")
    p.add_argument("--server-token-file", default=None, metavar="FILE", help="the server's token (first line of FILE; default: $INFILL_TOKEN)")
    p.add_argument("--json", action="store_true", help="print the middle with its figures as JSON")
    p.add_argument("--workspace", type=Path, default=None, metavar="DIR", help="the folder whose code the request draws on (default: the enclosing git root, else the file's folder; docs/workspace.md)")
    p.add_argument("--no-workspace", action="store_true", help="read no other file")
    p.set_defaults(handler=cmd_complete)

    p = sub.add_parser("index", help="index a workspace folder (what it holds, what it skipped and why)")
    p.add_argument("folder", type=Path)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--forget", action="store_true", help="delete the folder's index instead")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("batch", help="infill a JSONL batch: stdin -> stdout (contract in README.md)")
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--language", default=None, help="default language for lines without one")
    p.add_argument("--max-batch", type=_max_batch, default=None, metavar="N",
                   help=f"lines denoised together, sharing each forward pass (1-{DEFAULT_MAX_BATCH}, default {DEFAULT_MAX_BATCH}; 1: one at a time)")
    p.set_defaults(handler=cmd_batch)

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

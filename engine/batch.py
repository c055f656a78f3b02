"""`infill batch`: the stable JSONL contract that evaluations and other tools use.

Input line:  {"id": str, "prefix": str, "suffix": str, "language"?: str, "max_tokens"?: int, "constrained"?: bool}
Output line: {"id", "middle", "tokens", "forwards", "ms", ...more figures} — one per input
line, in input order. A bad line yields {"id": ... or null, "error": "..."} and the batch
goes on. Model loading is excluded from every line's `ms`.
"""
from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from typing import IO, Any, Optional, Union

from engine.batching import DEFAULT_MAX_BATCH
from engine.types import InfillError

OPTIONAL_SETTINGS = {"max_tokens": int, "constrained": bool}


class BadLine(ValueError):
    def __init__(self, message: str, item_id: Any = None):
        super().__init__(message)
        self.item_id = item_id


def parse_line(line: str) -> tuple[Any, dict[str, Any]]:
    """(id, request fields), or BadLine carrying the id (when readable) and the reason."""
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BadLine(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(item, dict):
        raise BadLine("each line must be a JSON object")
    item_id = item.get("id")
    try:
        return item_id, _fields(item)
    except ValueError as exc:
        raise BadLine(str(exc), item_id) from None


def _fields(item: dict[str, Any]) -> dict[str, Any]:
    for key in ("prefix", "suffix"):
        if not isinstance(item.get(key), str):
            raise ValueError(f"missing or non-string \"{key}\"")
    language = item.get("language")
    if language is not None and not isinstance(language, str):
        raise ValueError('"language" must be a string')
    settings = {}
    for key, kind in OPTIONAL_SETTINGS.items():
        if key in item and item[key] is not None:
            value = item[key]
            if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f'"{key}" must be a non-negative integer')
            if kind is bool and not isinstance(value, bool):
                raise ValueError(f'"{key}" must be true or false')
            settings[key] = value
    return {"prefix": item["prefix"], "suffix": item["suffix"], "language": language, **settings}


def run_batch(stdin: IO[str], stdout: IO[str], model_dir: Optional[Path] = None, language: Optional[str] = None, max_batch: int = DEFAULT_MAX_BATCH) -> int:
    """Lines are denoised together (engine/batching.py: up to `max_batch` at once, each
    with its own settings) and written in input order as soon as every line before them
    is done. A line's `ms` is its own engine time, from its context encoding to its
    result (not the time it waited for a place in the batch)."""
    import engine
    from engine.batching import BatchWorker, Ticket

    eng = engine.load(model_dir)  # an InfillError here ends the batch: there is no model to run
    worker = BatchWorker(eng, max_batch=max_batch)
    pending: deque[tuple[Any, Union[Ticket, dict[str, Any]]]] = deque()  # in input order

    def write_ready(wait_for_head: bool) -> None:
        while pending and (wait_for_head or not isinstance(pending[0][1], Ticket) or pending[0][1].done):
            item_id, outcome = pending.popleft()
            if isinstance(outcome, Ticket):
                try:
                    outcome = {"id": item_id, **outcome.wait().to_dict()}
                except InfillError as exc:
                    outcome = {"id": item_id, "error": str(exc)}
                except Exception as exc:  # a bug on one line: logged by the worker, the batch goes on
                    outcome = {"id": item_id, "error": f"internal error: {type(exc).__name__}: {exc}"}
            stdout.write(json.dumps(outcome) + "\n")
            stdout.flush()
            wait_for_head = False

    try:
        for raw in stdin:
            if not raw.strip():
                continue
            item_id = None
            try:
                item_id, request = parse_line(raw)
                lang = request.pop("language") or language
                pending.append((item_id, worker.submit(eng.job(request.pop("prefix"), request.pop("suffix"), lang, **request))))
            except BadLine as exc:
                pending.append((exc.item_id, {"id": exc.item_id, "error": str(exc)}))
            except InfillError as exc:
                pending.append((item_id, {"id": item_id, "error": str(exc)}))
            write_ready(wait_for_head=len(pending) >= 2 * max_batch)  # read ahead only so far
        while pending:
            write_ready(wait_for_head=True)
    finally:
        worker.close()
    return 0

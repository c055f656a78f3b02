"""`infill batch`: the stable JSONL contract that evaluations and other tools use.

Input line:  {"id": str, "prefix": str, "suffix": str, "language"?: str, "max_tokens"?: int, "constrained"?: bool}
Output line: {"id", "middle", "tokens", "forwards", "ms", ...more figures} — one per input
line, in input order. A bad line yields {"id": ... or null, "error": "..."} and the batch
goes on. Model loading is excluded from every line's `ms`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Optional

from engine.types import InfillError, SamplerSettings, SettingsError, check_knobs

# The sampler knobs a batch line may carry, validated by the engine's one settings schema.
BATCH_SETTINGS = ("max_tokens", "constrained")


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
    try:
        settings = check_knobs(SamplerSettings, {k: item[k] for k in BATCH_SETTINGS if item.get(k) is not None}, allowed=BATCH_SETTINGS)
    except SettingsError as error:
        raise ValueError(str(error)) from None
    return {"prefix": item["prefix"], "suffix": item["suffix"], "language": language, **settings}


def run_batch(stdin: IO[str], stdout: IO[str], model_dir: Optional[Path] = None, language: Optional[str] = None) -> int:
    import engine

    eng = engine.load(model_dir)  # an InfillError here ends the batch: there is no model to run
    for raw in stdin:
        if not raw.strip():
            continue
        item_id = None
        try:
            item_id, request = parse_line(raw)
            lang = request.pop("language") or language
            result = eng.infill(request.pop("prefix"), request.pop("suffix"), language=lang, **request)
            out = {"id": item_id, **result.to_dict()}
        except BadLine as exc:
            out = {"id": exc.item_id, "error": str(exc)}
        except InfillError as exc:
            out = {"id": item_id, "error": str(exc)}
        stdout.write(json.dumps(out) + "\n")
        stdout.flush()
    return 0

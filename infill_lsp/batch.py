"""`infill batch`: the stable JSONL contract that evaluations and other tools use.

Input line:  {"id": str, "prefix": str, "suffix": str, "language"?: str, "max_tokens"?: int (0..2048), "constrained"?: bool}
Output line: {"id", "middle", "tokens", "forwards", "ms", ...more figures} — one per input
line (a blank one too), in input order. A bad line (unknown language included) yields
{"id": ... or null, "error": "..."} and the batch goes on. Model loading is excluded from
every line's `ms`. The settings are checked by the engine's one schema
(`engine.types.check_knobs`), with max_tokens capped at MAX_TOKENS_LIMIT.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Optional

from engine.types import InfillError, SamplerSettings, SettingsError, check_knobs

# The sampler knobs a batch line may carry, validated by the engine's one settings schema;
# the batch contract caps max_tokens lower than the schema does.
BATCH_SETTINGS = ("max_tokens", "constrained")
MAX_TOKENS_LIMIT = 2048  # a middle longer than this is no completion; larger asks are refused


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
    if language is not None:
        check_language(language)
    try:
        raw = {k: item[k] for k in BATCH_SETTINGS if item.get(k) is not None}
        settings = check_knobs(SamplerSettings, raw, allowed=BATCH_SETTINGS, upper={"max_tokens": MAX_TOKENS_LIMIT})
    except SettingsError as error:
        raise ValueError(str(error)) from None
    return {"prefix": item["prefix"], "suffix": item["suffix"], "language": language, **settings}


def check_language(language: object) -> str:
    """The language name if the grammars know it; ValueError naming the known ones if not."""
    import grammars

    if not isinstance(language, str):
        raise ValueError('"language" must be a string')
    try:
        return grammars.get(language).name
    except grammars.UnknownLanguageError:
        known = ", ".join(spec.name for spec in grammars.languages())
        raise ValueError(f"unknown language {language!r}; known: {known}") from None


def run_batch(stdin: IO[str], stdout: IO[str], model_dir: Optional[Path] = None, language: Optional[str] = None) -> int:
    import engine

    if language is not None:
        try:
            check_language(language)
        except ValueError as exc:
            raise InfillError(f"--language: {exc}") from None
    eng = engine.load(model_dir)  # an InfillError here ends the batch: there is no model to run
    for raw in stdin:
        item_id = None
        try:
            if not raw.strip():  # the contract: one output line per input line, blank ones too
                raise BadLine("empty line: each line must be a JSON object")
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

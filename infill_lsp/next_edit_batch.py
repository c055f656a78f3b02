"""`infill next-edit-batch`: next-edit suggestions for a JSONL batch, stdin -> stdout.

Input line:
    {"id", "language"?, "text", "cursor": {"line", "character"},
     "history"?: [{"before": str, "after": str}, ...], "limits"?: {...}}
`text` is the current document; line and character are 0-based, characters counted in
Unicode code points. Each history entry (oldest first) is either two whole-document
snapshots or just the changed region (e.g. the changed lines before and after); both
reduce to the same changed lines. `limits` takes engine.next_edit.NextEditLimits fields.
Positions go through the engine's one codec (engine/text.py: code points, "\\n" lines).

Output line, one per input line in input order:
    {"id", "edits": [{"start": {"line","character"}, "end": {...}, "text", "confidence", "kind"}], "ms"}
Positions refer to `text` as sent. A bad line yields {"id", "error"} and the batch goes on.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, Any, Optional

from engine.text import NEWLINE, UTF32, TextIndex
from engine.types import InfillError


def _point(index: TextIndex, offset: int) -> dict:
    line, character = index.position_at(offset, UTF32)
    return {"line": line, "character": character}


def answer(eng: Any, item: Any) -> dict:
    """The output object for one parsed input line (errors included, never raised)."""
    if not isinstance(item, dict):
        return {"id": None, "error": "each line must be a JSON object"}
    item_id = item.get("id")
    try:
        text, cursor = item.get("text"), item.get("cursor")
        if not isinstance(text, str):
            raise InfillError('missing or non-string "text"')
        if not isinstance(cursor, dict):
            raise InfillError('"cursor" must be {"line": int, "character": int}')
        history = item.get("history") or []
        if not isinstance(history, list):
            raise InfillError('"history" must be a list of {"before", "after"}')
        limits = item.get("limits") or {}
        if not isinstance(limits, dict):
            raise InfillError('"limits" must be an object')
        language = item.get("language")
        result = eng.next_edit(text, cursor, history, language=language if isinstance(language, str) else None, **limits)
    except InfillError as error:
        return {"id": item_id, "error": str(error)}
    except TypeError as error:  # a limit of the wrong type reaching the dataclass
        return {"id": item_id, "error": f"bad limits: {error}"}
    index = TextIndex(text, NEWLINE)
    edits = [{"start": _point(index, e.start), "end": _point(index, e.end), "text": e.text, "confidence": round(e.confidence, 4), "kind": e.kind} for e in result.edits]
    return {"id": item_id, "edits": edits, "ms": round(result.ms, 3)}


def run(stdin: IO[str], stdout: IO[str], eng: Any) -> int:
    for raw in stdin:
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as error:
            out = {"id": None, "error": f"invalid JSON: {error.msg} at column {error.colno}"}
        else:
            out = answer(eng, item)
        stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        stdout.flush()
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    import engine

    parser = argparse.ArgumentParser(prog="infill next-edit-batch", description="Next-edit suggestions for a JSONL batch (stdin -> stdout).")
    parser.add_argument("--model", type=Path, default=None, help="model directory (default: the embedded model)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    eng = engine.load(args.model)  # an InfillError here ends the batch: there is no model
    return run(sys.stdin, sys.stdout, eng)


if __name__ == "__main__":
    sys.exit(main())

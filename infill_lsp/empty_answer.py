"""Why a completion came back empty, in words: one explanation for every surface that shows
one. `infill complete` prints it on stderr (infill_lsp/cli.py); the live protocol's `result`
frame carries it as `explanation` and the playground shows it (infill_lsp/live/frames.py).

The figures only say `stop: <reason>`; an empty answer with nothing more looks like a bug
when it is a refusal. Each surface names the knobs the sentence points to its own way
(`--max-tokens` on the command line, `max_tokens` in a live `settings` object).
"""
from __future__ import annotations

from typing import Mapping, Optional

# How a surface names the knobs an explanation points to.
CLI_KNOBS = {"max_tokens": "--max-tokens", "deadline": "--deadline", "unconstrained": "--no-constrained"}
LIVE_KNOBS = {"max_tokens": "max_tokens", "deadline": "the server's deadline_seconds",
              "unconstrained": "the setting constrained: false"}

EMPTY_ANSWER = {
    "rejected": "the syntax check refused what the model wrote: each middle it proposed would have left "
    "the code here unparseable, so infill shows nothing rather than broken code",
    "vetoed": "the syntax check refused every token the model proposed here, so infill shows nothing rather than broken code",
    "end_of_middle": "the model proposed nothing here (its answer was empty)",
    "max_tokens": "the model's text ran to {max_tokens} without a usable end",
    "empty": "{max_tokens} is 0",
    "deadline": "the request ran out of time ({deadline}) before the model wrote anything usable",
    "degenerate": "the model's text repeated itself (a loop, a line written twice, the line above the cursor "
    "again, or an import the file already has at its top), so infill shows nothing rather than a copy",
    "indentation": "the cursor's line is indented deeper than its block allows: no code can start there, "
    "so infill did not ask the model (remove some of the indentation)",
}

# Stop reasons where the syntax check hid what the model wrote: only for these is the
# unchecked text worth asking for (one more model run) and showing.
REFUSED = frozenset({"rejected", "vetoed"})


def explain_empty(stop_reason: str, unconstrained: Optional[str] = None, knobs: Mapping[str, str] = CLI_KNOBS) -> str:
    """Why the answer is empty. `unconstrained`: the middle the same request gives without
    the syntax check (asked only after a refusal); the unchecked run is suggested only when
    it would show something, never for an answer that is empty either way."""
    why = EMPTY_ANSWER.get(stop_reason)
    text = "no suggestion: " + (why.format(**knobs) if why is not None
                                else f"the completion stopped ({stop_reason}) before writing anything")
    if unconstrained is not None and unconstrained.strip():
        first = unconstrained.strip().splitlines()[0]
        text += f"; {knobs['unconstrained']} shows the model's raw text ({first[:60]!r}{'...' if len(first) > 60 else ''})"
    return text

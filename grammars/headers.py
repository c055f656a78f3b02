"""Block headers a line that must open a block can start with, per language.

Where the cursor's line must open a block (Python: the next line of code is indented
deeper than anything before it opened, python_check.opens_block; JavaScript and
TypeScript: a `}` below needs its `{` there, constraint.py `_opens_brace_block`), the model
alone writes a plain statement (`balance = 0` above an indented `return True`), which the
final check refuses. The engine then tries a candidate that starts with a header's keyword
(engine/request.py `InfillRun._header_seed`), and the constraint asks whether a header
would pass there at all. Both read these templates: each keyword and the rest of a header
it starts, so a keyword is scored only where its header would pass the final check (no
`else` without its `if`, no `try` without its `except`). Conditions are `x.y`, not `x`: in
a JavaScript class body `if (x) {` is a method named `if`, which the check accepts, and the
model's real condition then is not (`x.y` is no parameter list).
"""
from __future__ import annotations

_BRACE_HEADERS = {"if": " (x.y) {", "for": " (;;) {", "while": " (x.y) {", "switch": " (x.y) {", "try": " {", "} else {": "",
                  "} else if": " (x.y) {", "} catch": " (e) {"}
HEADER_WORDS: dict[str, dict[str, str]] = {
    "python": {"if": " x:", "for": " x in x:", "while": " x:", "with": " x:", "try": ":", "elif": " x:", "else": ":",
               "except": ":", "finally": ":", "def": " x():", "class": " x:"},
    "javascript": _BRACE_HEADERS,
    "typescript": _BRACE_HEADERS,
    "tsx": _BRACE_HEADERS,
}


def header(language: str, keyword: str) -> str:
    """The whole header `keyword` starts in `language` (`if (x.y) {`)."""
    return keyword + HEADER_WORDS[language][keyword]

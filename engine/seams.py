"""Where a middle meets the text around the cursor: what it must not repeat or add.

Pure functions on text, applied to every middle the engine returns (constrained or not):

- the suffix's own line break is never doubled: a middle at the end of a line often ends
  in a newline while the text after the cursor starts with one, and accepting it would
  add a blank line (Neovim then leaves the cursor on column 1 of an empty line);
- an empty bracket pair (or brackets alone) right after a closing bracket is no
  suggestion: after accepting `sum(values)` the model tends to offer `()` again.
"""
from __future__ import annotations

CLOSERS = ")]}"
BRACKETS = set("()[]{}")


def drop_doubled_newline(middle: str, suffix: str) -> str:
    """The middle without its trailing line break(s) when the suffix starts with one
    (after spaces or tabs); otherwise unchanged."""
    if not suffix.lstrip(" \t").startswith(("\n", "\r")):
        return middle
    body = middle.rstrip(" \t")
    if not body.endswith(("\n", "\r")):
        return middle
    return body.rstrip(" \t\r\n")


def only_brackets_after_closer(prefix: str, middle: str) -> bool:
    """Whether the middle is brackets alone (`()`, `)`, `[]`) typed right after a closing
    bracket: `sum(values)` + `()` is not what anyone means."""
    text = middle.strip()
    return bool(text) and set(text) <= BRACKETS and prefix.rstrip(" \t")[-1:] in CLOSERS


def tidy_middle(prefix: str, middle: str, suffix: str) -> str:
    """The middle as it should be shown: see the module docstring."""
    if only_brackets_after_closer(prefix, middle):
        return ""
    return drop_doubled_newline(middle, suffix)

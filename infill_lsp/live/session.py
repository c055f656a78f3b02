"""One live session: a document, its language and defaults, and the request in flight."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .document import Document
from .protocol import Range
from .scheduler import Job


@dataclass(eq=False)
class ActiveRequest:
    job: Job
    range: Range
    version: int  # document version the request's range refers to


@dataclass(eq=False)
class Session:
    id: str
    document: Document
    language: Optional[str]
    settings: dict[str, Any] = field(default_factory=dict)
    active: Optional[ActiveRequest] = None


def split_context(text: str, start: int, end: int, *, prefix_chars: int, suffix_chars: int) -> tuple[str, str]:
    """Prefix and suffix around [start, end), cut at line boundaries to bounded sizes.

    Cutting at a line boundary (rather than mid-line) keeps what the syntax constraint and
    the tokenizer see well-formed at the edges; the engine trims to its token budget anyway.
    """
    prefix = text[:start]
    if len(prefix) > prefix_chars:
        cut = len(prefix) - prefix_chars
        newline = prefix.find("\n", cut)
        prefix = prefix[newline + 1:] if newline != -1 else prefix[cut:]
    suffix = text[end:]
    if len(suffix) > suffix_chars:
        newline = suffix.rfind("\n", 0, suffix_chars)
        suffix = suffix[:newline + 1] if newline != -1 else suffix[:suffix_chars]
    return prefix, suffix

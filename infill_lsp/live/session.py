"""One live session: a document, its language and defaults, and the request in flight."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ..request_path import InFlight

from .document import Document
from .protocol import Range


@dataclass(eq=False)
class ActiveRequest:
    flight: InFlight  # its job on the engine worker
    request_id: Union[str, int]
    range: Range
    version: int  # document version the request's range refers to


@dataclass(eq=False)
class Session:
    id: str
    document: Document
    language: Optional[str]
    settings: dict[str, Any] = field(default_factory=dict)
    active: Optional[ActiveRequest] = None

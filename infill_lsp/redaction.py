"""Keep secrets (the servers' access tokens) out of every log line.

`protect(secret)` registers a secret; a filter on each handler of the root logger (and on
uvicorn's loggers, which have handlers of their own) then replaces it with "[redacted]"
wherever it appears: in the message, its arguments and the text of an attached
traceback. Records from libraries (websockets logs request lines and frames at DEBUG)
pass through the same handlers, so they are covered too; and because a
frame is logged cut to 75 characters, where a token could appear cut in two, the
websockets logger is also kept at INFO or above: frames and headers are never logged.
"""
from __future__ import annotations

import logging

REDACTED = "[redacted]"
_MIN_SECRET_CHARS = 4  # shorter strings would redact ordinary words


class SecretFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__("infill-secrets")
        self._secrets: set[str] = set()

    def add(self, secret: str) -> None:
        if len(secret) >= _MIN_SECRET_CHARS:
            self._secrets.add(secret)

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: log what there is, scrubbed
            message = f"{record.msg!s} {record.args!r}"
        clean = self.scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


_FILTER = SecretFilter()


def protect(secret: str) -> None:
    """Never log `secret` from now on (call after logging is configured)."""
    _FILTER.add(secret)
    root = logging.getLogger()
    if not root.handlers:  # nothing configured yet: the last-resort handler prints warnings
        logging.basicConfig()
    for handler in root.handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
    # uvicorn logs through handlers of its own, set up later and not propagating to the
    # root: a filter on its loggers themselves covers them (dictConfig keeps filters).
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        named = logging.getLogger(name)
        if _FILTER not in named.filters:
            named.addFilter(_FILTER)
    websockets = logging.getLogger("websockets")
    if websockets.getEffectiveLevel() < logging.INFO:
        websockets.setLevel(logging.INFO)


def scrub(text: str) -> str:
    """`text` with every protected secret replaced (for messages built outside logging)."""
    return _FILTER.scrub(text)

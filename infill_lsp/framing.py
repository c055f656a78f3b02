"""LSP base protocol framing: bytes in, message bodies (or framing errors) out.

A message is a header block (`Name: value` lines, then a blank line) and a body of exactly
`Content-Length` bytes. pygls' reader matches one exact header spelling with a regular
expression, reads whatever length it is told (a length of 10^11 is a MemoryError, a
5,000-digit one a ValueError: both end the server) and, on anything it does not
recognise, swallows input until it happens to meet a header again on a fresh line.

This decoder is lenient in what it accepts and strict in what it trusts:

* accepted: header names in any case, any spaces around the value, LF-only line ends,
  other headers (Content-Type) in any order, blank lines between messages;
* refused, with a one-line reason: a missing or non-numeric/negative/huge length, a
  header block longer than `max_header_bytes`, a line that is not a header where a header
  must be (a body with no header, binary junk, a missing blank line), a body that a new
  header interrupts (a Content-Length larger than the body sent).

After a refusal the decoder resynchronises on the next `Content-Length: N` line. That
line can never occur inside a valid JSON body (a raw line break cannot stand inside a
JSON string, and outside strings the words are not JSON), so searching for it is safe
even inside a body, and a lying length costs the message that lied, not the next one.
Memory is bounded by `max_body_bytes` plus `max_header_bytes` whatever arrives.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

MAX_HEADER_BYTES = 8 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024  # a 64 MiB document is far beyond what completion needs
_MAX_LENGTH_DIGITS = 12  # more digits than any length under the cap can have

# The resynchronisation point: a Content-Length header line, anywhere (junk without a
# line break may run straight into it). Case-insensitive, any blanks around the value.
_RESYNC = re.compile(rb"content-length:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
# RFC 9110 token characters for a header name.
_HEADER_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*")
# How much of a junk stream to keep while resynchronising: enough for a header line
# split across two reads (the length is capped at 12 digits; blanks are rare).
_RESYNC_TAIL = 128


@dataclass(frozen=True)
class Frame:
    """One message body, exactly as many bytes as its header said."""

    body: bytes


@dataclass(frozen=True)
class FramingError:
    """Input that is not a well-framed message; `problem` says why, for the client."""

    problem: str


Event = Union[Frame, FramingError]


class FrameDecoder:
    """Feed it bytes as they arrive; it returns the frames and errors they complete."""

    def __init__(self, max_header_bytes: int = MAX_HEADER_BYTES, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.max_header_bytes = max_header_bytes
        self.max_body_bytes = max_body_bytes
        self._buffer = bytearray()
        self._length: int | None = None  # the header block's Content-Length so far
        self._header_lines = 0  # lines of the current header block
        self._header_bytes = 0  # and its size so far
        self._body_length: int | None = None  # set while reading a body
        self._scanned = 0  # body bytes already searched for an interrupting header
        self._resyncing = False
        self._search_from = 0  # where resynchronisation looks for the next header
        self.skipped_bytes = 0  # input thrown away while resynchronising (for figures)

    # -- public ---------------------------------------------------------------------------
    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events: list[Event] = []
        while True:
            if self._resyncing:
                if not self._resync():
                    return events
            elif self._body_length is not None:
                if not self._read_body(events):
                    return events
            elif not self._read_header_line(events):
                return events

    def finish(self) -> list[Event]:
        """End of input: what was left is reported (a message cut short, junk)."""
        events: list[Event] = []
        if self._body_length is not None:
            events.append(FramingError(
                f"input ended inside a message body ({len(self._buffer)} of {self._body_length} bytes)"))
        elif self._buffer.strip() or self._header_lines:
            events.append(FramingError("input ended inside a message header"))
        self.skipped_bytes += len(self._buffer)
        self._buffer.clear()
        return events

    # -- states ---------------------------------------------------------------------------
    def _read_header_line(self, events: list[Event]) -> bool:
        end = self._buffer.find(b"\n", 0, self.max_header_bytes + 1)
        if end < 0:
            if len(self._buffer) > self.max_header_bytes:
                return self._refuse(events, f"a header line longer than {self.max_header_bytes} bytes", search_from=1)
            return False
        raw = bytes(self._buffer[:end])
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line.strip(b" \t"):
            del self._buffer[: end + 1]
            if self._header_lines == 0:
                return True  # a stray blank line between messages: harmless
            return self._end_of_header(events)
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            problem = ("no blank line after the header" if self._length is not None
                       else f"not a message header: {_show(line)}")
            return self._refuse(events, problem, search_from=0)
        self._header_lines += 1
        self._header_bytes += end + 1
        if self._header_bytes > self.max_header_bytes:
            return self._refuse(events, f"a header block longer than {self.max_header_bytes} bytes", search_from=end + 1)
        name, value = match.group(1).lower(), match.group(2)
        if name != b"content-length" and _RESYNC.search(self._buffer, 1, end + 1):
            # Junk glued to a real header ("P" + "Content-Length: 376") reads as a header
            # named "PContent-Length": start again at the real one inside it.
            return self._refuse(events, f"not a message header: {_show(line)}", search_from=1)
        if name == b"content-length":
            if not value.isdigit() or len(value) > _MAX_LENGTH_DIGITS:
                return self._refuse(events, f"Content-Length is not a byte count: {_show(value)}", search_from=end + 1)
            length = int(value)
            if length > self.max_body_bytes:
                return self._refuse(
                    events, f"Content-Length {length:,} is over the limit of {self.max_body_bytes:,} bytes",
                    search_from=end + 1)
            if self._length is not None and self._length != length:
                return self._refuse(events, "two different Content-Length headers", search_from=end + 1)
            self._length = length
        del self._buffer[: end + 1]
        return True

    def _end_of_header(self, events: list[Event]) -> bool:
        length = self._length
        self._length, self._header_lines, self._header_bytes = None, 0, 0
        if length is None:
            events.append(FramingError("a header without Content-Length"))
            return True
        self._body_length, self._scanned = length, 0
        return True

    def _read_body(self, events: list[Event]) -> bool:
        length = self._body_length
        assert length is not None
        # A header inside what should be the body: the length was too large (or the body
        # was cut short). Give up on this message and start again at that header.
        window = min(len(self._buffer), length)
        interrupted = _RESYNC.search(self._buffer, max(0, self._scanned - _RESYNC_TAIL), window)
        if interrupted is not None:
            self._body_length = None
            self.skipped_bytes += interrupted.start()
            del self._buffer[: interrupted.start()]
            events.append(FramingError(
                f"a new header began {interrupted.start()} bytes into a body of Content-Length {length}"))
            return True
        self._scanned = window
        if len(self._buffer) < length:
            return False
        # A header may also straddle the body's end ("...Conte" + "nt-Length: 52"): no
        # valid JSON ends with a prefix of "content-length:", so look past the end first.
        straddle = _straddling_header(self._buffer, length)
        if straddle == _WAIT:
            return False
        if straddle is not None:
            self._body_length = None
            self.skipped_bytes += straddle
            del self._buffer[:straddle]
            events.append(FramingError(f"a new header began {straddle} bytes into a body of Content-Length {length}"))
            return True
        events.append(Frame(bytes(self._buffer[:length])))
        del self._buffer[:length]
        self._body_length = None
        return True

    def _refuse(self, events: list[Event], problem: str, search_from: int) -> bool:
        events.append(FramingError(problem))
        self._length, self._header_lines, self._header_bytes = None, 0, 0
        self._resyncing = True
        self._search_from = search_from
        return True

    def _resync(self) -> bool:
        """Drop input up to the next Content-Length line; False when more input is needed."""
        start = min(self._search_from, len(self._buffer))
        match = _RESYNC.search(self._buffer, start)
        if match is None:
            keep = max(start, len(self._buffer) - _RESYNC_TAIL)
            self.skipped_bytes += keep
            del self._buffer[:keep]
            self._search_from = 0
            return False
        self.skipped_bytes += match.start()
        del self._buffer[: match.start()]
        self._resyncing = False
        self._search_from = 0
        return True


def _show(raw: bytes, limit: int = 40) -> str:
    """A short printable rendering of client bytes for an error message."""
    text = raw[:limit].decode("utf-8", "backslashreplace")
    return repr(text + ("…" if len(raw) > limit else ""))


_HEADER_NAME = b"content-length:"
_WAIT = -1


def _straddling_header(buffer: bytearray, length: int) -> int | None:
    """Where a Content-Length line that starts inside the body's last bytes begins; None
    when there is none, _WAIT when more input is needed to tell."""
    for k in range(min(len(_HEADER_NAME) - 1, length), 0, -1):
        start = length - k
        if bytes(buffer[start:length]).lower() != _HEADER_NAME[:k]:
            continue
        if _RESYNC.match(buffer, start):
            return start
        return _WAIT if len(buffer) - start < 40 else None
    return None

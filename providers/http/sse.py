"""Server-sent events: an incremental decoder over the raw bytes of a streamed reply.

Used by every streaming provider. Lines may end in LF, CRLF (Gemini sends CRLF)
or CR alone, and a leading UTF-8 BOM is skipped, as the SSE spec says; an event
ends at a blank line. At the end of the body, complete ``data:`` lines not yet
followed by a blank line still form an event, marked ``complete=False`` so the
reader can tell a cut stream from a malformed one; a half-received line is dropped.

The bytes come from the network, so the decoder is linear in the bytes fed (each
byte is scanned and copied a bounded number of times, however the body is cut
into chunks) and refuses a line or an event over ``max_bytes`` with
:class:`SSELimitExceeded` as soon as it is known to be over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from providers.http.body import BodyTooLarge

__all__ = ["DEFAULT_MAX_SSE_BYTES", "SSEDecoder", "SSEEvent", "SSELimitExceeded"]

DEFAULT_MAX_SSE_BYTES = 32 * 1024 * 1024
"""The longest line, and the most data one event may carry, by default (32 MiB)."""

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")


class SSELimitExceeded(BodyTooLarge):
    """A line or an event of the stream is longer than the decoder's ``max_bytes``."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(limit, f"a stream {what} is longer than {limit} bytes")
        self.what = what


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One event: its ``event:`` type ("message" when absent) and its joined ``data:`` lines.

    ``complete`` is False for an event the body ended inside (no blank line
    after it): it may be cut short.
    """

    event: str
    data: str
    complete: bool = True


class SSEDecoder:
    """Feed bytes in arrival order with :meth:`feed`; call :meth:`close` at the end of the body.

    ``max_bytes`` bounds one line (in bytes, before decoding) and the data of one
    event (its ``data:`` values and the newlines joining them); going past it
    raises :class:`SSELimitExceeded`.
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_event",
        "_head",
        "_max",
        "_partial",
        "_partial_size",
        "_skip_lf",
    )

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_SSE_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"SSEDecoder.max_bytes: {max_bytes!r} must be an int >= 1")
        self._max = max_bytes
        # The line being received, in pieces: joined once when its end arrives, so a
        # long line costs one copy, not one per chunk (linear, not quadratic).
        self._partial: list[bytes] = []
        self._partial_size = 0
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._head: bytes | None = b""  # the first bytes, while they may still be a BOM
        self._skip_lf = False  # the last chunk ended in CR: a leading LF ends no line

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by ``chunk``."""
        events: list[SSEEvent] = []
        limit = self._max
        # Each line read here, not by a method call a line: a reply's events are a
        # dozen lines or more, and most arrive in one chunk.
        lines = self._lines(chunk)
        tail = lines.pop()
        for raw in lines:
            if not raw:  # a blank line ends the event
                if self._data:
                    events.append(SSEEvent(self._event or "message", "\n".join(self._data)))
                self._reset()
                continue
            if len(raw) > limit:
                raise SSELimitExceeded("line", limit)
            line = raw.decode("utf-8", "replace")
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                # Characters, not bytes, once decoded: never more than the line's bytes.
                self._data_size += len(value) + (1 if self._data else 0)
                if self._data_size > limit:
                    raise SSELimitExceeded("event", limit)
                self._data.append(value)
            elif field == "event":
                self._event = value
        if tail:
            self._partial_size += len(tail)
            if self._partial_size > limit:
                raise SSELimitExceeded("line", limit)
            self._partial.append(tail)
        return events

    def _lines(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes, then the start of the next (empty when none)."""
        if self._head is not None:
            started = self._start(chunk)
            if started is None:
                return [b""]
            chunk = started
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            lines = _LINE_END.split(chunk)
            self._skip_lf = chunk.endswith(b"\r")
        else:
            lines = chunk.split(b"\n")
        if len(lines) > 1 and self._partial:  # the first line's start came before
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial = []
            self._partial_size = 0
        return lines

    def _start(self, chunk: bytes) -> bytes | None:
        # The body's first bytes without a BOM; None while they may still be a split BOM.
        head = self._head + chunk if self._head else chunk
        if len(head) < len(_BOM) and _BOM.startswith(head):
            self._head = head
            return None
        self._head = None
        return head.removeprefix(_BOM)

    def close(self) -> list[SSEEvent]:
        """The last event when the body ended after complete lines but without a blank line."""
        self._partial = []
        self._partial_size = 0
        events: list[SSEEvent] = []
        if self._data:
            events.append(SSEEvent(self._event or "message", "\n".join(self._data), False))
        self._reset()
        return events

    def _reset(self) -> None:
        self._data = []
        self._data_size = 0
        self._event = ""

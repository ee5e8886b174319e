"""Server-sent events: an incremental decoder over the raw bytes of a streamed reply.

Used by every streaming provider. Lines may end in LF, CRLF (Gemini sends CRLF)
or CR alone, and a leading UTF-8 BOM is skipped, as the SSE spec says; an event
ends at a blank line. At the end of the body, complete ``data:`` lines not yet
followed by a blank line still form an event, marked ``complete=False`` so the
reader can tell a cut stream from a malformed one; a half-received line is dropped.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "sse_events"]

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n|\r|\n")


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
    """Feed bytes in arrival order with :meth:`feed`; call :meth:`close` at the end of the body."""

    __slots__ = ("_buffer", "_data", "_event", "_head", "_skip_lf")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._head: bytes | None = b""  # the first bytes, while they may still be a BOM
        self._skip_lf = False  # the last chunk ended in CR: a leading LF ends no line

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by ``chunk``."""
        if self._head is not None:
            started = self._start(chunk)
            if started is None:
                return []
            chunk = started
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buffer = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buffer:
            lines = _LINE_END.split(buffer)
            self._skip_lf = buffer.endswith(b"\r")
        else:
            lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        events: list[SSEEvent] = []
        for raw in lines:
            self._line(raw.decode("utf-8", "replace"), events)
        return events

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
        self._buffer = b""
        events: list[SSEEvent] = []
        if self._data:
            events.append(SSEEvent(self._event or "message", "\n".join(self._data), False))
        self._data = []
        self._event = ""
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                events.append(SSEEvent(self._event or "message", "\n".join(self._data)))
            self._data = []
            self._event = ""
            return
        if line.startswith(":"):
            return
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value


async def sse_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[SSEEvent]:
    """The events of a streamed body given as byte chunks."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.close():
        yield event

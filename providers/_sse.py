"""Server-sent events: an incremental decoder over the raw bytes of a streamed reply.

Used by every streaming provider. Lines may end in LF or CRLF (Gemini sends
CRLF); an event ends at a blank line. At the end of the body, complete
``data:`` lines not yet followed by a blank line still form an event, but a
half-received line is dropped: a cut stream must look cut, not malformed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "sse_events"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One event: its ``event:`` type ("message" when absent) and its joined ``data:`` lines."""

    event: str
    data: str


class SSEDecoder:
    """Feed bytes in arrival order with :meth:`feed`; call :meth:`close` at the end of the body."""

    __slots__ = ("_buffer", "_data", "_event")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events completed by ``chunk``."""
        buffer = self._buffer + chunk if self._buffer else chunk
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()
        events: list[SSEEvent] = []
        for raw in lines:
            self._line(raw.removesuffix(b"\r").decode("utf-8", "replace"), events)
        return events

    def close(self) -> list[SSEEvent]:
        """The last event when the body ended after complete lines but without a blank line."""
        self._buffer = b""
        events: list[SSEEvent] = []
        self._line("", events)
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

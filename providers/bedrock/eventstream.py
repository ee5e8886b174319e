"""AWS event-stream frames (``application/vnd.amazon.eventstream``), decoded by botocore.

Each frame is a prelude (total and headers length, CRC32), headers, a payload and
a CRC32 of the whole message; ``botocore.eventstream.EventStreamBuffer`` checks both
CRCs and the lengths. Fed chunk by chunk it would copy its whole buffer on every
chunk (quadratic in a large frame), so :class:`FrameReader` collects a frame's
bytes first, from its declared length, and hands botocore one whole frame at a time:
linear in the body, each frame bounded by ``max_bytes`` (the reply's cap).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import InvalidOutput, StreamInterrupted
from providers.http.body import BodyTooLarge

__all__ = ["Frame", "FrameReader"]

_PRELUDE = 12


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame: its ``:message-type`` (``event``, ``exception``, ``error``),
    ``:event-type`` or ``:exception-type`` / ``:error-code``, and its payload."""

    message_type: str
    kind: str
    payload: bytes
    error_message: str = ""


class FrameReader:
    """Whole frames out of a byte stream, each checked by botocore's decoder."""

    __slots__ = ("_buffer", "_eventstream", "_max_bytes", "_need", "_pending", "_provider", "_size")

    def __init__(self, *, max_bytes: int, provider: str) -> None:
        import botocore.eventstream

        self._eventstream = botocore.eventstream
        # One buffer for every frame: it holds one whole frame at a time, emptied by next().
        self._buffer = botocore.eventstream.EventStreamBuffer()
        self._max_bytes = max_bytes
        self._provider = provider
        self._pending: list[bytes] = []
        self._size = 0
        self._need = _PRELUDE  # bytes the frame being collected needs, once its length is known

    def feed(self, chunk: bytes) -> list[Frame]:
        """The frames ``chunk`` completes (``InvalidOutput`` on a corrupt one)."""
        self._pending.append(chunk)
        self._size += len(chunk)
        out: list[Frame] = []
        while self._size >= self._need:
            data = b"".join(self._pending)
            if self._need == _PRELUDE:
                self._need = self._frame_length(data)
                self._pending = [data]
                continue
            frame, rest = data[: self._need], data[self._need :]
            self._pending, self._size, self._need = [rest], len(rest), _PRELUDE
            out.append(self._decode(frame))
        return out

    def _frame_length(self, data: bytes) -> int:
        total: int = struct.unpack_from("!I", data)[0]
        if total > self._max_bytes:
            raise BodyTooLarge(self._max_bytes, f"an event-stream frame of {total} bytes")
        if total < _PRELUDE + 4:
            raise InvalidOutput(
                f"event-stream frame length {total} is too short", provider=self._provider
            )
        return total

    def _decode(self, frame: bytes) -> Frame:
        buffer = self._buffer
        buffer.add_data(frame)
        failure: InvalidOutput | None = None
        try:
            message = next(buffer)
        except (self._eventstream.ParserError, StopIteration, ValueError, struct.error) as exc:
            failure = InvalidOutput(
                f"corrupt event-stream frame ({type(exc).__name__})", provider=self._provider
            )
        if failure is not None:
            raise failure  # outside the except block: no decoder error as context
        return _frame(message.headers, message.payload)

    def close(self) -> list[Frame]:
        """At the end of the body: no frame (``StreamInterrupted`` when it ended inside one)."""
        if self._size:
            raise StreamInterrupted(
                f"stream ended inside an event-stream frame ({self._size} bytes of it)",
                provider=self._provider,
            )
        return []


def _frame(headers: dict[str, Any], payload: bytes) -> Frame:
    mtype = str(headers.get(":message-type", "event"))
    if mtype == "exception":
        kind = str(headers.get(":exception-type", ""))
    elif mtype == "error":
        kind = str(headers.get(":error-code", ""))
        return Frame(mtype, kind, payload, str(headers.get(":error-message", ""))[:500])
    else:
        kind = str(headers.get(":event-type", ""))
    return Frame(mtype, kind, payload)

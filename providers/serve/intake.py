"""Reading a client's request body: a size cap, inflation in slices, a deadline and a rate.

The servers leave bodies encoded (see :mod:`providers.serve.protocol`);
:func:`read_body` hands an encoded body's raw bytes to
:func:`providers.http.body.read_bounded`, the one place that inflates gzip/deflate a
slice at a time against the cap, so a 1 MiB gzip bomb is refused (413) having cost a
slice, not its inflated size (a compressed body is inflated twice: first counting,
then keeping). A body of declared length is read up to that length, no further.
Time is bounded twice: the whole body within ``body_timeout``, and after
``body_grace`` seconds at least ``body_min_rate`` bytes a second on average, so a
client trickling its body gives its in-flight place back long before the deadline.
"""

from __future__ import annotations

import asyncio
from asyncio import CancelledError
from collections.abc import AsyncIterator

from providers.http.body import BodyTooLarge, BodyUndecodable, bounded_chunks, read_bounded
from providers.serve.exchange import Exchange
from providers.serve.failures import BadRequest
from providers.serve.settings import GatewaySettings

__all__ = ["read_body"]


async def read_body(ex: Exchange, settings: GatewaySettings) -> bytes:
    """The decoded body within the cap (413), the deadline and the minimum rate (408)."""
    limit = settings.max_body_bytes
    declared = _content_length(ex.header("content-length"))
    if declared > limit:
        raise _too_large(limit)
    encoding = ex.header("content-encoding")
    try:
        raw = await _paced(ex, settings, declared)
        if not encoding or encoding.strip().lower() == "identity":
            return raw
        # Inflate once to count, keeping nothing, then again to keep: a bomb is refused
        # having held one slice, not everything up to the cap (8 at once held 128 MiB).
        async for _ in bounded_chunks(_once(raw), encoding, limit):
            pass
        return await read_bounded(_once(raw), encoding, limit)
    except BodyTooLarge:
        raise _too_large(limit) from None
    except BodyUndecodable:  # its message quotes the coding the client sent
        raise BadRequest(
            "the body's Content-Encoding is not gzip, deflate or identity, or its data is corrupt"
        ) from None
    except TimeoutError:
        raise BadRequest(_too_slow(settings), status=408) from None


def _too_large(limit: int) -> BadRequest:
    # Made only when raised: every request used to build (and drop) one.
    return BadRequest(f"the body passed {limit} bytes", status=413, kind="too_large")


def _content_length(value: str | None) -> int:
    """The declared length, 0 when absent or not a number (the server refuses those)."""
    return int(value) if value is not None and value.isdigit() and len(value) < 20 else 0


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


def _too_slow(settings: GatewaySettings) -> str:
    return (
        f"the body did not arrive within {settings.body_timeout:g}s, or came slower than "
        f"{settings.body_min_rate} bytes/s after the first {settings.body_grace:g}s"
    )


async def _paced(ex: Exchange, settings: GatewaySettings, declared: int) -> bytes:
    """The raw body; ``BodyTooLarge`` past the cap, ``TimeoutError`` when a read would end
    past the deadline or leave the average rate since the grace period below
    ``body_min_rate``. Reading stops at a ``declared`` length: the server gives no more."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    deadline = start + settings.body_timeout
    rated = start + settings.body_grace  # then received / min_rate seconds more of body
    limit, received = settings.max_body_bytes, 0
    parts: list[bytes] = []
    # One timer for the whole body, moved on after each chunk (one per read cost a timer
    # and a context each, and the read after the last byte two more).
    with _Due(loop, min(deadline, rated)) as due:
        async for data in ex.body():
            received += len(data)
            if received > limit:
                raise BodyTooLarge(limit)
            parts.append(data)
            if received == declared:
                break
            due.move(min(deadline, rated + received / settings.body_min_rate))
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Due:
    """``asyncio.timeout_at(when)`` for the body's reads, as a plain ``with``: the reading
    task is cancelled at ``when`` (or when :meth:`move` says), and the cancellation it
    caused alone leaves as ``TimeoutError``; one from elsewhere (the client left) stays a
    ``CancelledError``. asyncio's own (two coroutines, its state an enum) cost ~18k
    instructions a request over the loop's timer itself (valgrind, uvloop)."""

    __slots__ = ("cancelling", "fired", "handle", "loop", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self.loop, self.fired = loop, False
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("the body is read in a task")
        self.task, self.cancelling = task, task.cancelling()
        self.handle = loop.call_at(when, self._fire)

    def move(self, when: float) -> None:
        """The deadline is now ``when`` (a timer fired already stays fired)."""
        if not self.fired:
            self.handle.cancel()
            self.handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self.fired = True
        self.task.cancel()

    def __enter__(self) -> _Due:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: object, tb: object) -> None:
        self.handle.cancel()
        # As asyncio's: a fired timer takes its cancellation back; TimeoutError only when
        # no other cancellation came too.
        if self.fired and self.task.uncancel() <= self.cancelling and kind is CancelledError:
            raise TimeoutError from None

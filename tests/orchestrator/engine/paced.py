"""Streaming providers on fake time, for deadline and hedging tests.

A :class:`Ticker` moves a :class:`FakeClock` forward one millisecond per loop
turn while a test runs; a :class:`Paced` provider yields each item of its script
at a fake time after its call started, so several providers (and the engine's
deadlines) share one timeline, as they would on the real clock.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterable
from typing import Any

from orchestrator import Request, Response, Usage
from orchestrator.tasks import cancel_and_wait
from orchestrator.testing import FakeClock

#: A script item: wait here until the call is cancelled.
HANG = object()


async def until(clock: FakeClock, at: float) -> None:
    """Wait (on fake time moved by a :class:`Ticker`) until ``clock.now() >= at``."""
    while clock.now() < at:
        await asyncio.sleep(0)


class Ticker:
    """``async with Ticker(clock):`` fake time advances ``step`` seconds per loop turn."""

    def __init__(self, clock: FakeClock, step: float = 0.001) -> None:
        self.clock, self.step = clock, step
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.clock.advance(self.step)
            await asyncio.sleep(0)

    async def __aenter__(self) -> Ticker:
        self.task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.task is not None
        await cancel_and_wait(self.task)


class Paced:
    """A streaming provider: ``script`` is ``(seconds after the call started, item)`` pairs.

    An item is a text chunk (``""`` is a keep-alive), a ``ToolCallDelta``, an
    exception (raised), or :data:`HANG`. After the script, the final Response
    (``final``, or the joined text with ``usage``). ``open`` counts streams not
    yet closed; ``closed`` those whose generator ran its cleanup.
    """

    def __init__(
        self,
        name: str,
        clock: FakeClock,
        script: Iterable[tuple[float, Any]],
        *,
        final: Response | None = None,
        usage: Usage | None = None,
        **attrs: Any,
    ) -> None:
        self.name, self.clock, self.script = name, clock, list(script)
        self.final, self.usage = final, usage
        self.calls = self.open = self.closed = 0
        self.requests: list[Request] = []
        for key, value in attrs.items():
            setattr(self, key, value)

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        self.calls += 1
        self.open += 1
        self.requests.append(request)
        t0 = self.clock.now()
        parts: list[str] = []
        try:
            for at, item in self.script:
                await until(self.clock, t0 + at)
                if item is HANG:
                    await until(self.clock, math.inf)
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, str):
                    parts.append(item)
                yield item
            yield self.final or Response("".join(parts), usage=self.usage)
        finally:
            self.open -= 1
            self.closed += 1

    async def complete(self, request: Request) -> Response:
        final: Response | None = None
        async for item in self.stream(request):
            if isinstance(item, Response):
                final = item
        assert final is not None
        return final

"""Time as a dependency: the real clock and the interface a fake one implements."""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Where the engine gets time: monotonic ``now()``, epoch ``wall()``, ``sleep``, ``timeout``.

    Inject a :class:`orchestrator.testing.FakeClock` in tests to assert delay
    schedules and deadlines without waiting.
    """

    def now(self) -> float:
        """Monotonic seconds, for durations and deadlines."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch, for timestamps on attempts."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[object]:
        """A context manager raising ``TimeoutError`` when ``now()`` passes ``deadline``."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic``, ``time.time``, ``asyncio.sleep``, ``asyncio.timeout``."""

    __slots__ = ()

    # The functions themselves, not methods calling them: the engine asks the time a few
    # times per call (a method around time.monotonic cost 0.3 us on a loaded machine).
    now = staticmethod(time.monotonic)
    wall = staticmethod(time.time)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[object]:
        if deadline is None:
            return asyncio.timeout(None)
        # asyncio.timeout_at works on the loop's clock, which is monotonic like now().
        loop = asyncio.get_running_loop()
        return asyncio.timeout_at(loop.time() + (deadline - time.monotonic()))

    def __repr__(self) -> str:
        return "SystemClock()"


SYSTEM_CLOCK = SystemClock()

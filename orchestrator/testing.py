"""Test helpers, public API: a fake clock and event capture.

Use :class:`FakeClock` to run a ``FallbackAgent`` on fake time: sleeps return
at once (recorded in ``.sleeps``), time jumps forward, and deadlines fire when
fake time passes them. Use :func:`capture_events` to assert on structlog events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, MutableMapping
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any

__all__ = ["FakeClock", "capture_events"]


class FakeClock:
    """A clock for tests: ``sleep(s)`` records ``s``, advances time by ``s`` and returns at once.

    ``now()`` starts at ``start``; ``wall()`` is ``now()`` plus ``epoch``.
    Deadlines from :meth:`timeout_at` fire (as ``TimeoutError``) as soon as any
    sleep or :meth:`advance` moves fake time past them, so a provider that
    "hangs" by awaiting ``clock.sleep(1000)`` is cut at its deadline.
    """

    def __init__(self, start: float = 0.0, *, epoch: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self.epoch = epoch
        self.sleeps: list[float] = []
        self._timeouts: list[tuple[float, asyncio.Timeout]] = []

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self.epoch + self._now

    def advance(self, seconds: float) -> None:
        """Move fake time forward (not recorded as a sleep); fires passed deadlines."""
        if seconds < 0:
            raise ValueError(f"FakeClock.advance: seconds={seconds!r} must be >= 0")
        self._now += seconds
        self._fire()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(float(seconds))
        if seconds > 0:
            self.advance(seconds)
        # Let other tasks (and a fired timeout's cancellation) run, like a real sleep would.
        await asyncio.sleep(0)

    def timeout_at(self, deadline: float | None) -> AbstractAsyncContextManager[object]:
        if deadline is not None and deadline <= self._now:
            # Already past: expire at the first await, as the real clock would.
            return asyncio.timeout_at(asyncio.get_running_loop().time())
        cm = asyncio.timeout(None)
        if deadline is not None:
            self._timeouts.append((deadline, cm))
        return cm

    def _fire(self) -> None:
        keep = []
        loop_time: float | None = None
        for deadline, cm in self._timeouts:
            if deadline <= self._now:
                if loop_time is None:
                    loop_time = asyncio.get_running_loop().time()
                # RuntimeError: not entered yet or already exited: nothing to cut.
                with contextlib.suppress(RuntimeError):
                    cm.reschedule(loop_time)
            elif not cm.expired():
                keep.append((deadline, cm))
        self._timeouts = keep

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now})"


@contextmanager
def capture_events() -> Iterator[list[MutableMapping[str, Any]]]:
    """Capture the structlog events the engine emits, as a list of dicts.

    Thin wrapper over ``structlog.testing.capture_logs`` that also turns on
    the engine's events while active (they are cheap no-ops otherwise). On the
    way out it restores the structlog configuration it found: left unconfigured
    when it was (``capture_logs`` alone leaves structlog marked configured, and
    every later call in the process would print events).
    """
    import structlog
    import structlog.testing

    from orchestrator import events

    was_configured = structlog.is_configured()
    processors = structlog.get_config()["processors"]
    if not isinstance(processors, list):  # capture_logs edits the list in place
        structlog.configure(processors=list(processors))
    try:
        with structlog.testing.capture_logs() as logs, events.enabled():
            yield logs
    finally:
        if not isinstance(processors, list):
            structlog.configure(processors=processors)
        if not was_configured:
            # Unconfigured means builtin defaults: nothing else to put back.
            structlog.reset_defaults()

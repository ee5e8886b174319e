"""A hedged call's first child, run in the caller's own task until a race needs it.

Most calls of a hedged chain are answered by the first child before its hedge
delay; for those, a lane task, an event and a future are pure cost. So the first
child runs inline (:func:`drive`): a call that completes without waiting builds
nothing more; one that waits arms the hedge's timer, and only when the hedge is
due does the race's watcher task start and the call become the race's first lane,
seen through an :class:`Adopted` future (done when the inline call ends;
cancelling it, when a hedge won, cancels the caller's task, which the race takes
back with :meth:`Adopted.taken_back`) (:mod:`orchestrator.engine.hedging`).
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

__all__ = ["Adopted", "drive", "resume"]


def drive(coro: Coroutine[Any, Any, Any], suspended: Callable[[], None]) -> Awaitable[Any]:
    """Await ``coro`` in the current task, calling ``suspended()`` once, when it first waits."""
    return resume(coro, None, suspended)


@types.coroutine
def resume(
    coro: Coroutine[Any, Any, Any], pending: Any, suspended: Callable[[], None] | None = None
) -> Generator[Any, Any, Any]:
    """Go on awaiting ``coro``, already sent its first ``None``, which waits on ``pending``
    (what it yielded): what ``await coro`` would have done from there. With ``suspended``
    (:func:`drive`), ``coro`` is not started yet: it starts now, and ``suspended()`` is
    called when it first waits (one generator for both: each is a frame on every resume)."""
    if suspended is not None:
        try:
            pending = coro.send(None)
        except StopIteration as done:
            return done.value
        suspended()
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as e:  # a cancellation (or anything thrown in) goes to the call
            try:
                pending = coro.throw(e)
            except StopIteration as done:
                return done.value
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as done:
                return done.value


class Adopted(asyncio.Future[Any]):
    """The first lane's call running in ``caller`` (its task): done when the call ends;
    ``cancel()`` cancels the caller's task while the call runs (the race cut it)."""

    def __init__(self, caller: asyncio.Task[Any]) -> None:
        super().__init__()
        self.caller = caller
        self.cut = False

    def cancel(self, msg: Any = None) -> bool:
        if self.done() or self.cut:
            return False
        self.cut = True
        return self.caller.cancel(msg)

    def taken_back(self) -> bool:
        """After the call raised ``CancelledError``: whether the race's cut caused it alone
        (the caller's own cancellation, if any, stays pending and is re-raised)."""
        return self.cut and self.caller.uncancel() == 0

    def ended(self, outcome: Any = None, error: BaseException | None = None) -> None:
        """The inline call ended with ``outcome`` or ``error`` (``CancelledError``: cut)."""
        if self.done():
            return
        if isinstance(error, asyncio.CancelledError):
            super().cancel()
        elif error is not None:
            self.set_exception(error)
        else:
            self.set_result(outcome)

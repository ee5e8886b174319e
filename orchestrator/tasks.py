"""Stopping a task we own without swallowing the caller's own cancellation; blocking runs."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["blocking_twin", "cancel_and_wait", "raise_if_cancel_requested", "run_blocking"]

T = TypeVar("T")
P = ParamSpec("P")


def run_blocking(start: Callable[[], Coroutine[Any, Any, T]], what: str, instead: str) -> T:
    """Run the coroutine ``start()`` makes on a new event loop (the ``run_sync`` of scripts).

    Refused inside a running loop (``RuntimeError`` naming ``what`` and the call to
    write ``instead``), checked before the coroutine exists. The check ends before the
    run starts, so an error the run raises carries no ``RuntimeError: no running event
    loop`` as its context.
    """
    if _loop_running():
        raise RuntimeError(f"{what}: called inside a running event loop; use '{instead}'")
    return asyncio.run(start())


def blocking_twin(
    run: Callable[P, Coroutine[Any, Any, T]], what: str, instead: str
) -> Callable[P, T]:
    """The blocking twin of the coroutine function ``run`` (a ``run_sync`` method: same
    parameters, each call through ``run_blocking``); use it so the two cannot drift."""

    @functools.wraps(run)
    def run_sync(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_blocking(lambda: run(*args, **kwargs), what, instead)

    run_sync.__name__ = what.rpartition(".")[2]
    run_sync.__qualname__ = what
    run_sync.__doc__ = (
        f"Blocking ``{run.__name__}`` for scripts; not for use inside a running event loop."
    )
    return run_sync


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has finished; absorb how it ended.

    Use it to stop a task the caller owns (a stream's run, a background sync,
    a listener) when its outcome no longer matters. The task's own
    ``CancelledError`` and any error it ends with are absorbed. If the
    *caller* is cancelled while waiting (a timeout, a TaskGroup), that is
    re-raised: awaiting a task forwards the caller's cancellation into it, so
    both surface as the same ``CancelledError`` and only the caller's count of
    pending cancellations (``Task.cancelling()``) tells them apart.
    """
    task.cancel()
    caller = asyncio.current_task()
    pending = caller.cancelling() if caller is not None else 0
    try:
        await task
    except (asyncio.CancelledError, Exception):
        # A cancellation of the caller that arrives while the task is already done is
        # thrown here too (never lost), so checking in this handler covers every case.
        if caller is not None and caller.cancelling() > pending:
            raise


def raise_if_cancel_requested() -> None:
    """Raise ``CancelledError`` if someone asked to cancel the current task.

    Call it at the top of each turn of a background task's loop. A library awaited
    inside the loop may swallow the cancellation (on Python 3.11, ``asyncio.wait_for``
    drops one that lands as the awaited write finishes; redis-py writes that way), and
    a loop that never sees it runs for ever: ``asyncio.run`` cancels each task once and
    waits for it, so the process never exits. The request count
    (``Task.cancelling()``) survives the swallowing, so it is the check that holds.
    Only for a task's own loop: inside ``asyncio.timeout`` or a TaskGroup the count
    is theirs to settle.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError

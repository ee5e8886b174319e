"""orchestrator.tasks: a background loop ends on a cancellation a library swallowed."""

from __future__ import annotations

import asyncio
import contextlib

from orchestrator.tasks import raise_if_cancel_requested


async def _swallowing_io() -> None:
    """What 3.11's ``asyncio.wait_for`` does when a write finishes as the cancel lands."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(0)


async def test_a_loop_ends_on_a_cancellation_swallowed_inside_it() -> None:
    turns = 0

    async def loop() -> None:
        nonlocal turns
        while True:
            raise_if_cancel_requested()
            turns += 1
            await _swallowing_io()

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    task.cancel()
    async with asyncio.timeout(1.0):  # without the check the loop would spin for ever
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert task.cancelled()
    assert turns < 5


async def test_a_task_nobody_cancelled_goes_on() -> None:
    raise_if_cancel_requested()  # no exception: the check only reads the request count

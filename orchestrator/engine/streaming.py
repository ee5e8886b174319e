"""Streaming runs: text chunks as they arrive, with the same retries and hand-overs as ``run``.

:class:`StreamRun` is the consumer's side (the queue, the task); how each attempt
streams into the queue is the run's :class:`~orchestrator.engine.delivery.Streamed`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from orchestrator.engine.delivery import Streamed
from orchestrator.engine.run import Run
from orchestrator.tasks import cancel_and_wait
from orchestrator.types import Attempt, Request, Result

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.routing.router import Keys

__all__ = ["Chunks", "StreamRun"]

_END: Any = object()


class Chunks:
    """The chunks on their way from the run's task to the consumer: the run's delivery
    puts them (:meth:`put_nowait`), ``__anext__`` takes them; a future only for a consumer
    waiting on none (an :class:`asyncio.Queue` did a dozen calls a chunk for the same)."""

    __slots__ = ("items", "waiters")

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.waiters: list[asyncio.Future[None]] = []

    def put_nowait(self, item: Any) -> None:
        """Add ``item``; wake whoever waits."""
        self.items.append(item)
        if self.waiters:
            waiters, self.waiters = self.waiters, []
            for waiter in waiters:
                if not waiter.done():  # a consumer cancelled while it waited
                    waiter.set_result(None)

    async def arrived(self) -> None:
        """Wait until there is a chunk."""
        while not self.items:
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            await waiter


class StreamRun:
    """``async with agent.stream(request) as s: async for chunk in s: ...``, then ``s.result``.

    The chain runs in a task of its own; chunks reach the consumer through a
    queue. Leaving the ``async with`` block early cancels the run; nothing is
    left running. With ``progress``, :data:`~orchestrator.PROGRESS` (an empty string) also
    comes for each provider event that moves the stream without text (a block boundary,
    the stop reason, usage): what a relay needs to keep its client in step. Errors
    (``FallbackError``, a terminal error, a mid-stream failure with ``mid_stream="raise"``)
    are raised from the ``async for``.
    """

    def __init__(
        self,
        agent: FallbackAgent,
        request: Request,
        mode: Literal["raise", "continue"],
        timeout: float | timedelta | None,
        keys: Keys | None = None,
        progress: bool = False,
    ) -> None:
        self._agent = agent
        self._keys = keys
        self._request = request
        self._mode = mode
        self._timeout = timeout
        self._progress = progress
        self._chunks = Chunks()
        self._run: Run | None = None
        self._task: asyncio.Task[Result] | None = None
        self._delivery: Streamed | None = None

    async def __aenter__(self) -> StreamRun:
        delivery = self._delivery = Streamed(self._chunks, self._mode)
        delivery.progress = self._progress
        self._run = Run.start(
            self._agent, self._request, None, self._timeout, delivery, keys=self._keys
        )
        self._task = asyncio.create_task(self._drive(self._run))
        return self

    async def _drive(self, run: Run) -> Result:
        try:
            return await run.execute()
        finally:
            self._chunks.put_nowait(_END)

    def __aiter__(self) -> StreamRun:
        return self

    async def __anext__(self) -> str:
        if self._task is None:
            raise RuntimeError("StreamRun: use 'async with agent.stream(...) as s' first")
        chunks = self._chunks
        if not chunks.items:
            await chunks.arrived()
        item = chunks.items[0]
        if item is _END:  # left in place: later __anext__ calls end too
            await self._task  # raises the run's error, if any
            raise StopAsyncIteration
        text: str = chunks.items.popleft()
        return text

    async def __aexit__(self, *exc_info: object) -> None:
        task = self._task
        if task is not None and not task.done():
            if self._delivery is not None:
                self._delivery.left = True
            await cancel_and_wait(task)  # the consumer's own cancellation still propagates
        elif task is not None and not task.cancelled():
            task.exception()  # mark retrieved: the consumer already saw it or left early

    @property
    def result(self) -> Result:
        """The final Result, once the stream has ended successfully.

        ``RuntimeError`` before the stream ended, or when the consumer left it early
        (the run was cancelled: its attempts, the cut call included, are in
        :attr:`attempts`); the run's own error when it failed.
        """
        task = self._task
        if task is None or not task.done():
            raise RuntimeError("StreamRun.result: the stream has not finished yet")
        if task.cancelled():  # not the caller's cancellation: the stream was left early
            raise RuntimeError(
                "StreamRun.result: the stream was left before it finished, so there is no "
                "result (s.attempts holds the calls made)"
            )
        return task.result()

    @property
    def answering(self) -> str | None:
        """The provider whose text the consumer received first (``None`` before any text, or
        when the engine made the text itself). Known at the first chunk, unlike ``result``:
        a gateway names it in headers it must send before the run ends."""
        return self._delivery.source if self._delivery is not None else None

    @property
    def attempts(self) -> tuple[Attempt, ...]:
        """Every attempt so far (also after a failure)."""
        return tuple(self._run.log.attempts) if self._run is not None else ()

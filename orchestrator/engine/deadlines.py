"""Deadlines that see inside a call: the first content, and every gap without progress.

A provider's ``first_token_timeout`` bounds the time from the start of a call to
its first content; its ``idle_timeout`` bounds each gap after that without
progress. Content is a non-empty text chunk or a
:class:`~orchestrator.types.ToolCallDelta`. Progress is content or any protocol
event that says the stream moves (a block or message boundary, usage, the end):
vendor parsers yield :data:`PROGRESS` for those. Keep-alives (SSE comments,
Anthropic's ``ping``; a plain ``""``) are neither, so they reset no deadline.

Streams are watched by default: a streamed run's vendor providers
(``reports_progress``) that set no idle deadline get :data:`DEFAULT_IDLE_TIMEOUT`,
so a stall with the connection open is seen without waiting for the whole
attempt's timeout. ``run`` is not
streamed for that default; it streams only for deadlines a user set.

A provider may yield its final Response as soon as its content is complete
(Anthropic's ``message_delta`` with the stop reason, OpenAI's usage chunk): the rest
of the stream (its tail: the terminator) is not waited for, so a stream that never
sends its terminator, or stalls before it, still answers at once (the connection is
closed rather than reused).

The engine, not each provider, keeps this watch: a child with either deadline
(its own attribute, else the :class:`~orchestrator.FallbackAgent` default) is
called through :class:`Watched`, which streams even for ``run`` and assembles
the same :class:`~orchestrator.types.Response` from the stream's final one. A
provider without ``stream`` gets only the overall timeout. When a deadline
fires, the provider's stream is cancelled where it waits (its connection is
released, no task is left) and the call fails with :class:`FirstTokenTimeout`
or :class:`StreamStalled` (both ``ProviderTimeout``: transient, retried per
policy, then handed over).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.clock import Clock
from orchestrator.engine.inline import resume
from orchestrator.errors import FirstTokenTimeout, StreamInterrupted, StreamStalled
from orchestrator.types import Request, Response, ToolCallDelta
from orchestrator.units import Seconds, seconds_or_none

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "PROGRESS",
    "Watch",
    "Watched",
    "assemble",
    "watched",
]

DEFAULT_IDLE_TIMEOUT = 20.0
"""Seconds without progress after the first content before a streamed call is stalled,
for children and agents that set no ``idle_timeout``. Every protocol event counts, so
a healthy stream's gaps are those between tokens (well under a second; a server-side
tool or a loaded server: a few seconds); 20 s cannot cut it, and still sees a stall
10 s before a 30 s attempt timeout would."""


class _Progress(str):
    """The type of :data:`PROGRESS` (an empty ``str``, so text consumers skip it)."""

    __slots__ = ()


PROGRESS: str = _Progress()
"""Yielded by a provider's ``stream`` for a protocol event that carries progress but no
text (a block or message boundary, usage, the stop reason): it resets the idle
deadline. An empty string; compared by identity (a plain ``""`` is a keep-alive)."""


@dataclass(frozen=True, slots=True)
class Watch:
    """The two deadlines of one child, in seconds (``None``: not watched)."""

    first_token: float | None = None
    idle: float | None = None
    #: Whether ``run`` streams to keep the watch (False: only the default idle deadline,
    #: which watches streamed runs; ``run`` calls ``complete`` as it would unwatched).
    for_run: bool = True

    @classmethod
    def of(cls, first_token: Seconds | None, idle: Seconds | None, owner: str) -> Watch | None:
        """Validated deadlines (the one :func:`~orchestrator.units.seconds` rule); None if none."""
        ft = seconds_or_none(first_token, f"{owner}.first_token_timeout")
        idle_s = seconds_or_none(idle, f"{owner}.idle_timeout")
        return None if ft is None and idle_s is None else cls(ft, idle_s)


def watched(provider: Any, default: Watch | None, clock: Clock) -> Any:
    """What the engine calls for ``provider``: itself, or a :class:`Watched` view of it.

    The provider's own ``first_token_timeout`` / ``idle_timeout`` win, each on its
    own; ``default`` (the agent's) fills the ones it leaves ``None``, and
    :data:`DEFAULT_IDLE_TIMEOUT` the idle one left then, for a provider whose
    ``reports_progress`` is true (the vendor providers: every protocol event says the
    stream moves, so a gap is a stall; a function's gaps may be its own work), for
    streamed runs only unless a deadline was set. A provider without ``stream`` is
    returned as it is: only the overall timeout applies.
    """
    if not callable(getattr(provider, "stream", None)):
        return provider
    name = f"{type(provider).__name__}({provider.name!r})"
    own = Watch.of(
        getattr(provider, "first_token_timeout", None),
        getattr(provider, "idle_timeout", None),
        name,
    )
    own, default = own or Watch(), default or Watch()
    ft = default.first_token if own.first_token is None else own.first_token
    idle = default.idle if own.idle is None else own.idle
    if idle is None and getattr(provider, "reports_progress", False) is True:
        return Watched(provider, Watch(ft, DEFAULT_IDLE_TIMEOUT, for_run=ft is not None), clock)
    if ft is None and idle is None:
        return provider
    return Watched(provider, Watch(ft, idle), clock)


Seen = Callable[[Any], None]
"""Told of a streamed item (see :func:`assemble`)."""


class Watched:
    """A streaming provider under its deadlines; the engine calls this instead of it.

    ``assembled`` streams the provider and returns its final Response, telling a
    callback of each item (a streamed delivery, a hedge's claim), failing with
    :class:`FirstTokenTimeout` / :class:`StreamStalled` when content is late;
    ``complete`` is ``assembled`` (or the provider's own, under the default idle
    deadline alone).
    """

    __slots__ = ("clock", "name", "provider", "watch")

    def __init__(self, provider: Any, watch: Watch, clock: Clock) -> None:
        self.provider, self.watch, self.clock = provider, watch, clock
        self.name: str = provider.name

    @property
    def wrapped(self) -> Any:
        """The provider under these deadlines (telemetry describes it, not this view)."""
        return self.provider

    def complete(self, request: Request) -> Awaitable[Response]:
        """The provider's reply, streamed under the deadlines and assembled (or, under
        the default idle deadline alone, its own ``complete``)."""
        if not self.watch.for_run:
            # Its own call, not a coroutine around it: a layer that only forwards costs a
            # frame and a pass on every resume, on every buffered call.
            call: Awaitable[Response] = self.provider.complete(request)
            return call
        return self.assembled(request)

    def assembled(
        self, request: Request, seen: Seen | None = None, first: Seen | None = None
    ) -> Awaitable[Response]:
        """The provider's final Response, its stream read under the deadlines (each wait for
        content bounded: the first-token one until the first content, then the idle one),
        ``seen`` and ``first`` told as :func:`assemble` tells them."""
        return _assembled(self.provider.stream(request), self.name, seen, first, self)

    async def _waited(self, step: Any, pending: Any, deadline: float, chunks: int) -> Any:
        """The item ``step`` waits for (on ``pending``), within ``deadline``: else the
        deadline's error (first-token before any content, idle after)."""
        cm = self.clock.timeout_at(deadline)
        try:
            async with cm:
                return await resume(step, pending)
        except TimeoutError:
            if not getattr(cm, "expired", lambda: False)():
                raise  # the provider's own timeout, or an outer deadline
        if chunks == 0:
            raise FirstTokenTimeout(
                f"no content within first_token_timeout={self.watch.first_token:g}s",
                provider=self.name,
            )
        raise StreamStalled(
            f"no content for idle_timeout={self.watch.idle:g}s after {chunks} chunks",
            provider=self.name,
        )

    def __repr__(self) -> str:
        return f"Watched({self.provider!r}, {self.watch!r})"


def assemble(
    stream: AsyncIterator[Any], name: str, seen: Seen | None = None, first: Seen | None = None
) -> Awaitable[Response]:
    """The final Response of ``stream`` (closed either way); ``StreamInterrupted`` without one.
    ``seen``: told of every other item (a streamed delivery hands them on); ``first``: of
    the first content, or of the Response when none came before (a hedge's lane claims its
    race then). A :class:`Watched` provider is assembled by :meth:`Watched.assembled`."""
    return _assembled(aiter(stream), name, seen, first, None)


async def _assembled(
    agen: AsyncIterator[Any],
    name: str,
    seen: Seen | None,
    first: Seen | None,
    watched: Watched | None,
) -> Response:
    """:func:`assemble` and :meth:`Watched.assembled` in one loop (``watched``: under its
    deadlines), with no generator or coroutine of the engine between the provider and it
    on each item, nor a call of its own per item. Content, which claims a hedge and moves
    the idle deadline, is a non-empty str or a tool-call delta."""
    chunks = 0
    deadline: float | None = None
    idle: float | None = None
    now: Callable[[], float] | None = None
    if watched is not None:
        now, idle, ft = watched.clock.now, watched.watch.idle, watched.watch.first_token
        deadline = None if ft is None else now() + ft
    try:
        while True:
            step: Any = anext(agen)  # an awaitable with send(), as any coroutine has
            if deadline is None:
                item = await step
            else:  # this loop runs per item of every call: a timer only for a wait
                try:
                    pending = step.send(None)
                except StopIteration as ready:
                    # Ready without waiting (the rest of a body already received): no
                    # timer. Most items of a stream are; a timer each cost more than them.
                    item = ready.value
                else:
                    assert watched is not None  # only a watched stream has a deadline
                    item = await watched._waited(step, pending, deadline, chunks)
            if isinstance(item, str):  # text; PROGRESS and a keep-alive are empty
                content = item != ""
            elif isinstance(item, Response):
                if first is not None and chunks == 0:
                    first(item)
                return item  # the answer is complete: the stream's tail is not waited for
            else:
                content = isinstance(item, ToolCallDelta)
            if content:
                chunks += 1
                if first is not None and chunks == 1:
                    first(item)
                deadline = None if idle is None or now is None else now() + idle
            elif item is PROGRESS and chunks and idle is not None and now is not None:
                deadline = now() + idle  # (a keep-alive moves no deadline)
            if seen is not None:
                seen(item)
    except StopAsyncIteration:
        pass
    finally:  # now, not later by a task of the loop's (as an unclosed one would be)
        aclose = getattr(agen, "aclose", None)
        if aclose is not None:
            await aclose()
    raise StreamInterrupted("stream ended without its final message", provider=name)

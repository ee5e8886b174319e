"""FunctionProvider: any sync or async callable as a provider."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

from orchestrator.capacity.values import Budget, Limits, checked
from orchestrator.config.spec import BuildContext, Flag, ImportPath, PositiveFloat, ProviderSpec
from orchestrator.errors import InvalidOutput
from orchestrator.keywords import KeywordChecked
from orchestrator.policy import RetryPolicy, retry_policy_or_none
from orchestrator.types import Request, Response
from orchestrator.units import Seconds, seconds_or_none

__all__ = ["FunctionProvider", "FunctionSpec"]


class FunctionProvider(KeywordChecked):
    """Wrap ``fn(request) -> str | Response`` (sync or async) as a provider.

    ``fn`` receives the :class:`~orchestrator.Request`. An async generator
    function that yields text chunks makes a streaming provider. Exceptions are
    passed through untouched: one outside the taxonomy counts as transient.
    A sync ``fn`` runs in a worker thread (``run_in_thread=True``, the default)
    so it cannot block the event loop; a timeout abandons, but cannot kill, it.
    Use ``retry_policy=`` for this provider's own :class:`RetryPolicy`, and
    ``first_token_timeout=`` / ``idle_timeout=`` (seconds) for deadlines inside a
    call: the engine then streams it and fails over when content is late (a
    function that is not an async generator streams its whole reply at once).
    ``limits=`` / ``budget=``: its quota and spend (:mod:`orchestrator.capacity`).
    """

    def __init__(
        self,
        fn: Callable[[Request], Any],
        *,
        name: str | None = None,
        run_in_thread: bool = True,
        retry_policy: RetryPolicy | None = None,
        first_token_timeout: Seconds | None = None,
        idle_timeout: Seconds | None = None,
        limits: Limits | None = None,
        budget: Budget | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionProvider.fn: expected a callable, got {type(fn).__name__}")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"FunctionProvider.name: {name!r} must be a non-empty str")
        self._fn = fn
        self.name: str = name or getattr(fn, "__name__", None) or type(fn).__name__
        self._async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        self._agen = inspect.isasyncgenfunction(fn)
        self._thread = run_in_thread
        self.retry_policy = retry_policy_or_none(retry_policy, "FunctionProvider")
        self.limits, self.budget = checked(limits, budget, "FunctionProvider")
        # Read by the engine, which watches the stream (orchestrator.engine.deadlines).
        self.first_token_timeout = seconds_or_none(
            first_token_timeout, "FunctionProvider.first_token_timeout"
        )
        self.idle_timeout = seconds_or_none(idle_timeout, "FunctionProvider.idle_timeout")

    async def complete(self, request: Request) -> Response:
        """Call the function once and wrap its return value in a Response."""
        if self._agen:
            parts = [c async for c in self._fn(request)]
            return self._wrap("".join(str(p) for p in parts))
        if self._async:
            out = await self._fn(request)
        elif self._thread:
            # Carry exceptions out of the thread ourselves: asyncio would turn a
            # TimeoutError into a new object, and callers must see the original.
            ok, out = await asyncio.to_thread(_capture, self._fn, request)
            if not ok:
                raise out
            if inspect.isawaitable(out):  # e.g. lambda r: some_async_fn(r)
                out = await out
        else:
            out = self._fn(request)
            if inspect.isawaitable(out):
                out = await out
        return self._wrap(out)

    async def stream(self, request: Request) -> AsyncIterator[str | Response]:
        """Yield chunks from an async-generator function (or the whole reply as one chunk)."""
        if not self._agen:
            response = await self.complete(request)
            yield response.text
            yield response
            return
        parts: list[str] = []
        async for chunk in self._fn(request):
            text = str(chunk)
            parts.append(text)
            yield text
        yield Response("".join(parts))

    def _wrap(self, out: Any) -> Response:
        if isinstance(out, Response):
            return out
        if isinstance(out, str):
            return Response(out)
        raise InvalidOutput(
            f"function returned {type(out).__name__}; return a str or a Response",
            provider=self.name,
        )

    def __repr__(self) -> str:
        return f"FunctionProvider(name={self.name!r})"


def _capture(fn: Callable[[Request], Any], request: Request) -> tuple[bool, Any]:
    try:
        return True, fn(request)
    except Exception as e:
        return False, e


# -- the chain file's ``type: function`` -------------------------------------------


class FunctionSpec(ProviderSpec):
    """``type: function`` in a chain file: ``path: "package.module:function"``."""

    order = 90
    type: Literal["function"]
    path: ImportPath
    run_in_thread: Flag = True
    first_token_timeout: PositiveFloat | None = None
    idle_timeout: PositiveFloat | None = None

    def build(self, ctx: BuildContext) -> FunctionProvider:
        return FunctionProvider(
            ctx.hook("path", self.path),
            name=ctx.name,
            run_in_thread=self.run_in_thread,
            first_token_timeout=self.first_token_timeout,
            idle_timeout=self.idle_timeout,
        )

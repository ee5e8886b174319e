"""The models a gateway serves: each agent and each workflow of a chain file, by name."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from orchestrator import FallbackAgent
from orchestrator.types import Attempt, Request, Result

__all__ = ["Chunks", "Model", "Models"]


class Chunks(Protocol):
    """A running stream: text chunks, then ``result`` (``FallbackAgent.stream``'s shape)."""

    def __aiter__(self) -> AsyncIterator[str]: ...

    @property
    def result(self) -> Result: ...


@dataclass(frozen=True)
class Model:
    """One served model: an agent (streams) or a workflow (answers whole, as one chunk)."""

    name: str
    node: Any
    kind: str  # "agent" or "workflow"

    def run(self, request: Request, affinity: str | None = None) -> Awaitable[Result]:
        """Run the agent or workflow once (``affinity``: the call's key, for an agent)."""
        if self.kind == "agent":  # the agent's own run: a coroutine around it only forwarded
            result: Awaitable[Result] = self.node.run(request, **_keyed(affinity))
            return result
        return self._run_workflow(request)

    async def _run_workflow(self, request: Request) -> Result:
        started, wall = time.monotonic(), time.time()
        response = await self.node.complete(request)
        took = time.monotonic() - started
        # One attempt, the workflow's: it carries the steps' summed usage to the reply.
        usage, cost = response.usage, response.cost_usd
        attempt = Attempt(self.name, None, 1, wall, took, usage=usage, cost_usd=cost)
        return Result(
            response.text, response.model, (attempt,), took, tool_calls=response.tool_calls
        )

    def stream(
        self, request: Request, affinity: str | None = None
    ) -> AbstractAsyncContextManager[Chunks]:
        """``async with model.stream(request) as s: async for chunk in s``, then ``s.result``."""
        if self.kind == "agent":
            stream: AbstractAsyncContextManager[Chunks]
            # A chain's text-less events too, as keep-alives in step with the upstream.
            progress = {"progress": True} if isinstance(self.node, FallbackAgent) else {}
            stream = self.node.stream(request, **_keyed(affinity), **progress)
            return stream
        return _whole(self, request)

    def model_of(self, provider: str | None) -> str | None:
        """The model name of the provider called ``provider`` in this agent's chain (nested
        chains included), or None: what a reply names when that provider answered."""
        pending = [self.node] if self.kind == "agent" else []
        while pending:
            node = pending.pop()
            children = getattr(node, "children", None)
            if isinstance(children, tuple):
                pending.extend(children)
            elif getattr(node, "name", None) == provider:
                model = getattr(node, "model", None)
                return model if isinstance(model, str) else None
        return None


def _keyed(affinity: str | None) -> dict[str, str]:
    """``affinity=`` for a call that has a key (a node without routing takes none)."""
    return {} if affinity is None else {"affinity": affinity}


class _Whole:
    def __init__(self, result: Result) -> None:
        self.result = result

    async def __aiter__(self) -> AsyncIterator[str]:
        if self.result.text:
            yield self.result.text


@asynccontextmanager
async def _whole(model: Model, request: Request) -> AsyncIterator[Chunks]:
    yield _Whole(await model.run(request))


class Models:
    """The served models by name, entered (connection pools open) for the gateway's life."""

    def __init__(self, agents: Mapping[str, Any], workflows: Mapping[str, Any]) -> None:
        self.by_name: dict[str, Model] = {n: Model(n, a, "agent") for n, a in agents.items()}
        self.by_name.update({n: Model(n, w, "workflow") for n, w in workflows.items()})
        self._agents = list(agents.values())
        self._stack = AsyncExitStack()

    @classmethod
    def from_config(cls, config: Any) -> Models:
        """The agents and workflows of a loaded chain file (``orchestrator.config.Config``)."""
        return cls(config.agents, config.workflows)

    def get(self, name: str) -> Model | None:
        return self.by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self.by_name)

    def health_stores(self) -> list[Any]:
        """The distinct health stores the agents share (for ``/readyz``)."""
        stores = {id(a.health_store): a.health_store for a in self._agents}
        return [s for s in stores.values() if s is not None]

    async def __aenter__(self) -> Models:
        try:
            for agent in self._agents:
                await self._stack.enter_async_context(agent)
        except BaseException:
            await self._stack.aclose()  # close the ones already entered
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stack.aclose()

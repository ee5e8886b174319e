"""What the engine does per call for features the chain does not use (issue 22): a call
pays a branch for them, not work. Counted, on fake time."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from orchestrator import FallbackAgent, Request, Response
from orchestrator.engine import hedging
from orchestrator.engine.deadlines import DEFAULT_IDLE_TIMEOUT, Watch, Watched
from orchestrator.testing import FakeClock


class Vendor:
    """A streaming provider that reports progress (a vendor's): the engine watches it."""

    reports_progress = True

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Request) -> Response:
        await asyncio.sleep(0)
        return Response(text=f"{self.name} answer")

    async def stream(self, request: Request) -> AsyncIterator[object]:
        yield Response(text=f"{self.name} answer")


async def test_a_buffered_call_under_the_default_idle_deadline_is_the_providers_own() -> None:
    provider = Vendor("gpt")
    watched = Watched(provider, Watch(None, DEFAULT_IDLE_TIMEOUT, for_run=False), FakeClock())
    call = watched.complete(Request("hi"))
    try:  # main: a coroutine of Watched.complete around it (a layer that only forwards)
        assert call.cr_code is Vendor.complete.__code__  # type: ignore[attr-defined]
    finally:
        call.close()  # type: ignore[attr-defined]
    assert (await watched.complete(Request("hi"))).text == "gpt answer"


@pytest.fixture
def hedge_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of ``hedging.can_hedge`` (the per-call hedging check)."""
    asked: list[int] = []
    real = hedging.can_hedge

    def counted(run: object, idx: int) -> bool:
        asked.append(idx)
        return real(run, idx)  # type: ignore[arg-type]

    monkeypatch.setattr(hedging, "can_hedge", counted)
    return asked


async def test_a_chain_of_one_provider_asks_no_hedging_question(
    clock: FakeClock, hedge_checks: list[int]
) -> None:
    agent = FallbackAgent([Vendor("only")], clock=clock)  # hedging on by default ("auto")
    for _ in range(3):
        assert (await agent.run("hi")).text == "only answer"
    assert agent.hedge is not None and not agent.hedges
    assert hedge_checks == []  # main: one check per call (3)


async def test_a_chain_of_two_providers_still_asks(
    clock: FakeClock, hedge_checks: list[int]
) -> None:
    agent = FallbackAgent([Vendor("first"), Vendor("second")], clock=clock)
    assert (await agent.run("hi")).text == "first answer"
    assert agent.hedges and hedge_checks == [0]
    assert not FallbackAgent([Vendor("a"), Vendor("b")], hedge_after=None).hedges


class Layers:
    """A provider noting the engine's frames between ``FallbackAgent.run`` and its call."""

    name = "layers"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def complete(self, request: Request) -> Response:
        frame = sys._getframe(1)
        seen = []
        while frame is not None and frame.f_code is not FallbackAgent.run.__code__:
            seen.append(frame.f_code.co_name)
            frame = frame.f_back  # type: ignore[assignment]
        self.seen = seen[::-1]
        return Response(text="ok")


async def test_the_first_child_is_called_through_no_layer_that_only_forwards(
    clock: FakeClock,
) -> None:
    provider = Layers()
    agent = FallbackAgent([provider], clock=clock)
    assert (await agent.run("hi")).text == "ok"
    # main: execute, _chain, next_child, run_in, _call, attempt (two that only forward)
    assert provider.seen == ["execute", "_chain", "run_in", "attempt"]

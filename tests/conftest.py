"""Shared fixtures: fake time and scripted providers."""

from __future__ import annotations

import asyncio
import textwrap
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from orchestrator import Request, Response
from orchestrator.health import CircuitBreaker, MemoryHealthStore
from orchestrator.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


class Scripted:
    """A provider that plays a script: each call takes the next item.

    An item is a str (success), a Response, an exception instance (raised), or
    ("sleep", seconds, then) to await the injected clock first (a "hang").
    After the script runs out the last item repeats.
    """

    def __init__(self, name: str, script: Iterable[Any], clock: FakeClock | None = None) -> None:
        self.name = name
        self.script = list(script)
        self.calls = 0
        self.requests: list[Request] = []
        self.clock = clock

    async def complete(self, request: Request) -> Response:
        self.requests.append(request)
        item = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        if isinstance(item, tuple) and item[0] == "sleep":
            # Fake time passes inside the provider; yield so a deadline that
            # fired can cancel us, as a real timeout would mid-call.
            assert self.clock is not None
            self.clock.advance(item[1])
            for _ in range(3):
                await asyncio.sleep(0)
            item = item[2]
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Response):
            return item
        return Response(str(item))


class InFlight:
    """Counts the calls inside ``with in_flight:``: how many entered, how many left (also
    by an exception or a cancellation), and the most inside at once."""

    def __init__(self) -> None:
        self.entered = self.left = self.most = 0

    def __enter__(self) -> None:
        self.entered += 1
        self.most = max(self.most, self.entered - self.left)

    def __exit__(self, *exc_info: object) -> None:
        self.left += 1


def health_store(clock: FakeClock, threshold: int = 3) -> MemoryHealthStore:
    """A memory store on ``clock`` whose circuits open after ``threshold`` failures."""
    return MemoryHealthStore(
        circuit=CircuitBreaker(failure_threshold=threshold, cooldown=30), clock=clock
    )


def turns(*texts: str) -> list[dict[str, str]]:
    """A conversation's messages: ``texts`` said by the user and the assistant in turn."""
    return [{"role": ("user", "assistant")[i % 2], "content": text} for i, text in enumerate(texts)]


def hooks_module(directory: Path, prefix: str, source: str) -> str:
    """Write ``source`` as a module of a fresh name (``<prefix>_<hex>``) in ``directory``,
    so that no test imports another's cached module; returns the name."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.py").write_text(source)
    return name


def hooks_chain(directory: Path, prefix: str, source: str, text: str) -> tuple[Path, str]:
    """``source`` as a fresh hooks module (:func:`hooks_module`) and ``text`` as the chain
    file, each ``HOOKS`` in it replaced by that module's name; returns the file and name."""
    name = hooks_module(directory, prefix, source)
    return write_chain(directory, text.replace("HOOKS", name)), name


def write_chain(directory: Path, text: str, name: str = "chain.yaml") -> Path:
    """``text`` (dedented) as the chain file ``name`` in ``directory``."""
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def simulated_chain(directory: Path, text: str, sim: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The chain file ``text`` in ``directory``, with the environment pointing its vendor
    providers (built with no base_url and no api_key) at the simulated server ``sim``."""
    for var, value in sim.environment().items():
        monkeypatch.setenv(var, value)
    return write_chain(directory, text)


async def wait_until_cancelled(cancelled: asyncio.Event) -> None:
    """Wait forever; when cancelled, set ``cancelled`` and let the cancellation go on."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cancelled.set()
        raise


@pytest.fixture
def scripted() -> type[Scripted]:
    return Scripted

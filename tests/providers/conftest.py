"""Fixtures shared by the provider tests: the plugin's simulated server, reset per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from orchestrator.types import Request
from providers.simulator import SimulatedServer


@pytest.fixture
def sim(simulated_server: SimulatedServer) -> SimulatedServer:
    """The session's simulated server (``providers.pytest_plugin``'s ``simulated_server``, as
    users get it) with empty scripts, default faults and counts."""
    return simulated_server


async def kept_then_refreshed(
    provider: Any,
    now: list[float],
    margin: float,
    fetches: Callable[[], int],
    before_refresh: Callable[[], object] = lambda: None,
) -> None:
    """A one-hour credential fetched once at ``now``: kept while more than ``margin``
    seconds of it remain, fetched again (``fetches()`` 1 -> 2) once within the margin."""
    now[0] += 3600 - margin - 1  # margin + 1 s left: kept
    await provider.complete(Request("hi"))
    assert fetches() == 1
    now[0] += 2  # inside the margin: refreshed before it expires
    before_refresh()
    await provider.complete(Request("hi"))
    assert fetches() == 2

"""Fixtures shared by the provider tests: one simulated server per module, reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.simulated import SimulatedServer


@pytest.fixture(scope="module")
def sim_server() -> Iterator[SimulatedServer]:
    with SimulatedServer.in_thread() as server:
        yield server


@pytest.fixture
def sim(sim_server: SimulatedServer) -> SimulatedServer:
    """The module's simulated server with empty scripts, default faults and counts."""
    sim_server.reset()
    return sim_server

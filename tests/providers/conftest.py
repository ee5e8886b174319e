"""Fixtures shared by the provider tests: the plugin's simulated server, reset per test."""

from __future__ import annotations

import pytest

from providers.simulator import SimulatedServer


@pytest.fixture
def sim(simulated_server: SimulatedServer) -> SimulatedServer:
    """The session's simulated server (``providers.pytest_plugin``'s ``simulated_server``, as
    users get it) with empty scripts, default faults and counts."""
    return simulated_server

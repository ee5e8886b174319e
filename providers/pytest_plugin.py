"""pytest fixtures for testing your own chains: ``simulated_server`` and ``fake_clock``.

Installed with failover-orchestrator (entry point ``pytest11``), so any test
suite in the same environment can use them without a ``conftest.py``::

    from orchestrator import FallbackAgent
    from providers import OpenAIChat
    from providers.simulator import Fault

    async def test_falls_over(simulated_server):
        simulated_server.script("openai", [Fault.status(503)])
        ...

- ``simulated_server``: a started :class:`~providers.simulator.SimulatedServer`
  on loopback (its own thread, so sync and async tests both use it). One server
  runs for the whole session; every test gets it reset (empty scripts, default
  faults, zero counts, no recorded requests), so tests do not see each other.
- ``fake_clock``: a fresh :class:`~orchestrator.testing.FakeClock` per test, for
  ``FallbackAgent(..., clock=fake_clock)``: sleeps return at once and are recorded
  in ``fake_clock.sleeps``.

A ``conftest.py`` fixture of the same name overrides these (pytest's usual
rule). This module imports the simulator only when a test asks for it, so the
plugin costs nothing to suites that never use it; ``pytest -p no:failover``
turns it off.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from orchestrator.testing import FakeClock
    from providers.simulator import SimulatedServer

__all__ = ["fake_clock", "simulated_server"]


@pytest.fixture(scope="session")
def failover_simulated_server_session() -> Iterator[SimulatedServer]:
    """The session's one simulated server (use ``simulated_server``: it is reset per test)."""
    from providers.simulator import SimulatedServer

    with SimulatedServer.in_thread() as server:
        yield server


@pytest.fixture
def simulated_server(failover_simulated_server_session: SimulatedServer) -> SimulatedServer:
    """A started simulated provider server, reset for this test (scripts, defaults, counts,
    recorded requests). Its URLs: ``openai_url``, ``anthropic_url``, ``gemini_url``,
    ``http_url``."""
    failover_simulated_server_session.reset()
    return failover_simulated_server_session


@pytest.fixture
def fake_clock() -> FakeClock:
    """A fresh fake clock for this test: pass it as ``clock=`` to a ``FallbackAgent``."""
    from orchestrator.testing import FakeClock

    return FakeClock()

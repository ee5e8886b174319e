"""Fixtures shared by the provider tests: the plugin's simulated server, reset per test."""

from __future__ import annotations

import os
import subprocess
import sys
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


def after_cli_help(before: str, probe: str, after: str = "", path: str = "") -> str:
    """What the expression ``probe`` is in a fresh interpreter (``PYTHONPATH`` ``path``,
    if given) that imports ``providers``, runs the statements ``before``, ``failover
    --help``, then ``after``: for checking that an optional extra is imported only when
    used."""
    source = f"""
import sys
sys.argv = ["failover", "--help"]
import providers
{before}
from orchestrator.__main__ import main
try:
    main()
except SystemExit:
    pass
{after}
print({probe})
"""
    env = {**os.environ, "PYTHONPATH": path} if path else {**os.environ}
    out = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    return out.stdout.strip().splitlines()[-1]

"""Without an SDK (or without the API) telemetry costs nothing and imports nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator import FallbackAgent
from orchestrator.engine.run import Run
from orchestrator.function import FunctionProvider
from orchestrator.telemetry import installed
from tests.orchestrator.telemetry.conftest import uninstall


def test_importing_orchestrator_and_providers_does_not_import_opentelemetry() -> None:
    code = (
        "import sys, orchestrator, providers, orchestrator.telemetry\n"
        "from orchestrator import FallbackAgent\n"
        "from orchestrator.cli import main\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_no_run_observer_until_an_sdk_is_installed() -> None:
    uninstall()  # the API's own no-op providers, as in an application without an SDK
    agent = FallbackAgent([FunctionProvider(lambda r: "ok", name="f")])
    run = Run.start(agent, __import__("orchestrator").Request("x"), None, None)
    assert run.log.trace is None
    assert (await run.execute()).text == "ok"


async def test_no_run_observer_without_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installed, "_api", False)
    assert installed.tracer() is None and installed.meter_provider() is None
    agent = FallbackAgent([FunctionProvider(lambda r: "ok", name="f")])
    assert (await agent.run("x")).text == "ok"


def test_public_api_is_exactly_all() -> None:
    import orchestrator.telemetry as telemetry

    modules = {
        "capacity",
        "describe",
        "histograms",
        "installed",
        "instruments",
        "names",
        "prometheus",
        "propagation",
        "spans",
        "tallies",
    }
    public = {n for n in dir(telemetry) if not n.startswith("_")} - {"annotations"} - modules
    assert set(telemetry.__all__) == public

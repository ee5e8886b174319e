"""The metrics as Prometheus scrapes them: over loopback HTTP, parsed by prometheus_client."""

from __future__ import annotations

import asyncio
import sys
import urllib.request
from typing import Any

import pytest

from orchestrator import FallbackAgent
from orchestrator.health import MemoryHealthStore
from orchestrator.telemetry import EXPOSITION_CONTENT_TYPE, prometheus_exposition
from providers import AnthropicMessages, Fault, OpenAIChat, SimulatedServer

prometheus_client = pytest.importorskip(
    "prometheus_client", reason="needs prometheus-client: run `make .venv/.installed` (dev extra)"
)
exporter = pytest.importorskip(
    "opentelemetry.exporter.prometheus",
    reason="needs opentelemetry-exporter-prometheus: run `make .venv/.installed` (dev extra)",
)
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

KEY = "sk-test-0123456789abcdef"
PROMPT = "my card number is 4111 1111 1111 1111"


async def calls(sim: SimulatedServer) -> FallbackAgent:
    """Two runs of a two-provider agent; the agent is returned so that the caller keeps it
    alive until it scrapes: its circuits are reported only while it lives (as an
    application's agents do), and a garbage collection may come at any point after."""
    sim.script("openai", [Fault.status(503), Fault.status(401)])
    agent = FallbackAgent(
        [
            OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY, price=(1.0, 1.0)),
            AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY),
        ],
        max_retries=1,
        retry_strategy="none",
        health=MemoryHealthStore(),
    )
    await agent.run(PROMPT)
    await agent.run(PROMPT)
    return agent


def own(labels: dict[str, str]) -> dict[str, str]:
    """The labels we set (the exporter adds ``otel_scope_*``)."""
    return {k: v for k, v in labels.items() if not k.startswith("otel_scope_")}


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        body: bytes = reply.read()
    return body.decode()


async def test_scraped_over_loopback_and_parsed(meter_with: Any) -> None:
    # docs/observability.md's two lines (with a free port instead of 9464).
    meter_with(exporter.PrometheusMetricReader())
    server, thread = prometheus_client.start_http_server(0, addr="127.0.0.1")
    try:
        async with SimulatedServer() as sim:
            agent = await calls(sim)
        text = await asyncio.to_thread(scrape, server.server_port)
        del agent  # scraped while it lived
    finally:
        server.shutdown()
        thread.join(timeout=10)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {s.name: s for f in families.values() for s in f.samples}
    assert "failover_fallbacks_total" in samples
    assert "failover_attempts_total" in samples
    assert "gen_ai_client_operation_duration_seconds_bucket" in samples
    assert (
        "gen_ai_client_token_usage_bucket" in samples
        or "gen_ai_client_token_usage_tokens_bucket" in samples
    )
    assert "failover_circuit_state" in samples
    fallback = [s for s in families["failover_fallbacks"].samples if s.name.endswith("_total")]
    assert {tuple(sorted(own(s.labels).items())) for s in fallback} == {
        (
            ("failover_from", "openai:gpt-sim"),
            ("failover_reason", "unusable"),
            ("failover_to", "anthropic:claude-sim"),
        )
    }
    decisions = {
        (s.labels["failover_provider"], s.labels["failover_decision"]): s.value
        for s in families["failover_attempts"].samples
        if s.name.endswith("_total")
    }
    assert decisions == {
        ("openai:gpt-sim", "retry"): 1,
        ("openai:gpt-sim", "fallback"): 1,
        ("openai:gpt-sim", "success"): 1,
        ("anthropic:claude-sim", "success"): 1,
    }
    durations = families["gen_ai_client_operation_duration_seconds"].samples
    assert {"gen_ai_provider_name", "gen_ai_request_model", "failover_provider"} <= set(
        durations[0].labels
    )
    assert any(s.labels.get("error_type") == "ServerError" for s in durations)
    circuits = {
        s.labels["failover_provider"]: s.value for s in families["failover_circuit_state"].samples
    }
    assert circuits == {"openai:gpt-sim": 0, "anthropic:claude-sim": 0}
    labels = repr([s.labels for f in families.values() for s in f.samples])
    assert KEY not in labels and "4111" not in labels and "card" not in labels


async def test_exposition_helper_for_a_metrics_endpoint(meter_with: Any) -> None:
    meter_with(exporter.PrometheusMetricReader())
    async with SimulatedServer() as sim:
        await calls(sim)
    body = prometheus_exposition()
    assert body is not None and b"failover_fallbacks_total" in body
    assert EXPOSITION_CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_exposition_is_none_without_the_exporter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.prometheus", None)
    assert prometheus_exposition() is None

"""Metrics through the global meter provider: GenAI client metrics and ours."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError, Request, Response, Usage
from orchestrator.health import MemoryHealthStore, RedisHealthStore
from providers import AnthropicMessages, Fault, FunctionProvider, OpenAIChat, SimulatedServer
from tests.orchestrator.health.redis.conftest import RedisServer
from tests.orchestrator.telemetry.conftest import Otel, install, uninstall

KEY = "sk-test-0123456789abcdef"


def by_attrs(points: list[Any]) -> dict[frozenset[tuple[str, Any]], Any]:
    return {frozenset(dict(p.attributes).items()): p for p in points}


async def test_attempts_fallbacks_durations_tokens_and_cost(otel: Otel) -> None:
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.status(503)])
        sim.script("anthropic", [Fault.ok(usage=(10, 5))])
        agent = FallbackAgent(
            [
                OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY),
                AnthropicMessages(
                    "claude-sim", base_url=sim.anthropic_url, api_key=KEY, price=(3.0, 15.0)
                ),
            ],
            max_retries=1,
            retry_strategy="none",
        )
        await agent.run("x")
    attempts = by_attrs(otel.points("failover.attempts"))
    assert {k: p.value for k, p in attempts.items()} == {
        frozenset({("failover.provider", "openai:gpt-sim"), ("failover.decision", "retry")}): 1,
        frozenset({("failover.provider", "openai:gpt-sim"), ("failover.decision", "fallback")}): 1,
        frozenset(
            {("failover.provider", "anthropic:claude-sim"), ("failover.decision", "success")}
        ): 1,
    }
    (fallback,) = otel.points("failover.fallbacks")
    assert dict(fallback.attributes) == {
        "failover.from": "openai:gpt-sim",
        "failover.to": "anthropic:claude-sim",
        "failover.reason": "error",
    }
    assert fallback.value == 1
    durations = by_attrs(otel.points("gen_ai.client.operation.duration"))
    openai_failed = frozenset(
        {
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "openai"),
            ("gen_ai.request.model", "gpt-sim"),
            ("failover.provider", "openai:gpt-sim"),
            ("error.type", "ServerError"),
        }
    )
    assert durations[openai_failed].count == 2
    anthropic_ok = frozenset(
        {
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", "anthropic"),
            ("gen_ai.request.model", "claude-sim"),
            ("failover.provider", "anthropic:claude-sim"),
        }
    )
    assert durations[anthropic_ok].count == 1
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")
    }
    assert tokens["input"].sum == 10 and tokens["output"].sum == 5
    (cost,) = otel.points("failover.cost")
    assert cost.value == pytest.approx((10 * 3.0 + 5 * 15.0) / 1e6)
    assert dict(cost.attributes)["gen_ai.request.model"] == "claude-sim"


async def test_metrics_without_a_tracer_provider(meter_with: Any) -> None:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    meter_with(reader)
    async with SimulatedServer() as sim:
        sim.set_default("openai", Fault.status(503))
        agent = FallbackAgent(
            [OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)], max_retries=0
        )
        with pytest.raises(FallbackError):
            await agent.run("x")
    data = reader.get_metrics_data()
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert {"failover.attempts", "gen_ai.client.operation.duration"} <= names


def circuit_states(otel: Otel) -> dict[str, int]:
    return {
        p.attributes["failover.provider"]: p.value for p in otel.points("failover.circuit.state")
    }


async def test_circuit_state_gauge_from_the_memory_store(otel: Otel) -> None:
    store = MemoryHealthStore()
    async with SimulatedServer() as sim:
        primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
        backup = AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=KEY)
        agent = FallbackAgent([primary, backup], health=store)
        await agent.run("x")
        assert circuit_states(otel) == {"openai:gpt-sim": 0, "anthropic:claude-sim": 0}
        store.record_failure(primary.name, retry_after=60.0)
        assert circuit_states(otel) == {"openai:gpt-sim": 2, "anthropic:claude-sim": 0}


@pytest.mark.redis
async def test_circuit_state_gauge_from_the_redis_store(
    otel: Otel, redis_server: RedisServer, prefix: str
) -> None:
    store = RedisHealthStore(redis_server.url, key_prefix=prefix)
    try:
        async with SimulatedServer() as sim:
            primary = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=KEY)
            agent = FallbackAgent([primary], health=store)
            await agent.run("x")
            store.record_failure(primary.name, retry_after=60.0)
            # The reader collects on another thread, as a periodic reader or a scrape does:
            # the callback reads the store's local view, without touching the network.
            import asyncio

            states = await asyncio.to_thread(circuit_states, otel)
            assert states == {"openai:gpt-sim": 2}
    finally:
        await store.aclose()


async def test_metrics_are_tallies_read_at_collection(
    otel: Otel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's synchronous path (a measurement, its attributes hashed, a lock, per reader)
    # cost several microseconds a record, five a call: counters and histograms are plain
    # tallies the reader collects (observable counters, histogram points), so a call makes
    # no synchronous record at all, and what is collected is what the records gave.
    from opentelemetry.sdk.metrics._internal.measurement_consumer import (
        SynchronousMeasurementConsumer,
    )

    recorded: list[str] = []
    consume = SynchronousMeasurementConsumer.consume_measurement

    def counted(self: Any, measurement: Any) -> None:
        recorded.append(measurement.instrument.name)
        consume(self, measurement)

    monkeypatch.setattr(SynchronousMeasurementConsumer, "consume_measurement", counted)

    async def reply(request: Request) -> Response:
        return Response("ok", usage=Usage(5, 2), cost_usd=0.25)

    agent = FallbackAgent([FunctionProvider(reply, name="fn")], tracing=False)
    await asyncio.gather(*(agent.run("x") for _ in range(40)))  # many in flight at once
    assert recorded == []
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 40 and sum(duration.bucket_counts) == 40
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")
    }
    assert (tokens["input"].sum, tokens["output"].sum) == (200, 80)
    assert (tokens["input"].min, tokens["input"].max) == (5, 5)
    (attempts,) = otel.points("failover.attempts")
    assert attempts.value == 40 and dict(attempts.attributes) == {
        "failover.provider": "fn",
        "failover.decision": "success",
    }
    (cost,) = otel.points("failover.cost")
    assert cost.value == 10.0
    await agent.run("x")
    (attempts,) = otel.points("failover.attempts")
    assert attempts.value == 41  # cumulative, as the synchronous counter was
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 41
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 41


async def test_an_application_view_still_shapes_the_histograms() -> None:
    # Tallied histograms bypass the SDK's views: with a view installed the SDK's own
    # histograms are used, so the application's view (here: drop durations) still applies.
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.metrics.view import DropAggregation, View

    reader = InMemoryMetricReader()
    drop = View(instrument_name="gen_ai.client.operation.duration", aggregation=DropAggregation())
    provider = MeterProvider(metric_readers=[reader], views=[drop])
    install(None, provider)
    try:

        async def reply(request: Request) -> Response:
            return Response("ok", usage=Usage(5, 2))

        await FallbackAgent([FunctionProvider(reply, name="fn")], tracing=False).run("x")
        data = reader.get_metrics_data()
    finally:
        uninstall()
        provider.shutdown()
    names = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    assert "gen_ai.client.token.usage" in names
    assert "gen_ai.client.operation.duration" not in names

"""``GET /metrics`` of ``failover serve`` (a real process) shows each limiter's use and each
budget's spend, labelled by provider, agent and gateway key id: never a key or a prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest

from providers import Fault, SimulatedServer
from providers.serve.auth import hash_key
from tests.orchestrator.health.redis.conftest import RedisServer
from tests.providers.serve.processes import CHAIN, UPSTREAM_KEY, serving

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

GATEWAY_KEY = "sk-gateway-team-0123456789"
PROMPT = "the prompt marker 5e1d0b"
LIMITED = CHAIN.replace(
    "allow_insecure_http: true}\nagents:",
    "allow_insecure_http: true,\n        limits: {rpm: 100, tpm: 50000, max_concurrency: 8},"
    " price: [1000.0, 1000.0]}\nagents:",
).replace("retry_strategy: none}", "retry_strategy: none, budget: {usd: 50, per: day}}")


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


async def _scrape_after_calls(sim: SimulatedServer, tmp_path: Path, chain: str, *args: str) -> str:
    pytest.importorskip(
        "opentelemetry.exporter.prometheus",
        reason="needs the dev extra: pip install -e '.[dev]' (opentelemetry-exporter-prometheus)",
    )
    sim.set_default("anthropic", Fault.overloaded())
    sim.set_default("openai", Fault.ok("hi", usage=(100, 50)))
    keys = tmp_path / "gateway.keys"
    keys.write_text(
        f"{hash_key(GATEWAY_KEY)} {{id: team-a, limits: {{rpm: 10}}, budget: {{usd: 5}}}}\n"
    )
    request = {"model": "review", "messages": [{"role": "user", "content": PROMPT}]}
    auth = {"Authorization": f"Bearer {GATEWAY_KEY}"}
    async with (
        serving(sim, tmp_path, "--keys-file", str(keys), *args, chain=chain) as (_, url),
        aiohttp.ClientSession(headers=auth) as http,
    ):
        for _ in range(2):
            async with http.post(url + "/v1/chat/completions", json=request) as r:
                assert r.status == 200, await r.text()
        async with http.get(url + "/metrics") as r:
            assert r.status == 200
            return await r.text()


def _check(text: str) -> None:
    samples = _samples(text)
    used = {
        (labels["failover_limiter"], labels["failover_capacity_kind"]): value
        for labels, value in samples["failover_capacity_used"]
    }
    assert used[("gpt", "rpm")] == 2 and used[("gateway-key:team-a", "rpm")] == 2
    assert used[("gpt", "tpm")] == 300  # settled with the replies' usage: 2 x 150
    assert used[("gpt", "concurrency")] == 0
    spent = {
        labels["failover_budget_scope"]: v for labels, v in samples["failover_budget_spent_USD"]
    }
    assert spent["agent:review"] == pytest.approx(0.3)  # 300 tokens at $1,000 per 1M
    assert spent["gateway-key:team-a"] == pytest.approx(0.3)
    assert GATEWAY_KEY not in text and UPSTREAM_KEY not in text and "5e1d0b" not in text


async def test_metrics_show_limiters_and_budgets_in_memory(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    _check(await _scrape_after_calls(sim, tmp_path, LIMITED))


@pytest.mark.redis
async def test_metrics_show_limiters_and_budgets_in_redis(
    sim: SimulatedServer, tmp_path: Path, redis_server_factory: Callable[[], RedisServer]
) -> None:
    redis = redis_server_factory()
    chain = LIMITED.replace(
        "budget: {usd: 50, per: day}}",
        f'budget: {{usd: 50, per: day}}, health: {{redis_url: "{redis.url}"}}}}',
    )
    _check(await _scrape_after_calls(sim, tmp_path, chain, "--workers", "1"))

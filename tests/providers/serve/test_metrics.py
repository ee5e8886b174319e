"""``GET /metrics`` of ``failover serve`` as a real program: the Prometheus exposition of the
chain's metrics, parsed with prometheus_client's own parser, no key or prompt in a label."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from providers import Fault, SimulatedServer
from tests.providers.serve.processes import UPSTREAM_KEY, serving

PROMPT = "the prompt marker 7f3a9c"


def _families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        f.name: [(s.name, dict(s.labels), s.value) for s in f.samples]
        for f in text_string_to_metric_families(text)
    }


async def test_metrics_show_the_attempts_of_a_call_through_the_gateway(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    pytest.importorskip(
        "opentelemetry.exporter.prometheus",
        reason="needs the dev extra: pip install -e '.[dev]' (opentelemetry-exporter-prometheus)",
    )
    sim.set_default("anthropic", Fault.overloaded())
    request = {"model": "review", "messages": [{"role": "user", "content": PROMPT}]}
    async with serving(sim, tmp_path) as (_, url), aiohttp.ClientSession() as http:
        async with http.post(url + "/v1/chat/completions", json=request) as r:
            assert r.status == 200 and r.headers["x-failover-handled-by"] == "gpt"
        async with http.get(url + "/metrics") as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = await r.text()
    families = _families(text)
    attempts = families["failover_attempts"]
    by_provider = {labels.get("failover_provider"): value for _, labels, value in attempts}
    assert sum(by_provider.values()) == 2, attempts  # the 529, then the answer
    assert "failover_fallbacks" in families
    assert "gen_ai_client_operation_duration_seconds" in families
    labels = [v for samples in families.values() for _, ls, _ in samples for v in ls.values()]
    assert not [v for v in labels if UPSTREAM_KEY in v or "7f3a9c" in v]
    assert UPSTREAM_KEY not in text and "7f3a9c" not in text


def test_otel_sdk_disabled_leaves_the_meter_provider_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import metrics

    from providers.serve.meters import install_meter_provider

    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    before = metrics.get_meter_provider()
    assert install_meter_provider() is False
    assert metrics.get_meter_provider() is before

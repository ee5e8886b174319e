"""The cloud platforms in one chain file, served by the gateway: Anthropic -> Claude on
Bedrock in two regions (``regions:``) -> Claude on Vertex AI, over loopback HTTP to the
simulator, whole and streamed, with the environment ``failover simulate`` prints."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from orchestrator.config import load_config
from providers import BedrockConverse, Fault, SimulatedServer
from tests.providers.serve.conftest import gateway

CHAIN = """
providers:
  anthropic:
    type: anthropic
    model: claude-sonnet-4-6
    max_retries: 0
  bedrock:
    type: bedrock
    model: us.anthropic.claude-sonnet-4-6
    regions: [us-east-1, us-west-2]
    max_retries: 0
  vertex:
    type: vertex_anthropic
    model: claude-sonnet-4-6
    location: us-east5
    max_retries: 0
agents:
  claude:
    providers: [anthropic, bedrock, vertex]
"""


def answer(text: str, stream: bool) -> str:
    """The reply's text, whole or put together from the stream's deltas."""
    if not stream:
        return str(json.loads(text)["choices"][0]["message"]["content"])
    events = [line[6:] for line in text.splitlines() if line.startswith("data: {")]
    deltas = (json.loads(e)["choices"][0]["delta"].get("content") for e in events)
    return "".join(d for d in deltas if d)


@pytest.fixture
def chain(sim: SimulatedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in sim.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    path = tmp_path / "chain.yaml"
    path.write_text(CHAIN)
    return path


async def test_regions_expand_in_order_and_each_region_signs_for_itself(chain: Path) -> None:
    config = load_config(chain)
    names = [c.name for c in config.agents["claude"].children]
    assert names == ["anthropic", "bedrock@us-east-1", "bedrock@us-west-2", "vertex"]
    east, west = (config.providers[f"bedrock@{r}"] for r in ("us-east-1", "us-west-2"))
    assert isinstance(east, BedrockConverse) and isinstance(west, BedrockConverse)
    assert (east.region, west.region) == ("us-east-1", "us-west-2")


@pytest.mark.parametrize("stream", [False, True])
async def test_the_gateway_serves_a_chain_of_cloud_platforms(
    sim: SimulatedServer, chain: Path, stream: bool
) -> None:
    sim.script("anthropic", [Fault.overloaded()])
    sim.script("bedrock", [Fault.rate_limited(60)])  # us-east-1 throttled for a minute
    config = load_config(chain)
    body = {"model": "claude", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    async with (
        gateway(config.agents) as url,
        aiohttp.ClientSession() as http,
        http.post(f"{url}/v1/chat/completions", json=body) as reply,
    ):
        text = await reply.text()
        assert reply.status == 200, text
        assert reply.headers["x-failover-handled-by"] == "bedrock@us-west-2"
    assert answer(text, stream).startswith("sim-bedrock")
    assert sim.count("anthropic") == 1 and sim.count("bedrock") == 2
    assert sim.count("vertex_anthropic") == 0
    regions = [r["headers"]["authorization"].split("/")[2] for r in sim.requests("bedrock")]
    assert regions == ["us-east-1", "us-west-2"]  # each region's credential scope


async def test_vertex_answers_when_every_bedrock_region_is_throttled(
    sim: SimulatedServer, chain: Path
) -> None:
    sim.script("anthropic", [Fault.overloaded()])
    sim.script("bedrock", [Fault.rate_limited(60), Fault.rate_limited(60)])
    result = await load_config(chain).agents["claude"].run("hi")
    assert result.handled_by == "vertex"
    assert [a.reason for a in result.attempts[:-1]] == [
        "overloaded",
        "rate_limited",
        "rate_limited",
    ]

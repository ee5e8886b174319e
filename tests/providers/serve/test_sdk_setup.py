"""What a user setting up an SDK or a scraper meets: base URLs of the wrong shape, the
metrics key, and a workflow's usage, with the official SDKs."""

from __future__ import annotations

import aiohttp
import anthropic
import openai
import pytest

from orchestrator import FallbackAgent, Phase, Response, Step, Usage, Workflow
from providers.serve import GatewayKeys
from tests.providers.serve.conftest import Recorder, gateway

USER = [{"role": "user", "content": "hi"}]
KEY = "gw-key-5511"
SCRAPER = "scrape-key-9071"


async def test_an_openai_client_without_v1_is_told_its_base_url() -> None:
    async with gateway({"m": FallbackAgent([Recorder()])}) as url:
        client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
        with pytest.raises(openai.NotFoundError) as chat:
            await client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        with pytest.raises(openai.NotFoundError) as responses:
            await client.responses.create(model="m", input="hi")
        await client.close()
    for error in (chat.value, responses.value):
        assert f"OpenAI clients use base_url {url}/v1 " in error.message


async def test_an_anthropic_client_with_v1_is_told_its_base_url() -> None:
    async with gateway({"m": FallbackAgent([Recorder()])}) as url:
        client = anthropic.AsyncAnthropic(base_url=url + "/v1", api_key="k", max_retries=0)
        with pytest.raises(anthropic.NotFoundError) as error:
            await client.messages.create(model="m", max_tokens=5, messages=USER)  # type: ignore[arg-type]
        await client.close()
    body = error.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert f"Anthropic clients use base_url {url} (without /v1" in body["error"]["message"]


async def test_an_unknown_path_names_no_part_of_the_request_and_a_route_wants_post() -> None:
    async with gateway({"m": FallbackAgent([Recorder()])}) as url, aiohttp.ClientSession() as http:
        async with http.get(url + "/sk-live-secret/admin", headers={"Host": "<evil>"}) as r:
            assert r.status == 404
            text = await r.text()
        async with http.get(url + "/v1/chat/completions") as r:
            assert r.status == 405
            assert (await r.json())["error"]["message"] == "/v1/chat/completions takes POST"
    assert "sk-live-secret" not in text and "evil" not in text
    assert "/v1" in text


async def test_metrics_take_a_gateway_key_a_metrics_key_or_public_metrics(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from providers.serve import probes

    monkeypatch.setattr(probes, "prometheus_exposition", lambda: b"failover_runs 1\n")
    keys = GatewayKeys.load({"FAILOVER_GATEWAY_KEYS": KEY, "FAILOVER_METRICS_KEYS": SCRAPER})
    agents = {"m": FallbackAgent([Recorder()])}
    body = {"model": "m", "messages": USER}

    def bearer(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    async with gateway(agents, keys=keys) as url, aiohttp.ClientSession() as http:
        async with http.get(url + "/metrics") as r:
            assert r.status == 401
            assert "--public-metrics" in (await r.json())["error"]["message"]
        for key in (KEY, SCRAPER):
            async with http.get(url + "/metrics", headers=bearer(key)) as r:
                assert r.status == 200
        async with http.post(url + "/v1/chat/completions", json=body, headers=bearer(SCRAPER)) as r:
            assert r.status == 401  # a metrics key spends no provider tokens
    async with (
        gateway(agents, keys=keys, public_metrics=True) as url,
        aiohttp.ClientSession() as http,
        http.get(url + "/metrics") as r,
    ):
        assert r.status == 200


async def test_a_workflow_served_as_a_model_reports_every_steps_usage() -> None:
    draft = FallbackAgent([Recorder(Response("draft", usage=Usage(3, 5)), "drafter")])
    polish = FallbackAgent([Recorder(Response("polished", usage=Usage(7, 11)), "polisher")])
    flow = Workflow(
        Phase("write", Step("draft", draft, prompt="{input}")),
        Phase("edit", Step("polish", polish, prompt="{draft.text}")),
        name="pipeline",
    )
    async with gateway({}, workflows={"pipeline": flow}) as url:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
        out = await client.chat.completions.create(model="pipeline", messages=USER)  # type: ignore[arg-type]
        stream = await client.chat.completions.create(  # type: ignore[call-overload]
            model="pipeline",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
        streamed = [c.usage async for c in stream if c.usage is not None]
        await client.close()
    assert out.choices[0].message.content == "polished"
    assert out.usage is not None
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (10, 16)
    assert [(u.prompt_tokens, u.completion_tokens) for u in streamed] == [(10, 16)]

"""openai's ``AzureOpenAI`` and ``AsyncAzureOpenAI``, pointed at the simulator's Azure
route, parse its replies, streams and errors: the simulator speaks Azure's wire.

``sim`` is the module's simulated server (tests/providers/conftest.py).
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from providers.simulator import Fault, SimulatedServer

MESSAGES: list[Any] = [{"role": "user", "content": "Name one prime number."}]
VERSION = "2024-10-21"


def client(sim: SimulatedServer, **kw: Any) -> openai.AzureOpenAI:
    kw.setdefault("api_key", "azure-test-key")
    return openai.AzureOpenAI(
        azure_endpoint=sim.azure_url, api_version=VERSION, max_retries=0, **kw
    )


def test_a_completion_with_the_api_key(sim: SimulatedServer) -> None:
    sim.script("azure", [Fault.ok("seven", usage=(12, 3))])
    reply = client(sim).chat.completions.create(model="prime-deploy", messages=MESSAGES)
    assert reply.choices[0].message.content == "seven"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.prompt_tokens == 12
    (sent,) = sim.requests("azure")
    assert sent["path"] == "/azure/openai/deployments/prime-deploy/chat/completions"
    assert sent["query"]["api-version"] == VERSION
    assert sent["headers"]["api-key"] == "azure-test-key"


def test_an_entra_token_and_the_v1_route(sim: SimulatedServer) -> None:
    azure = client(sim, api_key=None, azure_ad_token="entra-token")
    azure.chat.completions.create(model="prime-deploy", messages=MESSAGES)
    v1 = openai.OpenAI(
        base_url=f"{sim.azure_url}/openai/v1", api_key="azure-test-key", max_retries=0
    )
    reply = v1.chat.completions.create(model="prime-deploy", messages=MESSAGES)
    assert reply.choices[0].message.content
    first, second = sim.requests("azure")
    assert first["headers"]["authorization"] == "Bearer entra-token"
    assert second["path"] == "/azure/openai/v1/chat/completions"


def test_a_stream_with_prompt_filter_results_and_usage(sim: SimulatedServer) -> None:
    sim.script("azure", [Fault.ok("two three five", chunks=3, usage=(4, 5))])
    stream = client(sim).chat.completions.create(
        model="prime-deploy",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices == []  # Azure's prompt-filter chunk comes first
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    assert (text, finish) == ("two three five", "stop")
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5


def test_a_filtered_completion_and_stream(sim: SimulatedServer) -> None:
    sim.script("azure", [Fault.content_filter(), Fault.content_filter()])
    reply = client(sim).chat.completions.create(model="d", messages=MESSAGES)
    assert reply.choices[0].finish_reason == "content_filter"
    stream = client(sim).chat.completions.create(model="d", messages=MESSAGES, stream=True)
    finishes = [c.choices[0].finish_reason for c in stream if c.choices]
    assert finishes[-1] == "content_filter"


@pytest.mark.parametrize(
    ("fault", "error", "code"),
    [
        (lambda: Fault.rate_limited(2), openai.RateLimitError, "429"),
        (Fault.quota, openai.RateLimitError, "insufficient_quota"),
        (Fault.model_not_found, openai.NotFoundError, "DeploymentNotFound"),
        (
            lambda: Fault.content_filter(prompt_blocked=True),
            openai.BadRequestError,
            "content_filter",
        ),
        (lambda: Fault.auth(401), openai.AuthenticationError, "401"),
        (Fault.overloaded, openai.InternalServerError, "ServiceUnavailable"),
    ],
)
def test_errors_are_the_sdks_own(sim: SimulatedServer, fault: Any, error: Any, code: str) -> None:
    sim.script("azure", [fault()])
    with pytest.raises(error) as info:
        client(sim).chat.completions.create(model="d", messages=MESSAGES)
    assert info.value.code == code
    if code == "429":
        assert info.value.response.headers["retry-after-ms"] == "2000"
        assert info.value.response.headers["retry-after"] == "2"


async def test_the_async_client_completes_streams_and_fails(sim: SimulatedServer) -> None:
    sim.script("azure", [Fault.ok("seven"), Fault.ok("a b", chunks=2), Fault.status(503)])
    async with openai.AsyncAzureOpenAI(
        azure_endpoint=sim.azure_url, api_version=VERSION, api_key="k", max_retries=0
    ) as azure:
        reply = await azure.chat.completions.create(model="d", messages=MESSAGES)
        assert reply.choices[0].message.content == "seven"
        stream = await azure.chat.completions.create(model="d", messages=MESSAGES, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        assert text == "a b"
        with pytest.raises(openai.InternalServerError):
            await azure.chat.completions.create(model="d", messages=MESSAGES)

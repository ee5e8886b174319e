"""A wrong ``base_url`` (``/v1`` left out) 404s: the error names the URL, not only the model.

Users hunted the model name for what was a path mistake. Over real loopback HTTP
against the simulated server, in both modes, for every vendor, 100 calls at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orchestrator import errors as E
from orchestrator.types import Request
from providers.anthropic import AnthropicMessages
from providers.gemini.client import GeminiGenerate
from providers.openai import OpenAIChat
from providers.simulator import SimulatedServer
from tests.providers.http.test_http_matrix import call

KEY = "sk-proj-" + "Q" * 40


def _wrong(sim: SimulatedServer, vendor: str) -> Any:
    if vendor == "openai":  # .../openai instead of .../openai/v1
        return OpenAIChat("m", base_url=sim.url + "/openai?token=QUERYSECRET", api_key=KEY)
    if vendor == "anthropic":
        return AnthropicMessages("m", base_url=sim.url + "/nope", api_key=KEY)
    return GeminiGenerate("m", base_url=sim.url + "/v1", api_key=KEY)


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("vendor", ["openai", "anthropic", "gemini"])
async def test_404_names_the_url_and_says_check_base_url(
    sim: SimulatedServer, vendor: str, mode: str
) -> None:
    provider = _wrong(sim, vendor)
    with pytest.raises(E.ModelNotFound) as info:
        await call(provider, mode, Request("hi"))
    text = str(info.value)
    assert "check base_url or the model name" in text
    assert f"{sim.url}/" in text  # scheme, host, port and path
    assert "?" not in text.split(sim.url, 1)[1].split()[0]  # never the query
    assert KEY not in text and "QUERYSECRET" not in text and "token=" not in text


async def test_a_real_missing_model_404_also_gets_the_hint(sim: SimulatedServer) -> None:
    from providers.simulator import Fault

    sim.script("openai", [Fault.model_not_found()])
    provider = OpenAIChat("no-such-model", base_url=sim.openai_url, api_key=KEY)
    with pytest.raises(E.ModelNotFound) as info:
        await provider.complete(Request("hi"))
    assert f"POST {sim.openai_url}/chat/completions answered 404" in str(info.value)


async def test_a_hundred_wrong_url_calls_at_once(sim: SimulatedServer) -> None:
    provider = _wrong(sim, "openai")
    outcomes = await asyncio.gather(
        *(provider.complete(Request(f"r{i}")) for i in range(100)), return_exceptions=True
    )
    assert all(isinstance(o, E.ModelNotFound) for o in outcomes)
    assert all("check base_url" in str(o) and "QUERYSECRET" not in str(o) for o in outcomes)

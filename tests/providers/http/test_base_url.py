"""``base_url`` with a query (Azure's ``?api-version=``) and with user info.

A query in ``base_url`` once had the vendor path appended after it (so the call
404ed and was reported as ``ModelNotFound``); user info in a vendor's
``base_url`` reached aiohttp, whose ``ValueError`` was retried as
``ConnectionFailed``. The query is kept and the path appended to the path; user
info is refused at construction (vendors) or sent as Basic auth (HTTPFallback).
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from orchestrator import errors as E
from orchestrator.types import Request
from providers.anthropic import AnthropicMessages
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.openai import OpenAIChat
from providers.simulator import SimulatedServer
from tests.providers.http.test_http_matrix import call

VENDORS: dict[str, Any] = {
    "openai": OpenAIChat,
    "anthropic": AnthropicMessages,
    "gemini": GeminiGenerate,
}
PATHS = {
    "openai": {"complete": "/openai/v1/chat/completions"},
    "anthropic": {"complete": "/anthropic/v1/messages"},
    "gemini": {
        "complete": "/gemini/v1beta/models/m:generateContent",
        "stream": "/gemini/v1beta/models/m:streamGenerateContent",
    },
}


def _base(sim: SimulatedServer, route: str) -> str:
    return {"openai": sim.openai_url, "anthropic": sim.anthropic_url, "gemini": sim.gemini_url}[
        route
    ]


@pytest.mark.parametrize("slash", ["", "/"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", VENDORS)
async def test_a_query_in_base_url_is_kept_and_the_path_appended_to_the_path(
    sim: SimulatedServer, route: str, mode: str, slash: str
) -> None:
    base = _base(sim, route) + slash + "?api-version=2024-06-01&deployment=eu"
    provider = VENDORS[route]("m", base_url=base, api_key="k-0123456789")
    _, response = await call(provider, mode, Request("hi"))
    assert response.text
    sent = sim.requests(route)[-1]
    paths = PATHS[route]
    assert sent["path"] == paths.get(mode, paths["complete"])
    assert sent["query"]["api-version"] == "2024-06-01" and sent["query"]["deployment"] == "eu"
    if route == "gemini" and mode == "stream":
        assert sent["query"]["alt"] == "sse"


def test_join_url_keeps_both_queries_and_drops_the_fragment() -> None:
    from providers.http.base import join_url

    assert join_url("https://h/v1", "/chat") == "https://h/v1/chat"
    assert join_url("https://h/v1/", "/chat") == "https://h/v1/chat"
    assert join_url("https://h/v1?a=1", "/m:s?alt=sse") == "https://h/v1/m:s?a=1&alt=sse"
    assert join_url("https://h:8443/v1?a=1#frag", "/c") == "https://h:8443/v1/c?a=1"


@pytest.mark.parametrize("userinfo", ["bot:pw-s3cr3t@", "bot@", ":pw-s3cr3t@"])
@pytest.mark.parametrize("route", VENDORS)
def test_user_info_in_a_vendor_base_url_is_refused_at_construction(
    route: str, userinfo: str
) -> None:
    with pytest.raises(ValueError, match="api_key=") as info:
        VENDORS[route]("m", base_url=f"https://{userinfo}api.example.com/v1", api_key="k")
    assert "pw-s3cr3t" not in str(info.value)
    assert "user info" in str(info.value)


@pytest.mark.parametrize("client", ["shared", "httpx", "reqwest"])
async def test_http_fallback_sends_url_user_info_as_basic_auth(
    sim: SimulatedServer, client: str
) -> None:
    user = httpx.AsyncClient() if client == "httpx" else None
    kw: dict[str, Any] = {"transport": client} if client == "reqwest" else {"client": user}
    try:
        url = sim.http_url.replace("http://", "http://bot:p%40ss@")
        await HTTPFallback(url, **kw).complete(Request("hi"))
    finally:
        if user is not None:
            await user.aclose()
    sent = sim.requests("http")[-1]
    assert sent["headers"]["authorization"] == "Basic " + base64.b64encode(b"bot:p@ss").decode()


def test_http_fallback_refuses_user_info_and_an_authorization_header() -> None:
    with pytest.raises(ValueError, match="Authorization") as info:
        HTTPFallback("https://bot:pw-s3cr3t@h.example/c", headers={"Authorization": "Bearer t"})
    assert "pw-s3cr3t" not in str(info.value)


async def test_http_fallback_user_info_and_a_callable_authorization_is_unusable(
    sim: SimulatedServer,
) -> None:
    url = sim.http_url.replace("http://", "http://bot:pw@")
    provider = HTTPFallback(url, headers=lambda: {"Authorization": "Bearer t"})
    with pytest.raises(E.AuthenticationFailed, match="user info"):
        await provider.complete(Request("hi"))
    assert sim.count("http") == 0

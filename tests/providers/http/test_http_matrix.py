"""Every fault x every wire format x {complete, stream} x every kind of client, over loopback HTTP.

Each case asserts the taxonomy class, that exactly one request reached the
simulated server (no hidden retries) and that nothing but an
``orchestrator.errors`` class escapes. The client kinds: the default shared
aiohttp transport, a user's own ``httpx.AsyncClient`` given as ``client=``, and
``transport="reqwest"`` (pyreqwest), which must give the same classes and upstream counts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from orchestrator import errors as E
from orchestrator.types import Request, Response
from providers.anthropic import AnthropicMessages
from providers.azure import AzureOpenAI
from providers.bedrock import BedrockConverse
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.openai import OpenAIChat
from providers.simulator import Fault, SimulatedServer
from providers.vertex import VertexAnthropic, VertexGemini

VENDORS = ("openai", "anthropic", "gemini", "azure", "bedrock", "vertex_anthropic", "vertex_gemini")
VERTEX = {"vertex_anthropic": VertexAnthropic, "vertex_gemini": VertexGemini}
TIMEOUT = 0.3
CLIENTS = ("shared", "httpx", "reqwest")


@pytest.fixture(params=CLIENTS)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[httpx.AsyncClient | str | None]:
    """How the providers send: None (the shared transport), a user's httpx client
    (``client=``), or the name of a transport (``transport=``)."""
    if request.param == "shared":
        yield None
        return
    if request.param != "httpx":
        yield request.param
        return
    async with httpx.AsyncClient() as user_client:
        yield user_client
        assert not user_client.is_closed  # a provider never closes a user's client


def sending(client: Any) -> dict[str, Any]:
    """The provider keyword arguments for the ``client`` fixture's value."""
    if client is None:
        return {}
    return {"transport": client} if isinstance(client, str) else {"client": client}


def make(route: str, sim: SimulatedServer, client: Any = None, **kw: Any) -> Any:
    kw.update(sending(client))
    if route == "openai":
        return OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key="sk-test-0123456789", **kw)
    if route == "anthropic":
        return AnthropicMessages(
            "claude-sim", base_url=sim.anthropic_url, api_key="sk-ant-test-0123456789", **kw
        )
    if route == "gemini":
        return GeminiGenerate("gemini-sim", base_url=sim.gemini_url, api_key="AIza-test-0123", **kw)
    if route == "azure":
        return AzureOpenAI(
            deployment="gpt-sim",
            endpoint=sim.azure_url,
            api_version="2024-10-21",
            api_key="azure-test-0123456789",
            **kw,
        )
    if route == "bedrock":
        return bedrock(sim.bedrock_url, **kw)
    if route in VERTEX:
        where = {"project": "sim-project", "location": "us-east5", "base_url": sim.vertex_url}
        return VERTEX[route]("sim-model", access_token=sim.vertex_token, **where, **kw)
    return HTTPFallback(sim.http_url, **kw)


def bedrock(endpoint_url: str, **kw: Any) -> BedrockConverse:
    """A Bedrock provider signing with the simulator's AWS credentials."""
    import botocore.credentials

    from providers.simulator.server import SIM_AWS_KEY_ID, SIM_AWS_SECRET

    key = botocore.credentials.Credentials(SIM_AWS_KEY_ID, SIM_AWS_SECRET)
    return BedrockConverse(
        "us.anthropic.claude-sim-v1:0",
        region="us-east-1",
        endpoint_url=endpoint_url,
        credentials=key,
        **kw,
    )


async def call(provider: Any, mode: str, request: Request) -> tuple[list[str], Response]:
    if mode == "complete":
        return [], await provider.complete(request)
    chunks: list[str] = []
    final: Response | None = None
    async for item in provider.stream(request):
        if isinstance(item, Response):
            final = item
        elif item:  # not PROGRESS (an event without content)
            assert final is None, "a chunk came after the final Response"
            chunks.append(item)
    assert final is not None, "stream ended without a final Response"
    return chunks, final


def by_route(**classes: type[E.ProviderError]) -> Callable[[str], type[E.ProviderError]]:
    default = classes.pop("default")
    return lambda route: classes.get(route, default)


CASES: list[tuple[str, Callable[[], Fault], Callable[[str], type[E.ProviderError]]]] = [
    ("503", lambda: Fault.status(503), by_route(default=E.ServerError)),
    ("500", lambda: Fault.server_error(), by_route(default=E.ServerError)),
    ("502", lambda: Fault.server_error(502), by_route(default=E.ServerError)),
    ("504", lambda: Fault.server_error(504), by_route(default=E.ServerError)),
    # Bedrock's 408 is ModelTimeoutException: the model timed out, a timeout.
    ("408", lambda: Fault.status(408), by_route(bedrock=E.ProviderTimeout, default=E.ServerError)),
    ("429", lambda: Fault.rate_limited(2), by_route(default=E.RateLimited)),
    (
        "overloaded",
        Fault.overloaded,
        by_route(anthropic=E.Overloaded, vertex_anthropic=E.Overloaded, default=E.ServerError),
    ),
    ("401", lambda: Fault.auth(401), by_route(default=E.AuthenticationFailed)),
    ("403", lambda: Fault.auth(403), by_route(default=E.AuthenticationFailed)),
    ("quota", Fault.quota, by_route(default=E.QuotaExhausted)),
    ("404", Fault.model_not_found, by_route(default=E.ModelNotFound)),
    ("400", Fault.bad_request, by_route(default=E.InvalidRequest)),
    ("context", Fault.context_too_long, by_route(default=E.ContextWindowExceeded)),
    ("filter", Fault.content_filter, by_route(default=E.GuardrailTriggered)),
    ("hang", Fault.hang, by_route(default=E.ProviderTimeout)),
    ("invalid_json", Fault.invalid_json, by_route(default=E.InvalidOutput)),
    ("missing_field", Fault.missing_field, by_route(default=E.InvalidOutput)),
]


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", [*VENDORS, "http"])
@pytest.mark.parametrize(("label", "fault", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_fault_matrix(
    sim: SimulatedServer,
    client: httpx.AsyncClient | str | None,
    route: str,
    mode: str,
    label: str,
    fault: Callable[[], Fault],
    expected: Callable[[str], type[E.ProviderError]],
) -> None:
    sim.script(route, [fault()])
    provider = make(route, sim, client, timeout=TIMEOUT)
    with pytest.raises(E.ProviderError) as info:
        await call(provider, mode, Request("What is the capital of France?"))
    err = info.value
    assert type(err) is expected(route), f"{label} on {route}/{mode}: {err!r}"
    assert err.provider == provider.name
    assert sim.count(route) == 1
    assert "capital of France" not in str(err)
    if label == "429":
        assert isinstance(err, E.RateLimited) and err.retry_after == 2.0


@pytest.mark.parametrize("route", VENDORS)
@pytest.mark.parametrize("how", ["end", "abort"])
async def test_cut_stream_is_interrupted_never_truncated(
    sim: SimulatedServer, client: Any, route: str, how: str
) -> None:
    sim.script(route, [Fault.cut_stream(after=2, how=how)])
    chunks: list[str] = []
    with pytest.raises(E.StreamInterrupted):
        async for item in make(route, sim, client).stream(Request("hello there")):
            assert isinstance(item, str), "no final Response on a cut stream"
            if item:  # not PROGRESS (an event without content)
                chunks.append(item)
    assert len(chunks) == 2
    assert sim.count(route) == 1


@pytest.mark.parametrize("route", VENDORS)
async def test_stream_stalled_after_chunks_times_out(
    sim: SimulatedServer, client: Any, route: str
) -> None:
    sim.script(route, [Fault.cut_stream(after=1, how="hang")])
    with pytest.raises(E.ProviderTimeout):
        async for _ in make(route, sim, client, timeout=TIMEOUT).stream(Request("hi")):
            pass
    assert sim.count(route) == 1


@pytest.mark.parametrize("route", VENDORS)
async def test_cut_body_on_complete_is_connection_failed(
    sim: SimulatedServer, client: Any, route: str
) -> None:
    sim.script(route, [Fault.cut_stream()])
    with pytest.raises(E.ConnectionFailed) as info:
        await make(route, sim, client).complete(Request("hi"))
    assert not isinstance(info.value.__cause__, E.ProviderError)
    assert info.value.__cause__ is not None
    assert sim.count(route) == 1


@pytest.mark.parametrize("route", [*VENDORS, "http"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_connection_refused_is_connection_failed(client: Any, route: str, mode: str) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider: Any
    kw = sending(client)
    if route == "http":
        provider = HTTPFallback(base + "/x", **kw)
    elif route == "azure":
        provider = AzureOpenAI(deployment="m", endpoint=base, api_key="k", **kw)
    elif route == "bedrock":
        provider = bedrock(base, **kw)
    elif route in VERTEX:
        where = {"project": "p", "location": "us-east5", "access_token": "t"}
        provider = VERTEX[route]("m", base_url=base + "/v1", **kw, **where)
    else:
        cls: Any = {"openai": OpenAIChat, "anthropic": AnthropicMessages, "gemini": GeminiGenerate}
        provider = cls[route]("m", base_url=base, api_key="k", **kw)
    with pytest.raises(E.ConnectionFailed) as info:
        await call(provider, mode, Request("hi"))
    assert info.value.__cause__ is not None


@pytest.mark.parametrize("route", [*VENDORS, "http"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_ok_text_usage_and_cost(
    sim: SimulatedServer, client: Any, route: str, mode: str
) -> None:
    sim.script(route, [Fault.ok("Paris is the capital.", chunks=3, usage=(1000, 500))])
    provider = make(route, sim, client, price=(1.0, 4.0))
    chunks, response = await call(provider, mode, Request("capital?"))
    assert response.text == "Paris is the capital."
    if mode == "stream" and route != "http":
        assert len(chunks) == 3
    if mode == "stream":
        assert "".join(chunks) == response.text
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1000, 500)
    assert response.cost_usd == pytest.approx(1000 * 1.0 / 1e6 + 500 * 4.0 / 1e6)
    assert sim.count(route) == 1


@pytest.mark.parametrize("route", VENDORS)
async def test_slow_reply_within_timeout_succeeds(
    sim: SimulatedServer, client: Any, route: str
) -> None:
    sim.script(route, [Fault.delay(0.05, Fault.ok("late"))])
    response = await make(route, sim, client, timeout=2.0).complete(Request("hi"))
    assert response.text == "late"


@pytest.mark.parametrize("route", VENDORS)
async def test_prompt_blocked_is_guardrail(sim: SimulatedServer, client: Any, route: str) -> None:
    sim.script(route, [Fault.content_filter(prompt_blocked=True)] * 2)
    provider = make(route, sim, client)
    for mode in ("complete", "stream"):
        with pytest.raises(E.GuardrailTriggered):
            await call(provider, mode, Request("hi"))
    assert sim.count(route) == 2

"""Regression tests for the HTTP providers' security review: redirects, secrets in
messages and reprs, credentials in URLs and headers, proxies, and malformed replies.

Every server here is a small aiohttp app on 127.0.0.1 whose handler each test sets.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web

from orchestrator import errors as E
from orchestrator.secrets import (
    check_endpoint,
    has_url_credentials,
    header_secrets,
    redact_url,
    url_secrets,
)
from orchestrator.types import Request, Response
from providers.anthropic import AnthropicMessages
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.http.proxy import ProxyRefused, ProxyRoutes
from providers.http.transports.base import as_transport_error
from providers.openai import OpenAIChat

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Server:
    """A loopback server whose ``handler`` a test sets; ``hits`` counts requests."""

    def __init__(self) -> None:
        self.handler: Handler | None = None
        self.hits: list[web.Request] = []
        self.url = ""

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request)
        assert self.handler is not None
        return await self.handler(request)


@asynccontextmanager
async def serving() -> AsyncIterator[Server]:
    """A started :class:`Server` on a free loopback port, cleaned up on exit."""
    server = Server()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server._dispatch)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        server.url = f"http://127.0.0.1:{port}"
        yield server
    finally:
        await runner.cleanup()


@pytest.fixture
async def srv() -> AsyncIterator[Server]:
    async with serving() as server:
        yield server


def vendor(route: str, base: str, **kw: Any) -> Any:
    kw.setdefault("api_key", "test-key-0123456789")
    if route == "openai":
        return OpenAIChat("m", base_url=f"{base}/v1", **kw)
    if route == "anthropic":
        return AnthropicMessages("m", base_url=base, **kw)
    return GeminiGenerate("m", base_url=base, **kw)


async def drain(provider: Any) -> list[Any]:
    return [item async for item in provider.stream(Request("hi"))]


# -- 1. redirects are not followed -----------------------------------------------------------


@pytest.mark.parametrize("route", ["openai", "anthropic", "gemini", "http"])
@pytest.mark.parametrize("client", ["shared", "aiohttp", "httpx", "reqwest"])
async def test_redirect_is_not_followed_and_is_unusable(
    srv: Server, route: str, client: str
) -> None:
    async with serving() as other:  # another origin, where a redirect would lead

        async def redirect(request: web.Request) -> web.StreamResponse:
            raise web.HTTPTemporaryRedirect(f"{other.url}/steal{request.path}")

        async def catcher(request: web.Request) -> web.StreamResponse:
            return web.json_response({"text": "pwned"})

        srv.handler, other.handler = redirect, catcher
        user: Any = None
        if client == "aiohttp":
            user = aiohttp.ClientSession()
        elif client == "httpx":
            user = httpx.AsyncClient(follow_redirects=True)  # the transport still refuses
        kw: dict[str, Any] = {"transport": client} if client == "reqwest" else {"client": user}
        try:
            if route == "http":
                provider: Any = HTTPFallback(
                    f"{srv.url}/c", headers={"authorization": "Bearer tok-1234"}, **kw
                )
            else:
                provider = vendor(route, srv.url, **kw)
            with pytest.raises(E.UnusableError, match=r"check (base_)?url") as info:
                await provider.complete(Request("hi"))
            assert info.value.status == 307
            with pytest.raises(E.UnusableError, match=r"check (base_)?url"):
                await drain(provider)
        finally:
            if user is not None:
                await (user.aclose() if client == "httpx" else user.close())
        assert other.hits == []  # neither the key nor the prompt went to the other origin


async def test_redirect_loop_is_unusable_not_connection_failed_and_hides_the_token(
    srv: Server,
) -> None:
    async def loop(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(str(request.url))

    srv.handler = loop
    provider = HTTPFallback(f"{srv.url}/hook?token=HOOKSECRET42")
    with pytest.raises(E.UnusableError) as info:
        await provider.complete(Request("hi"))
    assert "HOOKSECRET42" not in str(info.value) and len(srv.hits) == 1


# -- 2. the key read from the environment is masked -----------------------------------------


def _echo_key(request: web.Request) -> str:
    for name in ("authorization", "x-api-key", "x-goog-api-key"):
        if name in request.headers:
            return request.headers[name].removeprefix("Bearer ")
    return ""


@pytest.mark.parametrize(
    ("route", "env"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ],
)
async def test_key_from_the_environment_is_masked_when_echoed(
    srv: Server, route: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "gsk_9fJx2Lq7Vt8Zr3Wp6Yn1"  # not key-shaped for the generic pattern

    async def echo(request: web.Request) -> web.StreamResponse:
        text = f"Invalid proxy server token passed. Received API Key = {_echo_key(request)}"
        body = {"error": {"message": text, "type": "auth_error", "code": 401}}
        return web.json_response(body, status=401)

    srv.handler = echo
    monkeypatch.setenv(env, key)
    provider = vendor(route, srv.url, api_key=None)
    for call in (provider.complete(Request("hi")), drain(provider)):
        with pytest.raises(E.AuthenticationFailed) as info:
            await call
        assert key not in str(info.value) and "Received API Key = ***" in str(info.value)


async def test_in_stream_error_echoing_the_env_key_is_masked(
    srv: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "xai-abcdefghijklmnop"

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        event = {"error": {"message": f"key {_echo_key(request)} revoked", "code": 401}}
        await resp.write(f"data: {json.dumps(event)}\n\n".encode())
        return resp

    srv.handler = stream
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(E.AuthenticationFailed) as info:
        await drain(vendor("openai", srv.url, api_key=None))
    assert key not in str(info.value)


# -- 3. check_endpoint messages never show URL credentials ----------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://bot:pw-s3cr3t@evil.example/x?token=TOKSECRET",
        "ftp://bot:pw-s3cr3t@evil.example/x?token=TOKSECRET",
        "http://bot:pw-s3cr3t@evil.example:99999/x?token=TOKSECRET",
        "bot:pw-s3cr3t@evil.example/x?token=TOKSECRET",
    ],
)
def test_check_endpoint_messages_are_redacted(url: str) -> None:
    with pytest.raises(ValueError) as info:
        check_endpoint(url, field="X.base_url", allow_insecure_http=False)
    assert "pw-s3cr3t" not in str(info.value) and "TOKSECRET" not in str(info.value)
    assert "X.base_url=" in str(info.value)


def test_redact_url_and_url_secrets() -> None:
    url = "https://team:pw-s3cr3t@gw.example:8443/v1?key=AB%2FCD&alt=sse#frag"
    assert redact_url(url) == "https://gw.example:8443/v1"
    values = {s.reveal() for s in url_secrets(url)}
    assert {"pw-s3cr3t", "AB%2FCD", "AB/CD"} <= values and "sse" not in values
    assert has_url_credentials(url) and has_url_credentials("http://h/x?access_token=t")
    assert not has_url_credentials("http://h/x?alt=sse&model=m")


# -- 4. credentials in an HTTPFallback URL need https or loopback ----------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://bot:hunter2@hooks.corp.example/complete",
        "http://hooks.corp.example/complete?token=SECRET123",
        "http://hooks.corp.example/complete?api_key=SECRET123",
        "http://hooks.corp.example/complete?sig=SECRET123",
    ],
)
def test_http_fallback_url_credentials_refused_over_plain_http(url: str) -> None:
    with pytest.raises(ValueError, match="allow_insecure_http") as info:
        HTTPFallback(url)
    assert "hunter2" not in str(info.value) and "SECRET123" not in str(info.value)
    assert HTTPFallback(url, allow_insecure_http=True)
    assert HTTPFallback(url.replace("http://", "https://"))
    assert HTTPFallback(url.replace("hooks.corp.example", "127.0.0.1:8080"))


def test_http_fallback_without_credentials_may_use_plain_http() -> None:
    assert HTTPFallback("http://hooks.corp.example/complete?mode=fast")


# -- 5. URL credentials stay out of reprs and transport errors ------------------------------


def test_repr_hides_url_credentials() -> None:
    # User info in a vendor's base_url is refused at construction (issue 8, section 7);
    # a credential query parameter is the vendor URL credential left to hide.
    provider = OpenAIChat("m", base_url="https://gw.example/v1?key=pw-s3cr3t&k=1", api_key="x")
    assert "pw-s3cr3t" not in repr(provider) and "https://gw.example/v1" in repr(provider)
    fallback = HTTPFallback("https://bot:pw-s3cr3t@h.example/c?token=TOKSECRET")
    assert "pw-s3cr3t" not in repr(fallback) and "TOKSECRET" not in repr(fallback)


def test_transport_error_messages_redact_urls() -> None:
    url = "http://user:pw-s3cr3t@127.0.0.1:1/hook?token=HOOKSECRET42"
    exc = RuntimeError(f"failed: url='{url}' (token HOOKSECRET42)")
    err = as_transport_error(exc, url)
    assert "HOOKSECRET42" not in str(err) and "pw-s3cr3t" not in str(err)
    assert "http://127.0.0.1:1/hook" in str(err)


async def test_connection_failure_message_hides_url_credentials(srv: Server) -> None:
    async def drop(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()  # reset mid-request
        return web.Response()

    srv.handler = drop
    provider = HTTPFallback(f"http://u:pw-s3cr3t@{srv.url[7:]}/c?token=HOOKSECRET42")
    with pytest.raises(E.ConnectionFailed) as info:
        await provider.complete(Request("hi"))
    assert "HOOKSECRET42" not in str(info.value) and "pw-s3cr3t" not in str(info.value)


# -- 6. HTTPFallback masks the credential headers it sent -----------------------------------


@pytest.mark.parametrize("form", ["dict", "sync", "async"])
async def test_http_fallback_masks_echoed_header_tokens(srv: Server, form: str) -> None:
    token = "hfq_7Hd82kLmPq0ZxY3"
    sent = {"Authorization": f"Bearer {token}", "X-Tenant": "acme", "x-custom-key": "k-999888"}

    async def echo(request: web.Request) -> web.StreamResponse:
        text = (
            f"token {request.headers['authorization']} is expired; raw {token}; "
            f"key {request.headers['x-custom-key']}; tenant {request.headers['x-tenant']}"
        )
        return web.json_response({"error": {"message": text}}, status=401)

    async def async_headers() -> dict[str, str]:
        return sent

    headers: Any = {"dict": sent, "sync": lambda: sent, "async": async_headers}[form]
    srv.handler = echo
    with pytest.raises(E.AuthenticationFailed) as info:
        await HTTPFallback(f"{srv.url}/c", headers=headers).complete(Request("hi"))
    text = str(info.value)
    assert token not in text and "k-999888" not in text and "tenant acme" in text


def test_header_secrets_pick_credential_headers() -> None:
    values = {
        s.reveal()
        for s in header_secrets(
            {"Authorization": "Bearer abcd1234", "api-key": "zzzz", "Accept": "text/plain"}
        )
    }
    assert values == {"Bearer abcd1234", "abcd1234", "zzzz"}


async def test_vendor_extra_credential_headers_are_masked(srv: Server) -> None:
    async def echo(request: web.Request) -> web.StreamResponse:
        text = f"gateway token {request.headers['cf-aig-authorization']} rejected"
        return web.json_response({"error": {"message": text}}, status=401)

    srv.handler = echo
    provider = vendor("openai", srv.url, extra_headers={"cf-aig-authorization": "gw-tok-555"})
    with pytest.raises(E.AuthenticationFailed) as info:
        await provider.complete(Request("hi"))
    assert "gw-tok-555" not in str(info.value)


# -- 7. proxies ---------------------------------------------------------------------------------


async def test_loopback_targets_bypass_the_environment_proxy(
    srv: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serving() as other:  # the proxy

        async def ok(request: web.Request) -> web.StreamResponse:
            return web.json_response({"content": [{"type": "text", "text": "direct"}]})

        async def proxy(request: web.Request) -> web.StreamResponse:
            return web.json_response({"content": [{"type": "text", "text": "via proxy"}]})

        srv.handler, other.handler = ok, proxy
        monkeypatch.setenv("HTTP_PROXY", other.url)  # a loopback stand-in for proxy.corp:3128
        monkeypatch.setenv("ALL_PROXY", other.url)
        provider = vendor("anthropic", srv.url.replace("127.0.0.1", "localhost"))
        assert (await provider.complete(Request("hi"))).text == "direct"
        assert other.hits == [] and len(srv.hits) == 1


def test_plain_http_proxy_refuses_credentials_to_an_http_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Decided before any connection: nothing here touches the network. Both pooled
    # transports (aiohttp, reqwest) route and refuse through ProxyRoutes.
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp.invalid:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    routes = ProxyRoutes()
    with pytest.raises(ProxyRefused, match="NO_PROXY") as info:
        routes.checked("http://gw.corp.invalid/v1", {"x-api-key": "k"})
    assert as_transport_error(info.value, "http://gw.corp.invalid/v1").refused
    with pytest.raises(ProxyRefused):
        routes.checked("http://u:p@gw.corp.invalid/v1", {})
    proxy, clear = routes.checked("http://gw.corp.invalid/v1", {"accept": "*/*"})
    assert clear and proxy is not None and proxy.host == "proxy.corp.invalid"  # allowed
    proxy, clear = routes.checked("https://api.example.invalid/v1", {"x-api-key": "k"})
    assert proxy is not None and not clear  # tunnelled (CONNECT): allowed
    assert routes.checked("http://127.0.0.1:9/v1", {"x-api-key": "k"})[0] is None
    monkeypatch.setenv("NO_PROXY", "gw.corp.invalid")
    assert ProxyRoutes().checked("http://gw.corp.invalid/v1", {"x-api-key": "k"})[0] is None


# -- 13. malformed 2xx replies raise InvalidOutput only --------------------------------------

_MALFORMED = [
    (
        "openai",
        {
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": "n/a"},
        },
    ),
    ("openai", {"choices": ["hi"]}),
    ("openai", ["not", "an", "object"]),
    ("anthropic", {"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": "?"}}),
    ("anthropic", {"content": "hi"}),
    (
        "gemini",
        {
            "candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": "x"},
        },
    ),
    ("gemini", {"candidates": ["hi"]}),
    ("http", {"text": "hi", "usage": {"input_tokens": "lots"}}),
]


@pytest.mark.parametrize(("route", "body"), _MALFORMED)
async def test_malformed_reply_is_invalid_output(srv: Server, route: str, body: Any) -> None:
    async def reply(request: web.Request) -> web.StreamResponse:
        return web.json_response(body)

    srv.handler = reply
    provider = HTTPFallback(f"{srv.url}/c") if route == "http" else vendor(route, srv.url)
    with pytest.raises(E.InvalidOutput) as info:
        await provider.complete(Request("hi"))
    assert type(info.value.__cause__) is not E.InvalidOutput or info.value.__cause__ is None


_BAD_EVENTS = {
    "openai": [
        {"choices": [{"index": 0, "delta": "oops"}]},
        {"choices": [{"index": 0, "delta": {"content": "a"}}], "usage": {"prompt_tokens": "x"}},
    ],
    "anthropic": [
        {"type": "message_start", "message": {"usage": {"input_tokens": "x"}}},
        {"type": "content_block_delta", "delta": "oops"},
    ],
    "gemini": [
        {
            "candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": [1]},
        },
        {"candidates": [{"content": {"parts": "oops"}}]},
        {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": ["STOP"]}]},
    ],
}


@pytest.mark.parametrize(
    ("route", "event"), [(r, e) for r, events in _BAD_EVENTS.items() for e in events]
)
async def test_malformed_stream_event_is_invalid_output(
    srv: Server, route: str, event: Any
) -> None:
    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(f"data: {json.dumps(event)}\n\n".encode())
        return resp

    srv.handler = stream
    with pytest.raises(E.InvalidOutput):
        await drain(vendor(route, srv.url))


# -- SSE: a stream cut inside an event is interrupted, not malformed ------------------------


@pytest.mark.parametrize("route", ["openai", "anthropic", "gemini"])
async def test_stream_cut_between_data_lines_is_interrupted(srv: Server, route: str) -> None:
    async def cut(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'data: {"a":\n')  # the event's JSON continues on a next data: line
        return resp

    srv.handler = cut
    with pytest.raises(E.StreamInterrupted):
        await drain(vendor(route, srv.url))


async def test_stream_with_cr_line_endings_and_bom_is_read(srv: Server) -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "he"}}]},
        {"choices": [{"index": 0, "delta": {"content": "llo"}, "finish_reason": "stop"}]},
    ]
    raw = b"\xef\xbb\xbf" + b"".join(f"data: {json.dumps(c)}\r\r".encode() for c in chunks)
    raw += b"data: [DONE]\r\r"

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(0, len(raw), 7):  # split anywhere, the BOM and CRs included
            await resp.write(raw[i : i + 7])
        return resp

    srv.handler = stream
    items = await drain(vendor("openai", srv.url))
    final = items[-1]
    assert isinstance(final, Response) and final.text == "hello"
    assert final.finish_reason == "stop"

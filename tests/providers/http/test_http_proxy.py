"""The environment's proxy for a URL, read with the standard library (no private aiohttp API)."""

from __future__ import annotations

import warnings

import aiohttp
import aiohttp.helpers
import pytest

from providers.http.proxy import DIRECT, env_route

_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    for name in _VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("NETRC", "/nonexistent/netrc")
    # Reading the environment must not depend on aiohttp's private helpers.
    monkeypatch.delattr(aiohttp.helpers, "get_env_proxy_for_url")
    monkeypatch.delattr(aiohttp.helpers, "proxies_from_env")


def test_no_proxy_variables_means_direct() -> None:
    assert env_route("https://api.example.invalid/v1") == DIRECT


def test_proxy_credentials_stay_in_the_proxy_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pa%3Ass@proxy.corp.invalid:3128")
    route = env_route("https://api.example.invalid/v1")
    assert route.proxy is not None and route.proxy.host == "proxy.corp.invalid"
    assert (route.proxy.user, route.proxy.password) == ("user", "pa:ss")
    assert not route.clear  # an https target is tunnelled: the proxy sees no header


def test_netrc_gives_the_proxy_login(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    from pathlib import Path

    netrc = Path(str(tmp_path)) / "netrc"
    netrc.write_text("machine proxy.corp.invalid login bob password s3cret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp.invalid:3128")
    route = env_route("http://gw.corp.invalid/v1")
    assert route.proxy is not None
    assert (route.proxy.user, route.proxy.password) == ("bob", "s3cret")
    assert route.clear  # plain http through a plain-http proxy


@pytest.mark.parametrize(
    ("target", "no_proxy"),
    [
        ("http://127.0.0.1:8080/v1", ""),  # loopback: never proxied
        ("http://localhost/v1", ""),
        ("http://[::1]:9/v1", ""),
        ("https://api.example.invalid/v1", "example.invalid"),  # NO_PROXY suffix
        ("https://api.example.invalid/v1", "*"),
    ],
)
def test_direct_targets(monkeypatch: pytest.MonkeyPatch, target: str, no_proxy: str) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp.invalid:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp.invalid:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert env_route(target) == DIRECT


def test_an_https_proxy_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # As with aiohttp's trust_env: it speaks to http proxies only, so the request goes direct.
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.corp.invalid:3128")
    assert env_route("https://api.example.invalid/v1") == DIRECT


def test_a_loopback_proxy_is_not_a_clear_hop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    route = env_route("http://gw.corp.invalid/v1")
    assert route.proxy is not None and route.proxy.port == 3128 and not route.clear


async def test_the_proxy_gets_the_request_and_its_login(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plain-http target through an http proxy: the proxy gets the absolute URL and
    # the login as Proxy-Authorization (from the proxy URL: no deprecated proxy_auth=).
    from aiohttp import web

    from providers.http.transports import AiohttpTransport

    seen: list[tuple[str, str | None]] = []

    async def proxy(request: web.Request) -> web.Response:
        seen.append((str(request.url), request.headers.get("Proxy-Authorization")))
        return web.json_response({"via": "proxy"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://bob:s3cret@127.0.0.1:{port}")
        async with aiohttp.ClientSession() as session:
            transport = AiohttpTransport(session, env_proxy=True)
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)
                reply = await transport.post("http://gw.corp.invalid/v1", {}, b"{}", 5.0)
    finally:
        await runner.cleanup()
    assert reply.status == 200 and reply.body == b'{"via": "proxy"}'
    assert seen == [("http://gw.corp.invalid/v1", "Basic Ym9iOnMzY3JldA==")]

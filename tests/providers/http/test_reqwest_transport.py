"""``transport="reqwest"`` (pyreqwest, the ``[fast]`` extra) behaves as the aiohttp transport.

Over real loopback HTTP: a stream's first event arrives before the stream ends,
proxies come from the environment (loopback never proxied, credentials never
over a plain-http hop), TLS certificates are verified, many calls in flight
keep exact counts, a cancelled call's exchange ends by its timeout, and the
library is imported only when chosen. The fault matrix itself runs over this
transport in ``test_http_matrix.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator import errors as E
from orchestrator.config import ConfigError, load_config
from orchestrator.types import Request
from providers import AnthropicMessages, HTTPFallback, OpenAIChat
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import call
from tests.timing import Stopwatch

TRANSPORTS = ("aiohttp", "reqwest")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]


class Raw:
    """A raw HTTP/1.1 server on loopback: ``handler`` answers each connection."""

    def __init__(self, server: asyncio.Server, scheme: str = "http") -> None:
        self.server = server
        self.url = f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def raw(handler: Handler, ssl_context: ssl.SSLContext | None = None) -> Raw:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=ssl_context)
    return Raw(server, "https" if ssl_context else "http")


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse(text: str) -> bytes:
    event = {"choices": [{"index": 0, "delta": {"content": text}}]}
    return chunk(f"data: {json.dumps(event)}\n\n".encode())


STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


# -- streaming: the first event is not held back --------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_streams_first_event_arrives_before_the_rest_is_sent(transport: str) -> None:
    # The server sends one small event, then waits until the caller has it: a transport
    # that buffers the body before handing it over (pyreqwest reads 64 KiB first by
    # default) would see nothing until the server gives up.
    got_first = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(STREAM_HEAD + sse("first"))
        await writer.drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(got_first.wait(), 2.0)
        writer.write(sse(" second" if got_first.is_set() else " too late"))
        writer.write(chunk(b"data: [DONE]\n\n"))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await raw(answer)
    provider = OpenAIChat(
        "m", base_url=server.url + "/v1", api_key="k", timeout=5, transport=transport
    )
    chunks: list[str] = []
    async with server.server:
        async for item in provider.stream(Request("hi")):
            if isinstance(item, str) and item:
                chunks.append(item)
                got_first.set()
    assert chunks == ["first", " second"]


# -- proxies from the environment --------------------------------------------------------


def _clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("NETRC", "/nonexistent/netrc")


async def test_reqwest_sends_through_the_environments_proxy_with_its_login(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b'HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{"text": "via"} ')
        await writer.drain()
        writer.close()

    server = await raw(proxy)
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", server.url.replace("http://", "http://bob:s3cret@"))
    async with server.server, HTTPFallback("http://gw.corp.invalid/c", transport="reqwest") as p:
        assert (await p.complete(Request("hi"))).text == "via"
    assert len(seen) == 1
    head = seen[0].decode().lower()
    assert head.startswith("post http://gw.corp.invalid/c http/1.1")  # absolute URL: a proxy
    assert "proxy-authorization: basic " + "Ym9iOnMzY3JldA==".lower() in head  # bob:s3cret


async def test_reqwest_never_proxies_loopback_and_refuses_credentials_over_a_clear_hop(
    sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clean_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.corp.invalid:3128")  # would fail if used
    monkeypatch.setenv("ALL_PROXY", "http://proxy.corp.invalid:3128")
    local = OpenAIChat("m", base_url=sim.openai_url, api_key="k-1234567890", transport="reqwest")
    remote = OpenAIChat(
        "m",
        base_url="http://gw.corp.invalid/v1",
        api_key="k-1234567890",
        transport="reqwest",
        allow_insecure_http=True,
    )
    async with local, remote:
        assert (await local.complete(Request("hi"))).text  # direct, though a proxy is set
        with pytest.raises(E.UnusableError, match="refused to send credentials") as info:
            await remote.complete(Request("hi"))
    assert "k-1234567890" not in str(info.value)
    assert sim.count("openai") == 1


# -- TLS: certificates are verified ------------------------------------------------------


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    """A server TLS context with a self-signed certificate for 127.0.0.1 (made by openssl)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command: apt-get install openssl")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    args = "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
    subject = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        [openssl, *args.split(), "-keyout", str(key), "-out", str(cert), *subject],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_self_signed_certificate_is_refused(
    self_signed: ssl.SSLContext, transport: str
) -> None:
    requests: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            requests.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            await writer.drain()
        writer.close()

    server = await raw(answer, self_signed)
    provider = AnthropicMessages(
        "m", base_url=server.url, api_key="sk-ant-secret-0123", transport=transport
    )
    async with server.server:
        for mode in ("complete", "stream"):
            with pytest.raises(E.ConnectionFailed) as info:
                await call(provider, mode, Request("hi"))
            assert "certificate" in str(info.value).lower(), str(info.value)
            assert "sk-ant-secret-0123" not in str(info.value)
    assert requests == []  # the key never crossed the unverified connection


# -- many calls in flight ----------------------------------------------------------------


async def test_sixty_four_calls_in_flight_keep_exact_counts_and_classes(
    sim: SimulatedServer,
) -> None:
    faults = [Fault.ok("fine"), Fault.status(503), Fault.hang(), Fault.cut_stream()]
    sim.script("openai", [faults[i % 4] for i in range(64)])
    provider = OpenAIChat(
        "m", base_url=sim.openai_url, api_key="k", timeout=0.5, transport="reqwest"
    )

    async def one() -> str:
        try:
            return (await provider.complete(Request("hi"))).text
        except E.ProviderError as err:
            return type(err).__name__

    async with provider:
        outcomes = await asyncio.gather(*(one() for _ in range(64)))
    assert sim.count("openai") == 64
    kinds = sorted(set(outcomes))
    assert kinds == ["ConnectionFailed", "ProviderTimeout", "ServerError", "fine"]
    assert sorted(outcomes.count(k) for k in kinds) == [16, 16, 16, 16]


# -- cancellation ------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_cancelled_call_returns_at_once_and_its_connection_ends_by_its_timeout(
    transport: str,
) -> None:
    # pyreqwest does not abort the exchange it handed to Rust when the awaiting task is
    # cancelled: the timeout bounds what a cancelled call keeps open (aiohttp closes at once).
    closed_after: list[float] = []
    cancelled_at = 0.0

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await reader.read()  # until the client closes the connection
        closed_after.append(time.monotonic() - cancelled_at)
        writer.close()

    server = await raw(silent)
    provider = OpenAIChat(
        "m", base_url=server.url + "/v1", api_key="k", timeout=0.6, transport=transport
    )
    async with server.server, provider:
        for mode in ("complete", "stream"):
            task = asyncio.ensure_future(call(provider, mode, Request("hi")))
            await asyncio.sleep(0.1)
            cancelled_at, cancelling = time.monotonic(), Stopwatch()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert cancelling.elapsed() < 0.1  # the caller is free at once (own seconds)
            deadline = time.monotonic() + 2.0
            while len(closed_after) < (1 if mode == "complete" else 2):
                assert time.monotonic() < deadline, "the cancelled exchange was never closed"
                await asyncio.sleep(0.01)
    limit = 0.2 if transport == "aiohttp" else 0.6 + 0.3
    assert max(closed_after) < limit, closed_after


# -- choosing it: code, chain file, the missing extra, import discipline -----------------


def test_a_transport_is_named_once_and_not_with_a_client() -> None:
    with pytest.raises(ValueError, match=r"transport='curl'.*'aiohttp', 'reqwest'"):
        OpenAIChat("m", base_url="https://api.example.com/v1", api_key="k", transport="curl")
    with pytest.raises(ValueError, match="not both"):
        HTTPFallback("https://h.example/c", transport="reqwest", client=object())


def test_the_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyreqwest", None)
    monkeypatch.setitem(sys.modules, "pyreqwest.client", None)
    with pytest.raises(ImportError, match=r"failover-orchestrator\[fast\]"):
        OpenAIChat("m", base_url="https://api.example.com/v1", api_key="k", transport="reqwest")


async def test_the_chain_file_key_picks_the_transport(sim: SimulatedServer, tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(
        textwrap.dedent(
            """
            providers:
              fast:
                {type: openai, model: m, base_url: "${SIM}/openai/v1", api_key: "${K}",
                 transport: reqwest}
              plain: {type: http, url: "${SIM}/http/complete", transport: reqwest}
              usual: {type: anthropic, model: m, base_url: "${SIM}/anthropic", api_key: "${K}"}
            """
        )
    )
    env = {"SIM": sim.url, "K": "k-0123456789"}
    providers = load_config(path, environ=env).providers
    assert [p._kind for p in providers.values()] == ["reqwest", "reqwest", "aiohttp"]
    for provider in providers.values():
        assert (await provider.complete(Request("hi"))).text
    path.write_text(path.read_text().replace("transport: reqwest", "transport: curl", 1))
    with pytest.raises(ConfigError, match="transport"):
        load_config(path, environ=env)


def test_pyreqwest_is_imported_only_when_chosen() -> None:
    code = textwrap.dedent(
        """
        import contextlib, io, sys
        import providers
        from providers import OpenAIChat
        OpenAIChat("m", base_url="https://api.example.com/v1", api_key="k")
        from orchestrator.__main__ import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            sys.argv = ["failover", "--help"]
            main()
        assert "pyreqwest" not in sys.modules, "imported without transport='reqwest'"
        OpenAIChat("m", base_url="https://api.example.com/v1", api_key="k", transport="reqwest")
        assert "pyreqwest" in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_an_entered_provider_opens_and_closes_its_own_reqwest_pool(
    sim: SimulatedServer,
) -> None:
    from providers.http.transports.reqwest import ReqwestTransport

    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k", transport="reqwest")
    async with provider:
        own = provider._transport
        assert isinstance(own, ReqwestTransport)
        assert (await provider.complete(Request("hi"))).text
    assert provider._transport is None
    assert (await provider.complete(Request("again"))).text  # the loop's shared one now


def test_the_shared_reqwest_client_survives_repeated_asyncio_run(sim: SimulatedServer) -> None:
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k", transport="reqwest")

    async def once() -> str:
        return (await provider.complete(Request("hi"))).text

    assert asyncio.run(once()) and asyncio.run(once())

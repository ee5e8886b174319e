"""No secret anywhere in what the HTTP providers raise, cause chain included.

For every fault of the matrix, a malformed status line, a refused connection,
bodies that echo the key and long bodies, on all four HTTP providers, complete
and stream: every exception in the raised error's ``__cause__``/``__context__``
chain is checked in ``str``, ``repr``, its attributes, ``pickle.dumps`` and
``traceback.format_exception``. None may hold the key (or the credential
header's value, which contains it), a credential of the URL, or the whole
upstream body. (aiohttp's ``ClientResponseError`` repr holds the request
headers; ``JSONDecodeError.doc`` holds the whole body.)
"""

from __future__ import annotations

import asyncio
import json
import pickle
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from orchestrator import FallbackAgent, FallbackError
from orchestrator import errors as E
from orchestrator.types import Request
from providers.anthropic import AnthropicMessages
from providers.cli import CLIAgent
from providers.cli.classify import Redactor
from providers.cli.process import CLIOutput
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.openai import OpenAIChat
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.causes import exception_chain
from tests.providers.http.test_http_matrix import CASES, call

KEYS = {
    "openai": "sk-live-SECRET123abcdef",
    "anthropic": "sk-ant-live-SECRET456abcdef",
    "gemini": "AIzaSECRET789abcdefLIVE",
    "http": "tok-SECRET-HTTP-42abcdef",
}
QUERY_SECRET = "QSECRET-7f3e9a1b"
BODY_END = "END-OF-THE-WHOLE-BODY-5c1d"
ROUTES = ("openai", "anthropic", "gemini", "http")
TIMEOUT = 0.3


def provider(
    route: str, base: str, *, query: bool = False, client: Any = None, transport: str | None = None
) -> Any:
    """A provider for ``route`` at ``base`` (the route's URL) with a distinctive key;
    ``query`` adds a credential query parameter to the URL."""
    q = f"?sig={QUERY_SECRET}" if query else ""
    key = KEYS[route]
    kw: dict[str, Any] = {"timeout": TIMEOUT, "client": client, "transport": transport}
    if route == "openai":
        return OpenAIChat("m", base_url=base + q, api_key=key, **kw)
    if route == "anthropic":
        return AnthropicMessages("m", base_url=base + q, api_key=key, **kw)
    if route == "gemini":
        return GeminiGenerate("m", base_url=base + q, api_key=key, **kw)
    return HTTPFallback(base + q, headers={"Authorization": f"Bearer {key}"}, **kw)


def _renderings(exc: BaseException) -> list[str]:
    try:
        pickled = pickle.dumps(exc).decode("latin-1")
    except Exception as why:  # an unpicklable exception cannot leak through pickle
        pickled = f"<unpicklable: {type(why).__name__}>"
    attrs = repr(getattr(exc, "__dict__", {}))
    return [str(exc), repr(exc), attrs, pickled, "".join(traceback.format_exception(exc))]


def leaks(err: BaseException, secrets: list[str]) -> list[str]:
    """What ``err`` or any exception in its cause/context chain reveals of ``secrets``."""
    found: list[str] = []
    for exc in exception_chain(err):
        for text in _renderings(exc):
            found += [f"{type(exc).__name__} shows {s[:24]!r}" for s in secrets if s in text]
    return sorted(set(found))


async def raised(route: str, mode: str, prov: Any) -> BaseException:
    try:
        await call(prov, mode, Request("What is the capital of France?"))
    except Exception as exc:
        return exc
    raise AssertionError("no error raised")


def _route_url(sim: SimulatedServer, route: str) -> str:
    return {
        "openai": sim.openai_url,
        "anthropic": sim.anthropic_url,
        "gemini": sim.gemini_url,
        "http": sim.http_url,
    }[route]


_LONG = '{"half": "' + "x" * 600 + BODY_END
_EXTRA: list[tuple[str, Callable[[str], Fault]]] = [
    ("200 echoing the key", lambda key: Fault.status(200, body=f"no JSON here; your key: {key}")),
    ("401 echoing the key", lambda key: Fault.status(401, body=f"invalid key {key} (text)")),
    ("200 long malformed body", lambda key: Fault.status(200, body=_LONG)),
    ("500 long malformed body", lambda key: Fault.status(500, body=_LONG)),
    ("cut body", lambda key: Fault.cut_stream()),
    ("aborted body", lambda key: Fault.cut_stream(how="abort")),
]
FAULTS: list[tuple[str, Callable[[str], Fault]]] = [
    *((label, lambda key, f=fault: f()) for label, fault, _ in CASES),
    *_EXTRA,
]


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("label", "fault"), FAULTS, ids=[f[0] for f in FAULTS])
async def test_no_secret_in_any_cause_for_every_fault(
    sim: SimulatedServer, route: str, mode: str, label: str, fault: Callable[[str], Fault]
) -> None:
    sim.script(route, [fault(KEYS[route])])
    err = await raised(route, mode, provider(route, _route_url(sim, route)))
    assert isinstance(err, E.ProviderError), repr(err)
    assert leaks(err, [KEYS[route], BODY_END]) == []


@pytest.fixture
async def bad_status_line() -> AsyncIterator[str]:
    """A raw server on 127.0.0.1 answering every request with a malformed status line."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.close()
    await server.wait_closed()


def _refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("client", ["shared", "httpx", "reqwest"])
@pytest.mark.parametrize("query", [False, True], ids=["key", "key+query"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_no_secret_in_cause_of_a_malformed_status_line(
    bad_status_line: str, route: str, mode: str, query: bool, client: str
) -> None:
    user = httpx.AsyncClient() if client == "httpx" else None
    kw: dict[str, Any] = {"transport": client} if client == "reqwest" else {"client": user}
    try:
        prov = provider(route, bad_status_line + "/v1", query=query, **kw)
        err = await raised(route, mode, prov)
    finally:
        if user is not None:
            await user.aclose()
    assert isinstance(err, E.ConnectionFailed), repr(err)
    assert leaks(err, [KEYS[route], QUERY_SECRET]) == []


@pytest.mark.parametrize("transport", ["aiohttp", "reqwest"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ROUTES)
async def test_no_secret_in_cause_of_a_refused_connection_with_a_query_key(
    route: str, mode: str, transport: str
) -> None:
    prov = provider(route, _refused_url() + "/v1", query=True, transport=transport)
    err = await raised(route, mode, prov)
    assert isinstance(err, E.ConnectionFailed), repr(err)
    assert leaks(err, [KEYS[route], QUERY_SECRET]) == []


async def test_no_secret_in_any_error_of_a_failed_run(bad_status_line: str) -> None:
    """Through the engine: the FallbackError, each attempt's error and their chains."""
    children = [provider(r, bad_status_line + "/v1", query=True) for r in ROUTES]
    with pytest.raises(FallbackError) as info:
        await FallbackAgent(children, max_retries=1, retry_strategy="none").run("hi")
    errors = [info.value, *(a.error for a in info.value.attempts if a.error is not None)]
    assert len(errors) == 1 + 2 * len(ROUTES)
    assert [leak for err in errors for leak in leaks(err, [*KEYS.values(), QUERY_SECRET])] == []


async def test_http_fallback_read_text_failure_is_described_not_chained(
    sim: SimulatedServer,
) -> None:
    sim.script("http", [Fault.ok(f"the reply quotes {KEYS['http']}")])

    def read_text(data: Any) -> str:
        return json.loads(data["text"])  # type: ignore[no-any-return]  # JSONDecodeError

    prov = HTTPFallback(
        sim.http_url, headers={"Authorization": f"Bearer {KEYS['http']}"}, read_text=read_text
    )
    err = await raised("http", "complete", prov)
    assert isinstance(err, E.InvalidOutput), repr(err)
    assert leaks(err, [KEYS["http"]]) == []


def test_cli_unreadable_output_is_described_not_chained() -> None:
    secret = "sk-live-CLI-SECRET-0042"
    agent = CLIAgent(["tool"], parse=lambda out: json.loads(out.stdout), env={"TOOL_KEY": secret})
    out = CLIOutput(0, f"not JSON; env TOOL_KEY={secret}" + " " * 300 + BODY_END, "")
    with pytest.raises(E.InvalidOutput) as info:
        agent.interpret(out, Redactor([secret]))
    assert leaks(info.value, [secret, BODY_END]) == []
    assert "JSONDecodeError" in str(info.value.__cause__)


def test_leaks_finds_a_secret_deep_in_the_chain() -> None:
    """The checker itself: a secret two links down, in an attribute, is found."""

    class Carrier(Exception):
        def __init__(self) -> None:
            super().__init__("nothing to see")
            self.headers = {"authorization": "Bearer sk-live-SECRET123abcdef"}

    try:
        try:
            raise Carrier()
        except Carrier as inner:
            raise ValueError("middle") from inner
    except ValueError as middle:
        outer = E.ConnectionFailed("outer", provider="p")
        outer.__context__ = middle
    assert leaks(outer, [KEYS["openai"]]) == ["Carrier shows 'sk-live-SECRET123abcdef'"]

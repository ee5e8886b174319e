"""Which upstream transport ``failover serve`` can use: a client that leaves must end its call
upstream at once (the provider stops generating, and billing, for nobody).

Over real loopback HTTP: a client sends a request and leaves while the upstream is still
silent (a model before its first token). With the default transport (aiohttp) the gateway's
upstream connection closes at once. With ``transport: reqwest`` (pyreqwest 0.15, the
``[fast]`` extra) it stays open until the provider's ``timeout``: pyreqwest runs the
exchange it handed to Rust on when the awaiting task is cancelled. That is why the gateway's
upstream stays aiohttp (docs/gateway.md); when this test sees reqwest close at once too,
pyreqwest aborts cancelled exchanges and the choice can be measured again.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from orchestrator import FallbackAgent
from providers import OpenAIChat
from tests.providers.serve.conftest import gateway

TIMEOUT = 1.5  # the provider's: what a cancelled reqwest exchange keeps its connection for
BODY = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'


@pytest.mark.parametrize("transport", ["aiohttp", "reqwest"])
async def test_a_client_that_leaves_ends_its_upstream_connection(transport: str) -> None:
    arrived, closed = asyncio.Event(), asyncio.Event()

    async def thinking(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        arrived.set()
        await reader.read()  # no answer: until the gateway closes the connection
        closed.set()
        writer.close()

    upstream = await asyncio.start_server(thinking, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{upstream.sockets[0].getsockname()[1]}/v1"
    provider = OpenAIChat(
        "m", base_url=base, api_key="k", timeout=TIMEOUT, transport=transport,
        allow_insecure_http=True,
    )  # fmt: skip
    agent = FallbackAgent([provider], max_retries=0, retry_strategy="none")
    async with upstream, gateway({"m": agent}) as url:
        _, client = await asyncio.open_connection("127.0.0.1", int(url.rsplit(":", 1)[1]))
        client.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
            + BODY
        )
        await asyncio.wait_for(arrived.wait(), 5)
        client.close()
        left = time.monotonic()
        await asyncio.wait_for(closed.wait(), TIMEOUT + 3)
        held = time.monotonic() - left
    if transport == "aiohttp":
        assert held < 0.5, held
    else:  # pyreqwest 0.15: held until the provider's timeout
        assert held > TIMEOUT / 2, held

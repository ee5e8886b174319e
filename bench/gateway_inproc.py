"""The gateway's own Python work a request, in one process, with no network.

The real ``Gateway`` and its granian adapter (``GatewayRSGI``) over the bench's chain
(``bench/gateway.py``'s ``direct``: one OpenAI provider, metrics on), driven by a fake RSGI
scope and protocol, with every provider's HTTP transport replaced by one that answers a
fixed OpenAI reply at once. What it leaves out is what the servers and the transports
do in Rust or C (granian, pyreqwest, aiohttp): the part of ``bench/gateway.py``'s CPU per
request that is ours.

    python bench/gateway_inproc.py --requests 2000            # us a request (wall, one core)
    python bench/gateway_inproc.py --requests 2000 --profile  # cProfile's top functions
    valgrind --tool=callgrind python bench/gateway_inproc.py --requests N --quiet
        # instructions: the difference of two runs (300 and 900 requests) over 600

``--stub-agent`` answers every model with a fixed reply in place of the agent (the
gateway's layers alone). Figures are for comparing two trees run the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BODY = b'{"model": "direct", "messages": [{"role": "user", "content": "ping"}]}'
REPLY = (
    b'{"id":"chatcmpl-sim","object":"chat.completion","created":1764633600,'
    b'"model":"gpt-sim","choices":[{"index":0,"message":{"role":"assistant",'
    b'"content":"pong"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}'
)
CHAIN = """
providers:
  gpt: {type: openai, model: gpt-sim, base_url: "http://127.0.0.1:9/openai/v1",
        api_key: "${K}", allow_insecure_http: true}
agents:
  direct: {providers: [gpt], max_retries: 0, retry_strategy: none}
"""


class _Upstream:
    """A pooled transport that answers ``REPLY`` with no I/O."""

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, max_bytes: int = 0
    ) -> Any:
        from providers.http.transports.base import RawReply

        return RawReply(200, {"content-type": "application/json"}, REPLY)

    @asynccontextmanager
    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the harness sends whole requests only")
        yield

    async def aclose(self) -> None:
        return None


class _Scope:
    proto, method, path, scheme, server = "http", "POST", "/v1/chat/completions", "http", ""
    headers: ClassVar[dict[str, str]] = {
        "content-type": "application/json",
        "content-length": str(len(BODY)),
        "host": "127.0.0.1:8000",
    }


class _Protocol:
    """granian's protocol as the adapter uses it: the body in one chunk, then an empty one."""

    __slots__ = ("_chunks", "status")

    def __init__(self) -> None:
        self._chunks = [b"", BODY]
        self.status = 0

    def __aiter__(self) -> _Protocol:
        return self

    async def __anext__(self) -> bytes:
        if not self._chunks:
            raise StopAsyncIteration
        return self._chunks.pop()

    def response_bytes(self, status: int, headers: Any, body: bytes) -> None:
        self.status = status

    def response_empty(self, status: int, headers: Any) -> None:
        self.status = status


async def _app(stub_agent: bool) -> tuple[Any, Any]:
    import providers.http.client as client
    from orchestrator.config.loader import load_config
    from providers.serve.auth import GatewayKeys
    from providers.serve.gateway import Gateway
    from providers.serve.meters import install_meter_provider
    from providers.serve.models import Models
    from providers.serve.rsgi import GatewayRSGI
    from providers.serve.settings import GatewaySettings

    def upstream(kind: str = "aiohttp") -> Any:
        return _Upstream()

    client.open_transport = upstream
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(CHAIN)
    try:
        config = load_config(f.name, environ={"K": "sk-bench"})
    finally:
        os.unlink(f.name)
    install_meter_provider()
    models = Models.from_config(config)
    await models.__aenter__()
    gateway = Gateway(models, GatewayKeys(), GatewaySettings(server="granian"))
    if stub_agent:  # every run answers the Result of one real run
        from orchestrator import Request

        model = models.by_name["direct"]
        result = await model.node.run(Request(prompt="ping"))

        async def run(*args: Any, **kwargs: Any) -> Any:
            return result

        model.node.run = run
    return GatewayRSGI(gateway, watch_after=3600), models


async def _serve(app: Any, n: int) -> float:
    scope, handle = _Scope(), app.__rsgi__
    started = time.perf_counter()
    for _ in range(n):
        protocol = _Protocol()
        await handle(scope, protocol)
        if protocol.status != 200:
            raise SystemExit(f"the gateway answered {protocol.status}")
    return time.perf_counter() - started


async def _main(args: argparse.Namespace) -> None:
    app, models = await _app(args.stub_agent)
    await _serve(app, 200)  # warm: imports, first-use caches
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        await _serve(app, args.requests)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    else:
        seconds = await _serve(app, args.requests)
        if not args.quiet:
            print(f"{seconds / args.requests * 1e6:.1f} us a request ({args.requests} requests)")
    await models.__aexit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--profile", action="store_true", help="cProfile's top functions")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--stub-agent", action="store_true", help="no agent: the gateway alone")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    try:
        import uvloop
    except ImportError:
        asyncio.run(_main(args))
    else:
        uvloop.run(_main(args))


if __name__ == "__main__":
    main()

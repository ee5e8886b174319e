"""The granian adapter watches a request's client only once the request is old enough.

A watch per request (a task around granian's ``client_disconnect``, cancelled at the end)
made granian take the GIL from another thread for each request, which stalled the worker
(see ``GatewayRSGI``); most requests end before a client that left could be missed. Fake RSGI scope and protocol, ``watch_after=0`` (a sweep each loop turn):
no timers, no granian.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from providers.serve.exchange import Reply
from providers.serve.rsgi import GatewayRSGI


class _Scope:
    proto, method, path, scheme, server = "http", "POST", "/v1/x", "http", ""
    headers: ClassVar[dict[str, str]] = {}


class _Protocol:
    def __init__(self) -> None:
        self.watches = 0
        self.left: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.answered: list[int] = []

    def client_disconnect(self) -> asyncio.Future[None]:
        self.watches += 1
        return self.left

    def response_bytes(self, status: int, headers: Any, body: bytes) -> None:
        self.answered.append(status)

    def response_empty(self, status: int, headers: Any) -> None:
        self.answered.append(status)


class _Gateway:
    def __init__(self, slow: bool = False) -> None:
        self.release = asyncio.Event()
        self.slow = slow
        self.cancelled = 0

    async def handle(self, ex: Any) -> Reply:
        if self.slow:
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return Reply(200, b"{}")


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def _app(gateway: _Gateway) -> GatewayRSGI:
    return GatewayRSGI(gateway, watch_after=0)  # type: ignore[arg-type]


async def _assert_idle(app: GatewayRSGI) -> None:
    """Nothing left behind: no sweeper, no request in any generation, no watch."""
    await _turns()
    assert app._sweeper is None and not (app._young or app._older or app._watched)


async def test_requests_that_end_quickly_start_no_watch() -> None:
    app = _app(_Gateway())
    protocols = [_Protocol() for _ in range(100)]
    await asyncio.gather(*(app.__rsgi__(_Scope(), p) for p in protocols))
    assert [p.answered for p in protocols] == [[200]] * 100
    assert sum(p.watches for p in protocols) == 0
    await _assert_idle(app)


async def test_a_client_that_leaves_a_long_request_cancels_it() -> None:
    gateway = _Gateway(slow=True)
    app = _app(gateway)
    protocol = _Protocol()
    request = asyncio.ensure_future(app.__rsgi__(_Scope(), protocol))
    await _turns()
    assert protocol.watches == 1  # watched once old enough, once only
    protocol.left.set_result(None)
    await request  # cancelled inside, answered by nobody: returns quietly
    assert gateway.cancelled == 1 and protocol.answered == []
    await _assert_idle(app)


async def test_a_watched_request_that_ends_normally_stops_its_watch() -> None:
    gateway = _Gateway(slow=True)
    app = _app(gateway)
    protocols = [_Protocol() for _ in range(20)]
    requests = [asyncio.ensure_future(app.__rsgi__(_Scope(), p)) for p in protocols]
    await _turns()
    assert [p.watches for p in protocols] == [1] * 20
    gateway.release.set()
    await asyncio.gather(*requests)
    assert [p.answered for p in protocols] == [[200]] * 20 and gateway.cancelled == 0
    assert all(p.left.cancelled() for p in protocols)  # the watches ended with them
    await _assert_idle(app)


async def test_a_protocol_that_cannot_be_watched_leaves_its_request_answered() -> None:
    # granian raises when asked to watch a protocol it has closed: that request, and the
    # ones watched after it in the same sweep, go on; nothing is left in the registries.
    class _Closed(_Protocol):
        def client_disconnect(self) -> asyncio.Future[None]:
            self.watches += 1
            raise RuntimeError("RSGIProtocolClosed")

    gateway = _Gateway(slow=True)
    app = _app(gateway)
    protocols = [_Protocol(), _Closed(), _Protocol()]
    requests = [asyncio.ensure_future(app.__rsgi__(_Scope(), p)) for p in protocols]
    await _turns()
    assert [p.watches for p in protocols] == [1, 1, 1]
    gateway.release.set()
    await asyncio.gather(*requests)
    assert [p.answered for p in protocols] == [[200]] * 3
    await _assert_idle(app)

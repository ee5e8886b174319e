"""Issue 22: what a good request costs the gateway: nothing built for a failure it does not
have (a 413 error object, a copy of the call for an affinity key it does not carry), and its
body read with one timer, no read past its declared length."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from providers.serve import GatewaySettings, intake
from providers.serve.failures import BadRequest
from tests.providers.serve.conftest import Recorder, gateway

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def test_a_good_request_builds_no_error_and_no_copy_of_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []

    class Counted(BadRequest):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built.append("error")
            super().__init__(*args, **kwargs)

    copy = dataclasses.replace

    def replace(obj: Any, **changes: Any) -> Any:
        built.append(f"copy {sorted(changes)}")
        return copy(obj, **changes)

    monkeypatch.setattr(intake, "BadRequest", Counted)
    monkeypatch.setattr("providers.serve.gateway.replace", replace)
    async with (
        gateway({"m": FallbackAgent([Recorder("ok")])}) as url,
        aiohttp.ClientSession() as http,
    ):
        for _ in range(3):
            async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                assert r.status == 200
        assert built == []  # was an error and a copy for each request
        keyed = {"x-failover-affinity": "user-1"}
        async with http.post(url + "/v1/chat/completions", json=REQUEST, headers=keyed) as r:
            assert r.status == 200
    assert built == ["copy ['affinity']"]  # a call that carries a key still gets it


async def test_a_body_past_the_cap_is_still_a_413() -> None:
    body = {**REQUEST, "pad": "x" * 100}
    async with (
        gateway({"m": FallbackAgent([Recorder("ok")])}, max_body_bytes=64) as url,
        aiohttp.ClientSession() as http,
        http.post(url + "/v1/chat/completions", json=body) as r,
    ):
        assert r.status == 413
        assert "the body passed 64 bytes" in (await r.json())["error"]["message"]


class Arriving:
    """An exchange whose body comes in ``chunks`` (the last one empty, as granian's), counting
    the reads."""

    def __init__(self, chunks: list[bytes], length: int | None) -> None:
        self.chunks, self.reads = chunks, 0
        self.headers = {} if length is None else {"content-length": str(length)}

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    def body(self) -> AsyncIterable[bytes]:
        return self

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        self.reads += 1
        if not self.chunks:
            raise StopAsyncIteration
        return self.chunks.pop(0)


async def test_a_body_is_read_with_one_timer_and_no_read_past_its_declared_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    timers: list[float] = []
    timeout_at = asyncio.timeout_at

    def counted(when: float | None) -> asyncio.Timeout:
        timers.append(0.0 if when is None else when)
        return timeout_at(when)

    monkeypatch.setattr(asyncio, "timeout_at", counted)
    settings = GatewaySettings()
    declared = Arriving([b'{"model":', b'"m"}', b""], length=13)
    assert await intake.read_body(declared, settings) == b'{"model":"m"}'  # type: ignore[arg-type]
    assert (declared.reads, len(timers)) == (2, 1)  # were 4 reads, each under its own timer
    chunked = Arriving([b'{"model":', b'"m"}', b""], length=None)  # no length: to the end
    assert await intake.read_body(chunked, settings) == b'{"model":"m"}'  # type: ignore[arg-type]
    assert (chunked.reads, len(timers)) == (4, 2)

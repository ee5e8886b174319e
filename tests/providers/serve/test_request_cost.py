"""Issue 22: what a good request costs the gateway: nothing built for a failure it does not
have (a 413 error object, a copy of the call for an affinity key it does not carry)."""

from __future__ import annotations

import dataclasses
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from providers.serve import intake
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

"""Issue 22: what a good request costs the gateway: nothing built for a failure it does not
have (a 413 error object, a copy of the call for an affinity key it does not carry), and its
body read with one timer, no read past its declared length."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator
from inspect import CO_COROUTINE
from types import FrameType
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from orchestrator.types import Attempt, Request, Response, Result, ToolCall, Usage
from providers import serve
from providers.http import safe_json
from providers.serve import GatewaySettings, fields, intake
from providers.serve import call as call_module
from providers.serve.anthropic_wire import AnthropicWire
from providers.serve.auth import ENV, GatewayKeys
from providers.serve.call import ClientCall
from providers.serve.failures import BadRequest
from providers.serve.gateway import Gateway
from providers.serve.models import Model, Models
from providers.serve.openai_wire import OpenAIWire
from providers.serve.responses_wire import ResponsesWire
from providers.serve.streaming import run_whole
from tests.providers.serve.conftest import Recorder, current_server, gateway

_STDLIB = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
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


class _Timers:
    """Inside ``with``: the running loop's clock frozen at ``now``, and the timers armed on
    it (their due times and handles), whatever arms them: each ``call_at`` is one timer."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now
        self.due: list[float] = []
        self.handles: list[asyncio.TimerHandle] = []
        self.callbacks: list[Any] = []

    def __enter__(self) -> _Timers:
        loop: Any = asyncio.get_running_loop()
        call_at = loop.call_at

        def counted(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
            self.due.append(when)
            self.callbacks.append(lambda: callback(*args))
            self.handles.append(call_at(when, callback, *args, **kwargs))
            return self.handles[-1]

        # On the loop itself, and taken off before the test ends: the loop's own teardown
        # must see its real clock.
        loop.time, loop.call_at = (lambda: self.now), counted
        return self

    def __exit__(self, *exc: object) -> None:
        loop: Any = asyncio.get_running_loop()
        del loop.time, loop.call_at

    def fire_last(self) -> None:
        """The last timer armed is due now (its deadline passed): run it, as the loop would."""
        handle = self.handles[-1]
        assert not handle.cancelled()
        handle.cancel()
        self.callbacks[-1]()


async def test_a_body_is_read_with_one_timer_and_no_read_past_its_declared_length() -> None:
    # Pins the deadlines and the timers, not how they are armed (was a count of
    # asyncio.timeout_at; intake now arms the loop's timer itself, see the next test).
    settings = GatewaySettings(body_timeout=30.0, body_grace=5.0)
    rate = settings.body_min_rate
    declared = Arriving([b'{"model":', b'"m"}', b""], length=13)
    with _Timers(now=1000.0) as timers:
        body = await intake.read_body(declared, settings)  # type: ignore[arg-type]
    assert body == b'{"model":"m"}'
    # One timer: the grace, moved on by the first 9 bytes at body_min_rate bytes/s (each
    # move ends the timer it replaces), none after the declared length.
    assert (declared.reads, timers.due) == (2, [1005.0, 1005 + 9 / rate])  # were 4 reads
    assert all(handle.cancelled() for handle in timers.handles)  # none outlives the body
    timers.due.clear()
    chunked = Arriving([b'{"model":', b'"m"}', b""], length=None)  # no length: to the end
    with timers:
        body = await intake.read_body(chunked, settings)  # type: ignore[arg-type]
    assert body == b'{"model":"m"}'
    assert (chunked.reads, timers.due) == (4, [1005.0, *(1005 + k / rate for k in (9, 13, 13))])
    assert all(handle.cancelled() for handle in timers.handles)


async def test_a_body_read_runs_no_coroutine_but_its_own() -> None:
    counted = _AllCoroutines()
    sys.setprofile(counted)
    try:
        body = await intake.read_body(Arriving([b"{}"], length=2), GatewaySettings())  # type: ignore[arg-type]
    finally:
        sys.setprofile(None)
    assert body == b"{}"
    # Were also asyncio.Timeout.__aenter__ and __aexit__: ~18k instructions a request.
    assert counted.names() == ["Arriving.__anext__", "_paced", "read_body"]


class _Stalled(Arriving):
    """A body whose second read never ends."""

    async def __anext__(self) -> bytes:
        if self.reads:
            await asyncio.Event().wait()
        return await super().__anext__()


async def test_a_stalled_body_is_a_408_at_its_deadline() -> None:
    settings = GatewaySettings(body_timeout=30.0, body_grace=5.0)
    with _Timers(now=1000.0) as timers:
        reading = asyncio.ensure_future(
            intake.read_body(_Stalled([b"{", b"}"], length=2), settings)  # type: ignore[arg-type]
        )
        for _ in range(3):
            await asyncio.sleep(0)
        assert timers.due == [1005.0, 1005 + 1 / settings.body_min_rate]  # after the first byte
        timers.fire_last()
        with pytest.raises(BadRequest) as refused:
            await reading
    assert refused.value.status == 408 and "did not arrive within 30s" in str(refused.value)


async def test_a_body_read_cancelled_from_outside_stays_cancelled() -> None:
    # The client left while its body was read: the task's cancellation is not a 408, and
    # the body's timer takes no cancellation that was not its own.
    settings = GatewaySettings(body_timeout=30.0)
    reading = asyncio.ensure_future(
        intake.read_body(_Stalled([b"{", b"}"], length=2), settings)  # type: ignore[arg-type]
    )
    await asyncio.sleep(0)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    assert reading.cancelled()


class _AllCoroutines:
    """Every coroutine that ran while enabled (any module), by qualified name, sorted."""

    def __init__(self) -> None:
        self.frames: dict[int, FrameType] = {}

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_flags & CO_COROUTINE:
            self.frames.setdefault(id(frame), frame)

    def names(self) -> list[str]:
        return sorted(frame.f_code.co_qualname for frame in self.frames.values())


class _Coroutines:
    """The gateway's own coroutines (``providers/serve``) that ran while enabled, by name:
    each coroutine once, however often it was resumed."""

    def __init__(self) -> None:
        self.frames: dict[int, FrameType] = {}  # kept: a freed frame's id may come again

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and code.co_flags & CO_COROUTINE and code.co_filename.startswith(_SERVE):
            self.frames.setdefault(id(frame), frame)

    def names(self) -> list[str]:
        """Their qualified names, sorted."""
        return sorted(frame.f_code.co_qualname for frame in self.frames.values())


_SERVE = os.path.dirname(serve.__file__) + os.sep


async def test_a_good_request_runs_no_coroutine_that_only_forwards() -> None:
    counted = _Coroutines()
    async with (
        gateway({"m": FallbackAgent([Recorder("ok")])}) as url,
        aiohttp.ClientSession() as http,
    ):
        async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
            assert r.status == 200  # warm: the server's own start-up coroutines are done
        sys.setprofile(counted)
        try:
            async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                assert (r.status, (await r.json())["choices"][0]["message"]["content"]) == (
                    200,
                    "ok",
                )
        finally:
            sys.setprofile(None)
    names = counted.names()
    # Were also Gateway.handle (awaiting the route's handler), Model.run (awaiting the
    # agent's run) and Gateway._read_body (awaiting read_body): coroutines that only passed
    # the awaited value on.
    assert "Gateway.handle" not in names and "Model.run" not in names, names
    adapter = "__rsgi__" if current_server() == "granian" else "_handle"
    ran = sorted(n.rpartition(".")[2] for n in names if "_sweep" not in n)
    assert ran == sorted([adapter, "handle", "read_body", "_paced", "run_whole"])


class _Agent:
    def __init__(self) -> None:
        self.ran: Any = None

    def run(self, request: Request, affinity: str | None = None) -> Any:
        self.ran = asyncio.sleep(0, Result("ok", "m", (), 0.0))
        return self.ran


async def test_a_served_agent_runs_as_its_own_coroutine() -> None:
    agent = _Agent()
    model = Model("m", agent, "agent")
    running = model.run(Request("hi"))
    assert running is agent.ran  # was a coroutine of Model.run awaiting it
    assert (await running).text == "ok"


async def test_a_reply_names_the_answering_model_without_a_copy_of_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []
    init = ClientCall.__init__

    def counted(call: ClientCall, model: str, *args: Any, **kwargs: Any) -> None:
        built.append(model)
        init(call, model, *args, **kwargs)

    monkeypatch.setattr(ClientCall, "__init__", counted)
    answering = Recorder(Response("ok", model="gpt-real"))
    async with (
        gateway({"m": FallbackAgent([answering])}) as url,
        aiohttp.ClientSession() as http,
    ):
        for path, named in [("/v1/chat/completions", "model"), ("/v1/responses", "model")]:
            body = {"model": "m", "input": "hi"} if path == "/v1/responses" else REQUEST
            async with http.post(url + path, json=body) as r:
                assert (r.status, (await r.json())[named]) == (200, "gpt-real")
                assert r.headers["x-failover-model-alias"] == "m"
        message = {"model": "m", "max_tokens": 5, "messages": REQUEST["messages"]}
        async with http.post(url + "/v1/messages", json=message) as r:
            assert (r.status, (await r.json())["model"]) == (200, "gpt-real")
    assert built == ["m", "m", "m"]  # was a copy naming "gpt-real" per reply (replace)


def test_a_call_answered_by_another_model_keeps_all_else() -> None:
    call = ClientCall("alias", Request("hi"), stream=True, include_usage=True, affinity="k")
    answered = call.answered_by("gpt-real")
    assert answered.model == "gpt-real"
    others = [f.name for f in dataclasses.fields(ClientCall) if f.name != "model"]
    assert [getattr(answered, n) for n in others] == [getattr(call, n) for n in others]
    assert call.answered_by(None) is call and call.answered_by("alias") is call


async def test_a_request_does_not_ask_whether_the_gateway_has_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[bool] = []
    has_keys = GatewayKeys.__bool__

    def counted(keys: GatewayKeys) -> bool:
        asked.append(has_keys(keys))
        return asked[-1]

    monkeypatch.setattr(GatewayKeys, "__bool__", counted)
    async with (
        gateway({"m": FallbackAgent([Recorder("ok")])}) as url,
        aiohttp.ClientSession() as http,
    ):
        started = len(asked)
        for _ in range(3):
            async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                assert r.status == 200
        assert len(asked) == started  # was twice per request: the keys never change


class _Probe:
    """A keyless GET of the model list, as the gateway reads an exchange."""

    method, path, scheme, sink = "GET", "/v1/models", "http", None

    def header(self, name: str) -> str | None:
        return None


@pytest.mark.parametrize("before, after", [("", "sk-gw-1"), ("sk-gw-1", "")])
async def test_keys_set_anew_are_the_keys_asked(before: str, after: str) -> None:
    # Whether the gateway has keys is decided when they are set, not per request: setting
    # them anew must not leave the old answer (keys added after start would let anyone in).
    gw = Gateway(Models({}, {}), GatewayKeys.load({ENV: before}), GatewaySettings())
    gw.keys = GatewayKeys.load({ENV: after})
    reply = await gw.handle(_Probe())  # type: ignore[arg-type]
    assert reply is not None and reply.status == (401 if after else 200)


class _Answers:
    """An agent answering every run with ``result``."""

    def __init__(self, result: Result) -> None:
        self.result = result

    async def run(self, request: Request, affinity: str | None = None) -> Result:
        return self.result


class _Kept:
    """A wire whose replies (the dicts) are kept."""

    def __init__(self, wire: Any) -> None:
        self.wire, self.replies = wire, list[dict[str, Any]]()

    def reply(self, call: ClientCall, result: Result) -> dict[str, Any]:
        made: dict[str, Any] = self.wire.reply(call, result)
        self.replies.append(made)
        return made


def _answer(text: Any = "ok", model: Any = "gpt-real", usage: Any = None, **more: Any) -> Result:
    attempt = Attempt("p", None, 1, 0.0, 0.1, usage=usage or Usage(3, 2))
    return Result(text, "p", (attempt,), 0.1, model=model, **more)


async def _whole(wire: Any, result: Result) -> tuple[bytes, dict[str, Any]]:
    """The reply's body and the dict ``wire`` made of ``result``."""
    kept: Any = _Kept(wire)
    reply = await run_whole(
        kept, ClientCall("m", Request("hi")), Model("m", _Answers(result), "agent")
    )
    assert reply.status == 200
    return reply.body, kept.replies[0]


@pytest.fixture
def proofs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The values whose JSON was proven by parsing orjson's bytes back."""
    asked: list[Any] = []
    real = safe_json.dumps_if_exact

    def counted(value: Any) -> bytes | None:
        asked.append(value)
        return real(value)

    monkeypatch.setattr(call_module, "dumps_if_exact", counted)
    return asked


_WIRES = [OpenAIWire(), AnthropicWire(), ResponsesWire()]


@pytest.mark.parametrize("wire", _WIRES)
async def test_a_reply_of_plain_values_is_not_parsed_back(wire: Any, proofs: list[Any]) -> None:
    body, made = await _whole(wire, _answer())
    assert json.loads(body) == json.loads(_STDLIB.encode(made))
    assert proofs == []  # main: each reply's bytes parsed back to prove them


class _Name(str):
    """A provider's model name of its own type."""


@pytest.mark.parametrize("wire", _WIRES)
@pytest.mark.parametrize(
    "result",
    [
        _answer(tool_calls=(ToolCall("c1", "f", {"x": 1.5}),)),  # arguments may hold anything
        _answer(usage=Usage(3.0, 2)),  # type: ignore[arg-type]  # a provider's float
        _answer(model=_Name("gpt-real")),
        _answer(text=_Name("ok")),
    ],
)
async def test_a_reply_of_other_values_is_still_proven(
    wire: Any, result: Result, proofs: list[Any]
) -> None:
    body, made = await _whole(wire, result)
    assert json.loads(body) == json.loads(_STDLIB.encode(made))
    assert proofs[-1] is made  # the reply (a tool call's arguments come first)


async def test_a_reply_the_stdlib_refuses_is_still_refused(proofs: list[Any]) -> None:
    with pytest.raises(ValueError):  # NaN: the stdlib refuses it, orjson would write null
        await _whole(OpenAIWire(), _answer(usage=Usage(math.nan, 2)))  # type: ignore[arg-type]


def test_a_body_with_no_option_checks_none(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    for name in ("optional", "positive_int", "temperature", "stop_sequences", "affinity"):
        real = getattr(fields, name)

        def counted(*args: Any, real: Any = real, name: str = name) -> Any:
            asked.append(name)
            return real(*args)

        monkeypatch.setattr(fields, name, counted)
    wire = OpenAIWire()
    plain = {**REQUEST, "top_p": 0.5}  # a field the gateway does not read
    assert wire.parse(plain) == ClientCall("m", Request("hi"))
    assert asked == []  # main: 8 checks of options the body does not have
    streamed = wire.parse({**plain, "stream": True, "user": "u-1"})
    assert (streamed.stream, streamed.affinity) == (True, "u-1") and asked

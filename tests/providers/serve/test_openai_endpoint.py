"""``POST /v1/chat/completions`` over loopback HTTP: JSON, SSE, tools, fallback, errors."""

from __future__ import annotations

import json

import aiohttp

from orchestrator import FallbackAgent, Response, ToolCall, Usage
from orchestrator.errors import GuardrailTriggered, InvalidRequest, RateLimited
from providers import Fault, SimulatedServer
from tests.providers.serve import conftest
from tests.providers.serve.conftest import UPSTREAM_KEY, Recorder, fallback, gateway

CHAT = "/v1/chat/completions"


def body(model: str = "review", **extra: object) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "hello"}], **extra}


async def test_a_529_from_anthropic_is_answered_by_openai_in_openai_format(
    sim: SimulatedServer,
) -> None:
    sim.script("anthropic", [Fault.status(529)])
    status, headers, reply = await conftest.answered({"review": fallback(sim)}, CHAT, body())
    assert status == 200, reply
    assert headers["x-failover-handled-by"] == "openai:gpt-sim"
    assert headers["x-failover-attempts"] == "2"
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "gpt-sim"  # the model that answered (issue 17 item 22)
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"]
    assert reply["usage"]["total_tokens"] >= 0
    assert sim.count("anthropic") == 1 and sim.count("openai") == 1


async def test_streams_text_deltas_then_usage_and_done(sim: SimulatedServer) -> None:
    sim.script("anthropic", [Fault.status(529)])
    request = body(stream=True, stream_options={"include_usage": True})
    async with (
        gateway({"review": fallback(sim)}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + CHAT, json=request) as r,
    ):
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/event-stream")
        raw = (await r.read()).decode()
    events = [line[6:] for line in raw.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "stop"
    assert chunks[-1]["choices"] == [] and "prompt_tokens" in chunks[-1]["usage"]


async def test_tools_go_in_as_request_tools_and_come_back_as_tool_calls() -> None:
    call = ToolCall("call_1", "get_weather", {"city": "Paris"})
    fn = Recorder(Response("", tool_calls=(call,), usage=Usage(7, 3)))
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    history = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    ]
    request = {"model": "m", "messages": history, "tools": tools, "tool_choice": "required"}
    reply, raw = await conftest.whole_and_streamed({"m": FallbackAgent([fn])}, CHAT, request)
    sent = fn.requests[0]
    assert sent.system == "be brief"
    assert [m.role for m in sent.messages] == ["user", "assistant", "tool"]
    assert sent.messages[1].tool_calls[0].arguments == {"city": "Rome"}
    assert sent.messages[2].tool_call_id == "call_0"
    assert sent.tools[0].name == "get_weather" and sent.tool_choice == "required"
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (out,) = choice["message"]["tool_calls"]
    assert out["id"] == "call_1" and out["function"]["name"] == "get_weather"
    assert json.loads(out["function"]["arguments"]) == {"city": "Paris"}
    assert reply["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    chunks = [json.loads(x[6:]) for x in raw.split("\n") if x.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_every_provider_failing_is_a_503_with_a_summary_and_no_secret(
    sim: SimulatedServer,
) -> None:
    sim.set_default("anthropic", Fault.status(529))
    sim.set_default("openai", Fault.status(401))
    async with gateway({"review": fallback(sim)}) as url, aiohttp.ClientSession() as http:
        for stream in (False, True):
            async with http.post(url + CHAT, json=body(stream=stream)) as r:
                text = await r.text()
                assert r.status == 503, text
                assert r.headers["Retry-After"] == "1"
                assert r.headers["x-failover-attempts"] == "2"
            error = json.loads(text)["error"]
            assert error["type"] == "server_error"
            assert "Overloaded" in error["message"]
            assert "AuthenticationFailed" in error["message"]
            assert UPSTREAM_KEY not in text and "sk-" not in text


async def test_all_rate_limited_is_a_429_with_the_shortest_retry_after() -> None:
    agent = FallbackAgent(
        [
            Recorder(RateLimited("slow down", provider="a", retry_after=7.2), "a"),
            Recorder(RateLimited("slow down", provider="b", retry_after=30), "b"),
        ],
        retry_strategy="none",
        max_retries=0,
    )
    async with (
        gateway({"m": agent}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + CHAT, json=body("m")) as r,
    ):
        reply = await r.json()
        assert r.status == 429
        assert r.headers["Retry-After"] == "8"
    assert reply["error"]["code"] == "rate_limit_exceeded"


async def test_terminal_errors_keep_their_meaning() -> None:
    guard = FallbackAgent([Recorder(GuardrailTriggered("policy", provider="p"), "p")])
    bad = FallbackAgent(
        [Recorder(InvalidRequest("bad field 'x' = secret", provider="q", status=400), "q")]
    )
    async with gateway({"guard": guard, "bad": bad}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=body("guard")) as r:
            assert r.status == 400
            assert (await r.json())["error"]["code"] == "content_filter"
        async with http.post(url + CHAT, json=body("bad")) as r:
            text = await r.text()
            assert r.status == 400
    error = json.loads(text)["error"]
    assert error["type"] == "invalid_request_error"
    assert "secret" not in text  # the upstream's own words are not repeated


async def test_unknown_model_malformed_json_and_oversized_bodies() -> None:
    agents = {"alpha": FallbackAgent([Recorder()]), "beta": FallbackAgent([Recorder()])}
    async with gateway(agents, max_body_bytes=1000) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=body("gamma")) as r:
            assert r.status == 404
            message = (await r.json())["error"]["message"]
            assert "'gamma'" in message and "alpha, beta" in message
        async with http.post(url + CHAT, data=b'{"model": ') as r:
            assert r.status == 400
            assert "not valid JSON" in (await r.json())["error"]["message"]
        async with http.post(url + CHAT, data=b"[" * 400 + b"]" * 400) as r:
            assert r.status == 400
        async with http.post(url + CHAT, json=body("alpha", pad="x" * 2000)) as r:
            assert r.status == 413
            assert (await r.json())["error"]["message"].startswith("the body passed 1000")

        async def chunked() -> object:
            for _ in range(20):
                yield b"x" * 100

        async with http.post(url + CHAT, data=chunked()) as r:
            assert r.status == 413
        async with http.post(url + CHAT, json={"model": "alpha", "messages": "hi"}) as r:
            assert r.status == 400
            assert "messages: expected list" in (await r.json())["error"]["message"]
        async with http.post(
            url + CHAT,
            json={
                "model": "alpha",
                "messages": [{"role": "user", "content": [{"type": "image_url"}]}],
            },
        ) as r:
            assert r.status == 400


async def test_models_lists_agents_and_workflows_for_both_sdks() -> None:
    agents = {"review": FallbackAgent([Recorder()]), "cheap": FallbackAgent([Recorder()])}
    async with gateway(agents) as url, aiohttp.ClientSession() as http:
        async with http.get(url + "/v1/models") as r:
            listing = await r.json()
        async with http.get(url + "/v1/models/review") as r:
            assert r.status == 200
        async with http.get(url + "/v1/models/nope") as r:
            assert r.status == 404
    assert [m["id"] for m in listing["data"]] == ["cheap", "review"]
    assert listing["data"][0]["object"] == "model" and listing["data"][0]["type"] == "model"


async def test_a_gzip_bomb_is_capped_after_inflating() -> None:
    import gzip

    bomb = gzip.compress(b'{"model": "alpha", "pad": "' + b"x" * (20 << 20) + b'"}')
    assert len(bomb) < 100_000
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    agents = {"alpha": FallbackAgent([Recorder()])}
    async with (
        gateway(agents, max_body_bytes=1 << 20) as url,
        aiohttp.ClientSession() as http,
        http.post(url + CHAT, data=bomb, headers=headers) as r,
    ):
        assert r.status == 413


async def test_a_failure_after_text_ends_the_stream_with_an_error_event() -> None:
    from orchestrator import Request
    from orchestrator.errors import ServerError

    class Cut:
        name = "cut"

        async def complete(self, request: Request) -> Response:
            raise AssertionError("streams only")

        async def stream(self, request: Request):  # type: ignore[no-untyped-def]
            yield "partial "
            raise ServerError("upstream broke", provider="cut", status=502)

    agent = FallbackAgent([Cut()], max_retries=0, mid_stream="raise")
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=body("m", stream=True)) as r:
            assert r.status == 200
            raw = (await r.read()).decode()
        anthropic = {**body("m", stream=True), "max_tokens": 10}
        async with http.post(url + "/v1/messages", json=anthropic) as r:
            events = (await r.read()).decode()
    data = [line[6:] for line in raw.split("\n") if line.startswith("data: ")]
    assert json.loads(data[1])["choices"][0]["delta"]["content"] == "partial "
    assert "error" in json.loads(data[-1]) and "[DONE]" not in data
    assert events.rstrip().split("\n\n")[-1].startswith("event: error\n")


async def test_tool_call_deltas_in_a_stream_are_sent_once_the_result_is_known() -> None:
    # A node whose stream yields what a tools-aware engine yields: text, then tool-call
    # pieces; the gateway sends the text as it comes and the calls from the result.
    from orchestrator import Request, Result, ToolCallDelta

    call = ToolCall("call_3", "lookup", {"q": "z"})

    class Chunks:
        result = Result("looking ", "streams", (), 0.0, tool_calls=(call,))

        async def __aenter__(self) -> Chunks:
            return self

        async def __aexit__(self, *exc_info: object) -> None:
            return None

        async def __aiter__(self):  # type: ignore[no-untyped-def]
            yield "looking "
            yield ToolCallDelta(0, "call_3", "lookup", '{"q": ')
            yield ToolCallDelta(0, None, None, '"z"}')

    class Node(conftest.Node):
        name = "streams"

        def stream(self, request: Request) -> Chunks:
            return Chunks()

    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    request = body("m", stream=True, tools=tools)
    async with gateway({"m": Node()}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=request) as r:
            raw = (await r.read()).decode()
        anthropic = {
            **request,
            "max_tokens": 10,
            "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
        }
        async with http.post(url + "/v1/messages", json=anthropic) as r:
            events = (await r.read()).decode()
    chunks = [json.loads(x[6:]) for x in raw.split("\n") if x.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "looking "
    calls = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert [(c["id"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("call_3", {"q": "z"})
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert '"partial_json":"{\\"q\\":\\"z\\"}"' in events and '"stop_reason":"tool_use"' in events


async def test_a_streamed_reply_names_the_provider_answering_in_its_headers(
    sim: SimulatedServer,
) -> None:
    """The status line goes out with the first text, so the headers name the provider whose
    text it is (the run has not ended: the attempt count is only on whole replies)."""
    sim.set_default("anthropic", Fault.status(529))
    async with (
        gateway({"review": fallback(sim)}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + CHAT, json=body(stream=True)) as r,
    ):
        await r.read()
        assert r.status == 200
        assert r.headers["x-failover-handled-by"] == "openai:gpt-sim"

"""Provider features over loopback HTTP: wire payloads, structured output,
continue-from-prefix, secrets, the insecure-http guard and HTTPFallback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator import errors as E
from orchestrator.types import Message, Request, Response
from providers.anthropic import AnthropicMessages
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.http.errors import Redacted
from providers.openai import OpenAIChat
from providers.simulator import Fault, SimulatedServer

KEYS = {
    "openai": "sk-secret-openai-123456",
    "anthropic": "sk-ant-secret-123456",
    "gemini": "AIza-secret-123456",
}
SCHEMA: dict[str, Any] = {
    "title": "Answer",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "city": {"title": "City", "type": "string"},
        "score": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
    },
    "required": ["city"],
    "$defs": {
        "Tag": {"title": "Tag", "type": "object", "properties": {"name": {"type": "string"}}}
    },
}


def make(route: str, sim: SimulatedServer, **kw: Any) -> Any:
    kw.setdefault("api_key", KEYS[route])
    cls: Any = {"openai": OpenAIChat, "anthropic": AnthropicMessages, "gemini": GeminiGenerate}[
        route
    ]
    url = {"openai": sim.openai_url, "anthropic": sim.anthropic_url, "gemini": sim.gemini_url}[
        route
    ]
    return cls(f"{route}-model", base_url=url, **kw)


async def drain(provider: Any, request: Request) -> tuple[list[str], Response]:
    chunks: list[str] = []
    async for item in provider.stream(request):
        if isinstance(item, Response):
            return chunks, item
        if item:  # not PROGRESS (an event without content)
            chunks.append(item)
    raise AssertionError("no final Response")


# -- request payloads -------------------------------------------------------------------


async def test_openai_payload_and_headers(sim: SimulatedServer) -> None:
    request = Request(
        "hi", system="be brief", max_tokens=50, temperature=0.2, stop=["\n\n"], metadata={"x": 1}
    )
    await make("openai", sim).complete(request)
    sent = sim.requests("openai")[0]
    assert sent["path"] == "/openai/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {KEYS['openai']}"
    body = sent["body"]
    assert body["model"] == "openai-model"
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    assert (body["max_tokens"], body["temperature"], body["stop"]) == (50, 0.2, ["\n\n"])
    assert "x" not in json.dumps(body["messages"]) and "metadata" not in body


async def test_openai_stream_asks_for_usage_and_max_completion_tokens(sim: SimulatedServer) -> None:
    provider = make("openai", sim, max_tokens_param="max_completion_tokens")
    await drain(provider, Request("hi", max_tokens=9))
    body = sim.requests("openai")[0]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body


async def test_anthropic_payload_and_headers(sim: SimulatedServer) -> None:
    provider = make("anthropic", sim, max_tokens=77)
    await provider.complete(Request("hi", system="be brief", stop=["END"], temperature=0.5))
    sent = sim.requests("anthropic")[0]
    assert sent["path"] == "/anthropic/v1/messages"
    assert sent["headers"]["x-api-key"] == KEYS["anthropic"]
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    body = sent["body"]
    assert body["max_tokens"] == 77 and body["system"] == "be brief"
    assert body["stop_sequences"] == ["END"] and body["temperature"] == 0.5
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_gemini_payload_headers_and_urls(sim: SimulatedServer) -> None:
    provider = make("gemini", sim)
    request = Request("hi", system="be brief", max_tokens=5, stop=["x"], temperature=0.1)
    await provider.complete(request)
    await drain(provider, request)
    plain, streamed = sim.requests("gemini")
    assert plain["path"] == "/gemini/v1beta/models/gemini-model:generateContent"
    assert streamed["path"] == "/gemini/v1beta/models/gemini-model:streamGenerateContent"
    assert streamed["query"] == {"alt": "sse"}
    assert plain["headers"]["x-goog-api-key"] == KEYS["gemini"]
    assert "key" not in plain["query"]
    body = plain["body"]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
    assert body["generationConfig"] == {
        "maxOutputTokens": 5,
        "temperature": 0.1,
        "stopSequences": ["x"],
    }


# -- structured output --------------------------------------------------------------------

ANSWER = {"city": "Paris", "score": 3, "tags": []}


@pytest.mark.parametrize("route", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_structured_output(sim: SimulatedServer, route: str, mode: str) -> None:
    sim.script(route, [Fault.ok(json.dumps(ANSWER))])
    request = Request("capital?", json_schema=SCHEMA, schema_name="Answer v1")
    provider = make(route, sim)
    if mode == "complete":
        response = await provider.complete(request)
    else:
        chunks, response = await drain(provider, request)
        assert "".join(chunks) == response.text
    assert json.loads(response.text) == ANSWER
    body = sim.requests(route)[0]["body"]
    if route == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "Answer_v1", "schema": SCHEMA, "strict": False},
        }
    elif route == "anthropic":
        assert body["tools"][0]["name"] == "Answer_v1"
        assert body["tools"][0]["input_schema"] == SCHEMA
        assert body["tool_choice"] == {"type": "tool", "name": "Answer_v1"}
    else:
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseSchema"] == {
            "type": "OBJECT",
            "properties": {
                "city": {"type": "STRING"},
                "score": {"type": "INTEGER", "nullable": True},
                "tags": {
                    "type": "ARRAY",
                    "items": {"type": "OBJECT", "properties": {"name": {"type": "STRING"}}},
                },
            },
            "required": ["city"],
        }


async def test_anthropic_structured_output_without_tool_use_is_invalid(
    sim: SimulatedServer,
) -> None:
    # Plain text where a tool_use block was forced: the schema was not honoured.
    message = {
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "not json"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    sim.script("anthropic", [Fault.status(200, body=message)])
    with pytest.raises(E.InvalidOutput):
        await make("anthropic", sim).complete(Request("q", json_schema=SCHEMA))


# -- continue from a prefix ------------------------------------------------------------------


def prefixed(prefix: str) -> Request:
    return Request(messages=[Message("user", "Say hello world"), Message("assistant", prefix)])


@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_anthropic_prefill_trims_and_returns_only_new_text(
    sim: SimulatedServer, mode: str
) -> None:
    sim.script("anthropic", [Fault.ok(" world!")])
    provider = make("anthropic", sim)
    if mode == "complete":
        text = (await provider.complete(prefixed("Hello "))).text
    else:
        chunks, final = await drain(provider, prefixed("Hello "))
        text = "".join(chunks)
        assert final.text == text
    assert text == "world!"  # the caller already has "Hello "
    messages = sim.requests("anthropic")[0]["body"]["messages"]
    assert messages[-1] == {"role": "assistant", "content": "Hello"}


async def test_gemini_and_openai_send_the_prefix_as_the_model_turn(sim: SimulatedServer) -> None:
    sim.script("gemini", [Fault.ok(" world")])
    sim.script("openai", [Fault.ok(" world")])
    assert (await make("gemini", sim).complete(prefixed("Hello"))).text == " world"
    assert (await make("openai", sim).complete(prefixed("Hello"))).text == " world"
    contents = sim.requests("gemini")[0]["body"]["contents"]
    assert contents[-1] == {"role": "model", "parts": [{"text": "Hello"}]}
    messages = sim.requests("openai")[0]["body"]["messages"]
    assert messages[-1] == {"role": "assistant", "content": "Hello"}


# -- secrets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["openai", "anthropic", "gemini"])
async def test_key_never_in_repr_or_errors(sim: SimulatedServer, route: str) -> None:
    provider = make(route, sim)
    assert KEYS[route] not in repr(provider) and KEYS[route] not in str(vars(provider))
    sim.script(route, [Fault.auth(401), Fault.status(500), Fault.hang()])
    for _ in range(2):
        with pytest.raises(E.ProviderError) as info:
            await provider.complete(Request("secret prompt text"))
        for text in (str(info.value), repr(info.value)):
            assert KEYS[route] not in text and "secret prompt text" not in text


async def test_vendor_echo_of_the_key_is_masked(sim: SimulatedServer) -> None:
    key = "sk-live-echoed-key-abcdef"
    body = {"error": {"message": f"Incorrect API key provided: {key}.", "type": "x", "code": None}}
    sim.script("openai", [Fault.status(401, body=body)])
    with pytest.raises(E.AuthenticationFailed) as info:
        await make("openai", sim, api_key=key).complete(Request("hi"))
    assert key not in str(info.value) and "Incorrect API key provided" in str(info.value)


@pytest.mark.parametrize(
    ("route", "env"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
    ],
)
async def test_missing_key_fails_at_call_time_naming_the_env_var(
    sim: SimulatedServer, route: str, env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    provider = make(route, sim, api_key=None)  # construction succeeds
    with pytest.raises(E.AuthenticationFailed, match=env):
        await provider.complete(Request("hi"))
    assert sim.count(route) == 0
    monkeypatch.setenv(env, "from-env-key")
    await provider.complete(Request("hi"))
    headers = sim.requests(route)[0]["headers"]
    assert "from-env-key" in " ".join(headers.values())


async def test_gemini_falls_back_to_google_api_key(
    sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    await make("gemini", sim, api_key=None).complete(Request("hi"))
    assert sim.requests("gemini")[0]["headers"]["x-goog-api-key"] == "google-key"


@pytest.mark.parametrize("cls", [OpenAIChat, AnthropicMessages, GeminiGenerate])
def test_insecure_http_refused_at_construction(cls: Any) -> None:
    with pytest.raises(ValueError, match=r"https.*allow_insecure_http=True"):
        cls("m", base_url="http://api.example.com", api_key="k")
    assert cls("m", base_url="http://api.example.com", api_key="k", allow_insecure_http=True)
    for url in ("http://127.0.0.1:8000", "http://localhost:1", "http://[::1]:8", "https://x.io"):
        assert cls("m", base_url=url, api_key="k").base_url == url


def test_http_fallback_refuses_headers_over_insecure_http() -> None:
    with pytest.raises(ValueError, match="allow_insecure_http"):
        HTTPFallback("http://hooks.example.com/x", headers={"authorization": "Bearer t"})
    assert HTTPFallback("http://hooks.example.com/x").name == "http:hooks.example.com"


def test_defaults_names_and_validation() -> None:
    assert OpenAIChat("gpt-4o-mini").name == "openai:gpt-4o-mini"
    assert AnthropicMessages("claude-x").name == "anthropic:claude-x"
    assert GeminiGenerate("models/gemini-x").name == "gemini:gemini-x"
    assert OpenAIChat("m", name="eu").name == "eu"
    with pytest.raises(ValueError, match="price"):
        OpenAIChat("m", price=(-1.0, 1.0))
    with pytest.raises(ValueError, match="timeout"):
        OpenAIChat("m", timeout=0)
    with pytest.raises(ValueError, match="model"):
        OpenAIChat("")


# -- HTTPFallback ---------------------------------------------------------------------------------


async def test_http_fallback_payload_carries_handover_and_nothing_else(
    sim: SimulatedServer,
) -> None:
    handover = {
        "reason": "all vendors down",
        "attempts": [
            {
                "agent": "openai:m",
                "error_type": "ServerError",
                "reason": "503",
                "attempt_number": 1,
                "extra": "x",
            }
        ],
    }
    request = Request(
        messages=[Message("user", "q1"), Message("assistant", "a1"), Message("user", "q2")],
        system="sys",
        metadata={"handover": handover, "user_id": "u-42", "api_key": "nope"},
    )
    response = await HTTPFallback(sim.http_url).complete(request)
    assert response.text.startswith("sim-http:")
    body = sim.requests("http")[0]["body"]
    assert body == {
        "prompt": "q2",
        "messages": [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
        ],
        "system": "sys",
        "reason": "all vendors down",
        "attempts": [
            {"agent": "openai:m", "error_type": "ServerError", "reason": "503", "attempt_number": 1}
        ],
    }


async def test_http_fallback_without_handover_sends_nulls(sim: SimulatedServer) -> None:
    await HTTPFallback(sim.http_url).complete(Request("q"))
    body = sim.requests("http")[0]["body"]
    assert body["reason"] is None and body["attempts"] == [] and body["system"] is None


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_http_fallback_headers_callable_called_per_request(
    sim: SimulatedServer, kind: str
) -> None:
    tokens = iter(["t1", "t2"])

    def sync_headers() -> dict[str, str]:
        return {"authorization": f"Bearer {next(tokens)}"}

    async def async_headers() -> dict[str, str]:
        return sync_headers()

    provider = HTTPFallback(sim.http_url, headers=sync_headers if kind == "sync" else async_headers)
    await provider.complete(Request("a"))
    await provider.complete(Request("b"))
    sent = [r["headers"]["authorization"] for r in sim.requests("http")]
    assert sent == ["Bearer t1", "Bearer t2"]
    assert "t1" not in repr(provider)


async def test_http_fallback_headers_callable_failure_is_auth(sim: SimulatedServer) -> None:
    def broken() -> dict[str, str]:
        raise RuntimeError("token service down")

    with pytest.raises(E.AuthenticationFailed) as info:
        await HTTPFallback(sim.http_url, headers=broken).complete(Request("a"))
    # Named, not chained: a token source's error may quote the credential it used.
    assert isinstance(info.value.__cause__, Redacted)
    assert "RuntimeError" in str(info.value.__cause__)
    assert info.value.__context__ is None or isinstance(info.value.__context__, Redacted)
    assert sim.count("http") == 0


async def test_http_fallback_error_names_status_and_url(sim: SimulatedServer) -> None:
    sim.script("http", [Fault.status(503)])
    provider = HTTPFallback(sim.http_url + "?token=abc")
    with pytest.raises(E.ServerError) as info:
        await provider.complete(Request("a"))
    message = str(info.value)
    assert "503" in message and "/http/complete" in message and "token=abc" not in message


async def test_http_fallback_read_text_and_bad_bodies(sim: SimulatedServer) -> None:
    sim.script("http", [Fault.ok("hello"), Fault.ok("hello"), Fault.missing_field()])
    shout = HTTPFallback(sim.http_url, read_text=lambda data: data["text"].upper())
    assert (await shout.complete(Request("a"))).text == "HELLO"
    broken = HTTPFallback(sim.http_url, read_text=lambda data: data["nope"])
    with pytest.raises(E.InvalidOutput, match="read_text raised KeyError"):
        await broken.complete(Request("a"))
    with pytest.raises(E.InvalidOutput, match='"text"'):
        await HTTPFallback(sim.http_url).complete(Request("a"))


# -- errors inside a 200 stream -------------------------------------------------------------------


async def test_anthropic_error_event_mid_stream_is_mapped(sim: SimulatedServer) -> None:
    events = (
        'event: message_start\ndata: {"type":"message_start","message":{"model":"m",'
        '"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"Hel"}}\n\n'
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        '"message":"Overloaded"}}\n\n'
    )
    sim.script("anthropic", [Fault.status(200, body=events)])
    chunks: list[str] = []
    with pytest.raises(E.Overloaded):
        async for item in make("anthropic", sim).stream(Request("hi")):
            if item:  # not PROGRESS (an event without content)
                chunks.append(str(item))
    assert chunks == ["Hel"]


async def test_openai_error_object_mid_stream_is_mapped(sim: SimulatedServer) -> None:
    events = 'data: {"error":{"message":"upstream died","type":"server_error","code":null}}\n\n'
    sim.script("openai", [Fault.status(200, body=events)])
    with pytest.raises(E.ServerError, match="upstream died"):
        async for _ in make("openai", sim).stream(Request("hi")):
            pass

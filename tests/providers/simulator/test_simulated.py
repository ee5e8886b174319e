"""The simulated provider server over real loopback HTTP, with a plain httpx client."""

from __future__ import annotations

import asyncio
import email.utils
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from providers.simulator import Fault, SimulatedServer, main

ROOT = Path(__file__).resolve().parents[3]
PROMPT = "Summarise the incident report in exactly one line, please."


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedServer]:
    async with SimulatedServer() as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as c:
        yield c


def route_request(
    sim: SimulatedServer, route: str, *, stream: bool = False, **extra: Any
) -> tuple[str, dict[str, Any]]:
    """The URL and JSON body a client of ``route`` would send."""
    messages = [{"role": "user", "content": PROMPT}]
    if route == "openai":
        return f"{sim.openai_url}/chat/completions", {
            "model": "gpt-4o-mini",
            "messages": messages,
            "stream": stream,
            **extra,
        }
    if route == "responses":
        return f"{sim.openai_url}/responses", {
            "model": "gpt-4o-mini",
            "input": messages,
            "stream": stream,
            **extra,
        }
    if route == "anthropic":
        return f"{sim.anthropic_url}/v1/messages", {
            "model": "claude-sonnet-4-5",
            "max_tokens": 64,
            "messages": messages,
            "stream": stream,
            **extra,
        }
    if route == "gemini":
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], **extra}
        return f"{sim.gemini_url}/v1beta/models/gemini-2.0-flash:{method}", body
    return sim.http_url, {"prompt": PROMPT, "messages": messages, **extra}


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) for each SSE event in ``text``."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
        events.append((name, "\n".join(data)))
    return events


def reply_text(route: str, body: dict[str, Any]) -> str:
    if route == "openai":
        return str(body["choices"][0]["message"]["content"])
    if route == "responses":
        return str(body["output"][0]["content"][0]["text"])
    if route == "anthropic":
        return str(body["content"][0]["text"])
    if route == "gemini":
        return str(body["candidates"][0]["content"]["parts"][0]["text"])
    return str(body["text"])


def stream_text(route: str, text: str) -> tuple[str, bool]:
    """The streamed text and whether the wire format's terminator was seen."""
    parts, done = [], False
    for name, data in sse_events(text):
        if route == "openai":
            if data == "[DONE]":
                done = True
                continue
            chunk = json.loads(data)
            for choice in chunk["choices"]:
                parts.append(choice["delta"].get("content") or "")
        elif route == "responses":
            event = json.loads(data)
            assert event["type"] == name
            if name == "response.output_text.delta":
                parts.append(event["delta"])
            done = done or name == "response.completed"
        elif route == "anthropic":
            event = json.loads(data)
            assert event["type"] == name
            if name == "content_block_delta":
                parts.append(event["delta"]["text"])
            done = done or name == "message_stop"
        else:
            chunk = json.loads(data)
            candidate = chunk["candidates"][0]
            parts.append(candidate["content"]["parts"][0]["text"])
            done = done or candidate.get("finishReason") == "STOP"
    return "".join(parts), done


ROUTES = ["openai", "responses", "anthropic", "gemini", "http"]
STREAM_ROUTES = ["openai", "responses", "anthropic", "gemini"]


# -- successful replies --------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
async def test_ok_reply_is_derived_from_the_prompt(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    url, body = route_request(sim, route)
    r = await client.post(url, json=body)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert reply_text(route, r.json()) == f"sim-{route}: {PROMPT[:40]}"


async def test_openai_reply_has_the_chat_completion_shape(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.ok("hello", usage=(11, 7))])
    url, body = route_request(sim, "openai")
    reply = (await client.post(url, json=body)).json()
    assert reply["object"] == "chat.completion"
    assert reply["id"].startswith("chatcmpl-")
    assert isinstance(reply["created"], int)
    assert reply["model"] == "gpt-4o-mini"
    assert reply["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "hello", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    assert reply["usage"] == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


async def test_anthropic_reply_has_the_message_shape(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("anthropic", [Fault.ok("hello", usage=(11, 7))])
    url, body = route_request(sim, "anthropic")
    reply = (await client.post(url, json=body)).json()
    assert reply["type"] == "message"
    assert reply["role"] == "assistant"
    assert reply["model"] == "claude-sonnet-4-5"
    assert reply["content"] == [{"type": "text", "text": "hello"}]
    assert reply["stop_reason"] == "end_turn"
    assert reply["usage"]["input_tokens"] == 11
    assert reply["usage"]["output_tokens"] == 7


async def test_anthropic_default_text_comes_from_the_last_text_block_of_the_last_user_turn(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    url, body = route_request(sim, "anthropic")
    reminder = {
        "type": "text",
        "text": "<system-reminder>\nContext the CLI adds.\n</system-reminder>",
    }
    body["messages"] = [
        {"role": "user", "content": "an earlier question"},
        {"role": "assistant", "content": "an earlier answer"},
        {"role": "user", "content": [reminder, {"type": "text", "text": PROMPT}]},
    ]
    reply = (await client.post(url, json=body)).json()
    assert reply["content"][0]["text"] == f"sim-anthropic: {PROMPT[:40]}"
    body["messages"][-1]["content"] = [{"type": "text", "text": PROMPT}, reminder]
    reply = (await client.post(url, json=body)).json()
    assert reply["content"][0]["text"].startswith("sim-anthropic: <system-reminder>")


async def test_responses_reply_has_the_response_shape(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("responses", [Fault.ok("hello", usage=(11, 7))])
    url, body = route_request(sim, "responses", instructions="Be brief.")
    reply = (await client.post(url, json=body)).json()
    assert reply["object"] == "response"
    assert reply["id"].startswith("resp_")
    assert isinstance(reply["created_at"], int)
    assert (reply["status"], reply["model"], reply["instructions"]) == (
        "completed",
        "gpt-4o-mini",
        "Be brief.",
    )
    assert reply["error"] is None
    assert reply["incomplete_details"] is None
    (item,) = reply["output"]
    assert item["id"].startswith("msg_")
    assert (item["type"], item["role"], item["status"]) == ("message", "assistant", "completed")
    assert item["content"] == [
        {"type": "output_text", "annotations": [], "logprobs": [], "text": "hello"}
    ]
    usage = reply["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (11, 7, 18)


async def test_responses_prompt_is_a_string_input_or_the_last_user_text(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    url, body = route_request(sim, "responses", input="plain string input")
    assert reply_text("responses", (await client.post(url, json=body)).json()) == (
        "sim-responses: plain string input"
    )
    body["input"] = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "d"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env/>"}]},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "ctx"},
                {"type": "input_text", "text": "the ask"},
            ],
        },
    ]
    assert reply_text("responses", (await client.post(url, json=body)).json()) == (
        "sim-responses: the ask"
    )


async def test_responses_stream_sends_the_documented_event_sequence(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("responses", [Fault.ok("abcdef", chunks=2, usage=(5, 9))])
    url, body = route_request(sim, "responses", stream=True)
    events = sse_events((await client.post(url, json=body)).text)
    names = [name for name, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    data = [json.loads(d) for _, d in events]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    assert data[0]["response"]["status"] == "in_progress"
    assert data[0]["response"]["output"] == []
    item_id = data[2]["item"]["id"]
    assert all(d["item_id"] == item_id for d in data[3:8])
    assert [d["delta"] for d in data[4:6]] == ["abc", "def"]
    assert data[6]["text"] == "abcdef"
    assert data[8]["item"]["content"][0]["text"] == "abcdef"
    final = data[-1]["response"]
    assert final["status"] == "completed"
    assert final["output"] == [data[8]["item"]]
    assert final["usage"]["total_tokens"] == 14


async def test_responses_json_mode_replies_with_a_schema_sample(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    fmt = {"format": {"type": "json_schema", "name": "Verdict", "schema": SCHEMA, "strict": True}}
    url, body = route_request(sim, "responses", text=fmt)
    reply = (await client.post(url, json=body)).json()
    assert json.loads(reply_text("responses", reply)) == {"verdict": "ok", "score": 0}
    assert reply["text"] == fmt


async def test_responses_and_chat_completions_are_scripted_and_counted_apart(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.status(503)])
    sim.script("responses", [Fault.auth()])
    chat_url, chat_body = route_request(sim, "openai")
    url, body = route_request(sim, "responses")
    assert (await client.post(url, json=body)).status_code == 401
    assert (await client.post(chat_url, json=chat_body)).status_code == 503
    assert (await client.post(url, json=body)).status_code == 200
    assert (sim.count("openai"), sim.count("responses")) == (1, 2)
    assert sim.requests("responses")[0]["path"] == "/openai/v1/responses"


async def test_gemini_reply_has_the_generate_content_shape(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("gemini", [Fault.ok("hello", usage=(11, 7))])
    url, body = route_request(sim, "gemini")
    reply = (await client.post(url, json=body)).json()
    candidate = reply["candidates"][0]
    assert candidate["content"] == {"parts": [{"text": "hello"}], "role": "model"}
    assert candidate["finishReason"] == "STOP"
    assert reply["usageMetadata"] == {
        "promptTokenCount": 11,
        "candidatesTokenCount": 7,
        "totalTokenCount": 18,
    }
    assert reply["modelVersion"] == "gemini-2.0-flash"


@pytest.mark.parametrize("route", STREAM_ROUTES)
async def test_stream_carries_the_text_in_chunks_and_ends_with_the_terminator(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    sim.script(route, [Fault.ok("the quick brown fox", chunks=4)])
    url, body = route_request(sim, route, stream=True)
    r = await client.post(url, json=body)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    text, done = stream_text(route, r.text)
    assert text == "the quick brown fox"
    assert done


async def test_openai_stream_sends_a_usage_chunk_when_asked(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.ok("hi there", usage=(3, 2))])
    url, body = route_request(sim, "openai", stream=True, stream_options={"include_usage": True})
    events = [data for _, data in sse_events((await client.post(url, json=body)).text)]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(d) for d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


async def test_anthropic_stream_sends_the_documented_event_sequence(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("anthropic", [Fault.ok("abcdef", chunks=2, usage=(5, 9))])
    url, body = route_request(sim, "anthropic", stream=True)
    events = sse_events((await client.post(url, json=body)).text)
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    delta = json.loads(events[-2][1])
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert delta["usage"] == {"output_tokens": 9}


async def test_gemini_stream_without_alt_sse_is_one_json_array(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("gemini", [Fault.ok("abcdef", chunks=3)])
    url = f"{sim.gemini_url}/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    items = (await client.post(url, json={"contents": []})).json()
    assert [i["candidates"][0]["content"]["parts"][0]["text"] for i in items] == ["ab", "cd", "ef"]
    assert items[-1]["candidates"][0]["finishReason"] == "STOP"


# -- structured output ---------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["ok", "bad"]},
        "score": {"type": "integer"},
    },
    "required": ["verdict", "score"],
}


async def test_json_mode_replies_with_a_schema_sample_or_the_scripted_text(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": SCHEMA}}
    url, body = route_request(sim, "openai", response_format=fmt)
    first = (await client.post(url, json=body)).json()
    assert json.loads(first["choices"][0]["message"]["content"]) == {"verdict": "ok", "score": 0}
    sim.script("openai", [Fault.ok('{"verdict": "bad"}')])
    second = (await client.post(url, json=body)).json()
    assert second["choices"][0]["message"]["content"] == '{"verdict": "bad"}'

    config = {"responseMimeType": "application/json", "responseSchema": SCHEMA}
    url, body = route_request(sim, "gemini", generationConfig=config)
    reply = (await client.post(url, json=body)).json()
    assert json.loads(reply_text("gemini", reply)) == {"verdict": "ok", "score": 0}


async def test_anthropic_forced_tool_returns_a_tool_use_block_with_parsed_input(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    tools = [{"name": "verdict", "description": "d", "input_schema": SCHEMA}]
    choice = {"type": "tool", "name": "verdict"}
    sim.script("anthropic", [Fault.ok('{"verdict": "bad", "score": 3}'), Fault.ok("not json")])
    url, body = route_request(sim, "anthropic", tools=tools, tool_choice=choice)
    reply = (await client.post(url, json=body)).json()
    assert reply["stop_reason"] == "tool_use"
    block = reply["content"][0]
    assert block["type"] == "tool_use"
    assert block["name"] == "verdict"
    assert block["input"] == {"verdict": "bad", "score": 3}
    broken = (await client.post(url, json=body)).json()
    assert broken["content"][0]["input"] == {"text": "not json"}
    sampled = (await client.post(url, json=body)).json()
    assert sampled["content"][0]["input"] == {"verdict": "ok", "score": 0}


# -- error replies -------------------------------------------------------------

Case = tuple[Callable[[], Fault], int, Callable[[Any], Any], Any]


def _error(field: str) -> Callable[[Any], Any]:
    """Reads ``error.<field>`` of an error reply."""
    return lambda b: b["error"][field]


def _message_has(text: str) -> Callable[[Any], Any]:
    return lambda b: text in b["error"]["message"]


# The same on the Chat Completions and the Responses routes (but for context_too_long).
OPENAI_ERRORS: list[Case] = [
    (Fault.rate_limited, 429, _error("code"), "rate_limit_exceeded"),
    (Fault.overloaded, 503, _error("type"), "server_error"),
    (Fault.server_error, 500, _error("type"), "server_error"),
    (Fault.auth, 401, _error("code"), "invalid_api_key"),
    (Fault.quota, 429, _error("code"), "insufficient_quota"),
    (Fault.model_not_found, 404, _error("code"), "model_not_found"),
    (Fault.bad_request, 400, _error("type"), "invalid_request_error"),
]
ANTHROPIC_ERRORS: list[Case] = [
    (Fault.rate_limited, 429, _error("type"), "rate_limit_error"),
    (Fault.overloaded, 529, _error("type"), "overloaded_error"),
    (Fault.server_error, 500, _error("type"), "api_error"),
    (Fault.auth, 401, _error("type"), "authentication_error"),
    (lambda: Fault.auth(403), 403, _error("type"), "permission_error"),
    (Fault.quota, 400, _message_has("credit balance is too low"), True),
    (Fault.model_not_found, 404, _error("type"), "not_found_error"),
    (Fault.bad_request, 400, _error("type"), "invalid_request_error"),
    (
        Fault.context_too_long,
        400,
        lambda b: b["error"]["message"].startswith("prompt is too long: "),
        True,
    ),
    (lambda: Fault.status(529), 529, _error("type"), "overloaded_error"),
]
GEMINI_ERRORS: list[Case] = [
    (Fault.rate_limited, 429, _error("status"), "RESOURCE_EXHAUSTED"),
    (Fault.overloaded, 503, _error("status"), "UNAVAILABLE"),
    (Fault.server_error, 500, _error("status"), "INTERNAL"),
    (Fault.auth, 401, _error("status"), "UNAUTHENTICATED"),
    (lambda: Fault.auth(403), 403, _error("status"), "PERMISSION_DENIED"),
    (Fault.quota, 429, _message_has("exceeded your current quota"), True),
    (Fault.model_not_found, 404, _error("status"), "NOT_FOUND"),
    (Fault.bad_request, 400, _error("status"), "INVALID_ARGUMENT"),
    (Fault.context_too_long, 400, _message_has("exceeds the maximum"), True),
]
ERROR_CASES: list[tuple[str, Callable[[], Fault], int, Callable[[Any], Any], Any]] = [
    *(("openai", *case) for case in OPENAI_ERRORS),
    ("openai", Fault.context_too_long, 400, _error("code"), "context_length_exceeded"),
    *(("responses", *case) for case in OPENAI_ERRORS),
    (
        "responses",
        Fault.context_too_long,
        400,
        lambda b: (b["error"]["code"], b["error"]["param"]),
        ("context_length_exceeded", "input"),
    ),
    *(("anthropic", *case) for case in ANTHROPIC_ERRORS),
    *(("gemini", *case) for case in GEMINI_ERRORS),
    ("http", Fault.overloaded, 503, _error("type"), "overloaded"),
    ("http", Fault.quota, 402, _error("type"), "quota"),
    ("http", lambda: Fault.status(502), 502, lambda b: "message" in b["error"], True),
]


@pytest.mark.parametrize(("route", "make", "status", "pick", "expected"), ERROR_CASES)
async def test_each_fault_renders_the_vendor_error(
    sim: SimulatedServer,
    client: httpx.AsyncClient,
    route: str,
    make: Callable[[], Fault],
    status: int,
    pick: Callable[[Any], Any],
    expected: Any,
) -> None:
    sim.script(route, [make()])
    url, body = route_request(sim, route)
    r = await client.post(url, json=body)
    assert r.status_code == status
    assert pick(r.json()) == expected
    if route == "gemini":
        assert r.json()["error"]["code"] == status
    if route in ("openai", "responses"):
        assert set(r.json()["error"]) == {"message", "type", "param", "code"}
    if route == "anthropic":
        assert r.json()["type"] == "error"


async def test_status_fault_sends_a_custom_body_and_headers(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    html = "<html><body>502 Bad Gateway</body></html>"
    sim.script(
        "openai",
        [Fault.status(502, html, {"x-gateway": "edge"}), Fault.status(418, {"why": "teapot"})],
    )
    url, body = route_request(sim, "openai")
    first = await client.post(url, json=body)
    assert (first.status_code, first.text, first.headers["x-gateway"]) == (502, html, "edge")
    assert first.headers["content-type"].startswith("text/html")
    second = await client.post(url, json=body)
    assert (second.status_code, second.json()) == (418, {"why": "teapot"})


@pytest.mark.parametrize("route", ROUTES)
async def test_rate_limit_headers(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    sim.script(
        route,
        [
            Fault.rate_limited(2),
            Fault.rate_limited(0.25, retry_after_ms=250),
            Fault.rate_limited(3, http_date=True),
            Fault.rate_limited(None),
        ],
    )
    url, body = route_request(sim, route)
    replies = [await client.post(url, json=body) for _ in range(4)]
    assert [r.status_code for r in replies] == [429] * 4
    assert replies[0].headers["retry-after"] == "2"
    assert replies[1].headers["retry-after"] == "0.25"
    assert replies[1].headers["retry-after-ms"] == "250"
    when = email.utils.parsedate_to_datetime(replies[2].headers["retry-after"]).timestamp()
    assert time.time() + 1 < when <= time.time() + 4
    assert "retry-after" not in replies[3].headers


# -- broken replies --------------------------------------------------------------


@pytest.mark.parametrize("route", STREAM_ROUTES)
async def test_cut_stream_lacks_the_terminator(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    sim.script(route, [Fault.cut_stream(after=2, text="abcdefghi")])
    url, body = route_request(sim, route, stream=True)
    r = await client.post(url, json=body)
    assert r.status_code == 200
    text, done = stream_text(route, r.text)
    assert (text, done) == ("abcdef", False)
    for marker in (
        "[DONE]",
        'finish_reason":"stop',
        "message_stop",
        "content_block_stop",
        "finishReason",
        "response.output_text.done",
        "response.completed",
    ):
        assert marker not in r.text


@pytest.mark.parametrize("route", STREAM_ROUTES)
async def test_cut_stream_abort_drops_the_connection(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    sim.script(route, [Fault.cut_stream(after=1, how="abort")])
    url, body = route_request(sim, route, stream=True)
    with pytest.raises(httpx.RemoteProtocolError):
        await client.post(url, json=body)
    await asyncio.sleep(0.05)
    assert sim.in_flight == 0


async def test_cut_non_stream_reply_drops_the_connection_mid_body(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("anthropic", [Fault.cut_stream()])
    url, body = route_request(sim, "anthropic")
    with pytest.raises(httpx.RemoteProtocolError):
        await client.post(url, json=body)


@pytest.mark.parametrize("route", ROUTES)
async def test_invalid_json_and_missing_field(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    sim.script(route, [Fault.invalid_json(), Fault.missing_field()])
    url, body = route_request(sim, route)
    broken = await client.post(url, json=body)
    assert broken.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken.text)
    missing = await client.post(url, json=body)
    assert missing.status_code == 200
    with pytest.raises((KeyError, IndexError)):
        reply_text(route, missing.json())


@pytest.mark.parametrize("route", STREAM_ROUTES)
async def test_invalid_json_in_a_stream(
    sim: SimulatedServer, client: httpx.AsyncClient, route: str
) -> None:
    sim.script(route, [Fault.invalid_json()])
    url, body = route_request(sim, route, stream=True)
    with pytest.raises(json.JSONDecodeError):
        stream_text(route, (await client.post(url, json=body)).text)


async def test_content_filter_on_each_route(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    for route in STREAM_ROUTES:
        sim.script(route, [Fault.content_filter(), Fault.content_filter()])
    url, body = route_request(sim, "openai")
    assert (await client.post(url, json=body)).json()["choices"][0][
        "finish_reason"
    ] == "content_filter"
    url, body = route_request(sim, "openai", stream=True)
    assert '"finish_reason":"content_filter"' in (await client.post(url, json=body)).text
    url, body = route_request(sim, "responses")
    refused = (await client.post(url, json=body)).json()
    assert refused["status"] == "incomplete"
    assert refused["incomplete_details"] == {"reason": "content_filter"}
    url, body = route_request(sim, "responses", stream=True)
    events = sse_events((await client.post(url, json=body)).text)
    assert events[-1][0] == "response.incomplete"
    assert json.loads(events[-1][1])["response"]["incomplete_details"]["reason"] == "content_filter"
    assert "response.completed" not in [name for name, _ in events]
    url, body = route_request(sim, "anthropic")
    assert (await client.post(url, json=body)).json()["stop_reason"] == "refusal"
    url, body = route_request(sim, "anthropic", stream=True)
    assert '"stop_reason":"refusal"' in (await client.post(url, json=body)).text
    url, body = route_request(sim, "gemini")
    assert (await client.post(url, json=body)).json()["candidates"][0]["finishReason"] == "SAFETY"
    url, body = route_request(sim, "gemini", stream=True)
    assert '"finishReason":"SAFETY"' in (await client.post(url, json=body)).text
    sim.script("gemini", [Fault.content_filter(prompt_blocked=True)])
    url, body = route_request(sim, "gemini")
    reply = (await client.post(url, json=body)).json()
    assert reply["promptFeedback"]["blockReason"] == "SAFETY"
    assert "candidates" not in reply


# -- time: hang and delay ------------------------------------------------------------


async def test_hang_ends_when_the_client_times_out(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.hang()])
    url, body = route_request(sim, "openai")
    with pytest.raises(httpx.ReadTimeout):
        await client.post(url, json=body, timeout=0.2)
    for _ in range(50):
        if sim.in_flight == 0:
            break
        await asyncio.sleep(0.02)
    assert sim.in_flight == 0
    assert (await client.post(url, json=body)).status_code == 200


async def test_stopping_the_server_ends_hung_requests_at_once() -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        sim = SimulatedServer(defaults={"anthropic": Fault.hang()})
        await sim.start()
        url, body = route_request(sim, "anthropic")
        pending = [asyncio.create_task(client.post(url, json=body)) for _ in range(3)]
        while sim.in_flight < 3:
            await asyncio.sleep(0.01)
        start = time.perf_counter()
        await sim.stop()
        assert time.perf_counter() - start < 2.0
        results = await asyncio.gather(*pending, return_exceptions=True)
        assert all(isinstance(r, httpx.TransportError) for r in results)
        assert sim.in_flight == 0


async def test_delay_then_reply(sim: SimulatedServer, client: httpx.AsyncClient) -> None:
    sim.script("gemini", [Fault.delay(0.2, then=Fault.status(503))])
    url, body = route_request(sim, "gemini")
    start = time.perf_counter()
    r = await client.post(url, json=body)
    assert r.status_code == 503
    assert time.perf_counter() - start >= 0.19


# -- scripts, defaults, flaky, counts --------------------------------------------


async def test_script_is_consumed_in_order_then_the_default_applies(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.status(503), Fault.rate_limited(), Fault.ok("third")])
    assert sim.pending("openai") == 3
    url, body = route_request(sim, "openai")
    statuses = [(await client.post(url, json=body)).status_code for _ in range(3)]
    assert statuses == [503, 429, 200]
    sim.set_default("openai", Fault.overloaded())
    assert (await client.post(url, json=body)).status_code == 503
    sim.script("openai", [Fault.ok("one")])
    sim.script("openai", [Fault.auth()])  # replaces what was left
    assert (await client.post(url, json=body)).status_code == 401
    sim.reset()
    assert sim.count("openai") == 0
    assert (await client.post(url, json=body)).status_code == 200


async def test_flaky_is_deterministic_for_a_seed(client: httpx.AsyncClient) -> None:
    async def statuses(fault: Fault) -> list[int]:
        async with SimulatedServer(defaults={"http": fault}) as sim:
            url, body = route_request(sim, "http")
            return [(await client.post(url, json=body)).status_code for _ in range(40)]

    first = await statuses(Fault.flaky(0.3, seed=7, fault=Fault.status(503)))
    again = await statuses(Fault.flaky(0.3, seed=7, fault=Fault.status(503)))
    other = await statuses(Fault.flaky(0.3, seed=8, fault=Fault.status(503)))
    assert first == again
    assert first != other
    assert set(first) == {200, 503}
    assert 4 <= first.count(503) <= 20
    assert set(await statuses(Fault.flaky(0.0, seed=1))) == {200}
    assert set(await statuses(Fault.flaky(1.0, seed=1))) == {500}


async def test_counts_are_exact_under_concurrency(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.status(503)] * 10)
    url, body = route_request(sim, "openai")
    replies = await asyncio.gather(*(client.post(url, json=body) for _ in range(50)))
    assert sorted(r.status_code for r in replies) == [200] * 40 + [503] * 10
    assert sim.count("openai") == 50
    assert sim.count("anthropic") == 0
    assert (await client.post(f"{sim.url}/nowhere", json={})).status_code == 404
    assert sim.count() == 50
    with pytest.raises(ValueError, match="route 'mistral' is not one of"):
        sim.count("mistral")  # a route the simulator does not speak (azure is one now)


async def test_requests_are_recorded_with_body_and_headers(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    url, body = route_request(sim, "anthropic")
    await client.post(
        url, json=body, headers={"x-api-key": "k-1", "anthropic-version": "2023-06-01"}
    )
    await client.post(url, content=b"{not json", headers={"content-type": "application/json"})
    first, second = sim.requests("anthropic")
    assert first["body"] == body
    assert first["headers"]["x-api-key"] == "k-1"
    assert first["path"] == "/anthropic/v1/messages"
    assert second["body"] is None
    assert sim.count("anthropic") == 2


async def test_unparseable_request_body_gets_the_vendor_400(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    r = await client.post(f"{sim.openai_url}/chat/completions", content=b"{bad")
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "invalid_request_error"


async def test_control_routes_script_and_count(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    r = await client.post(f"{sim.url}/_sim/script", json={"openai": [{"status": 502}]})
    assert r.status_code == 200
    url, body = route_request(sim, "openai")
    assert (await client.post(url, json=body)).status_code == 502
    counts = (await client.get(f"{sim.url}/_sim/counts")).json()
    assert counts == {
        "openai": 1,
        "responses": 0,
        "anthropic": 0,
        "gemini": 0,
        "http": 0,
        "azure": 0,
        "bedrock": 0,
        "vertex_anthropic": 0,
        "vertex_gemini": 0,
    }
    bad = await client.post(f"{sim.url}/_sim/script", json={"mistral": []})
    assert bad.status_code == 400
    assert "mistral" in bad.json()["error"]


def test_in_thread_serves_synchronous_clients() -> None:
    with SimulatedServer.in_thread() as sim, httpx.Client(timeout=10) as client:
        sim.script("gemini", [Fault.server_error(502)])
        url, body = route_request(sim, "gemini")
        assert client.post(url, json=body).status_code == 502
        assert client.post(url, json=body).status_code == 200
        assert sim.count("gemini") == 2


def test_url_before_start_says_how_to_run() -> None:
    with pytest.raises(RuntimeError, match="async with SimulatedServer"):
        _ = SimulatedServer().url


# -- fault specs and the CLI ----------------------------------------------------------


def test_from_spec_forms() -> None:
    assert Fault.from_spec({"status": 503}) == Fault.status(503)
    assert Fault.from_spec({"ok": "hello"}) == Fault.ok("hello")
    assert Fault.from_spec({"ok": {"text": "hi", "chunks": 2}}) == Fault.ok("hi", chunks=2)
    assert Fault.from_spec({"ok": None, "usage": [3, 4]}) == Fault.ok(usage=(3, 4))
    assert Fault.from_spec("hang") == Fault.hang()
    assert Fault.from_spec({"rate_limited": 2, "retry_after_ms": 5}) == Fault.rate_limited(
        2, retry_after_ms=5
    )
    delay = Fault.from_spec({"delay": 0.5, "then": {"status": 500}})
    assert delay == Fault.delay(0.5, then=Fault.status(500))
    flaky = Fault.from_spec({"flaky": 0.5, "seed": 3, "fault": "overloaded"})
    assert (flaky.kind, flaky.rate, flaky.seed, flaky.then) == ("flaky", 0.5, 3, Fault.overloaded())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"explode": 1}, "needs exactly one factory key"),
        ({"status": 503, "ok": "x"}, "needs exactly one factory key"),
        ({"status": 99}, "is not an HTTP status"),
        ({"flaky": 2}, "must be between 0.0 and 1.0"),
        ({"ok": "x", "colour": "red"}, "bad arguments for ok"),
        ({"cut_stream": 1, "how": "slowly"}, "how='slowly'"),
    ],
)
def test_from_spec_errors_name_the_problem(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Fault.from_spec(spec)


def test_main_rejects_a_bad_script_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "faults.json"
    path.write_text('{"mistral": [{"status": 503}]}')  # a route it does not speak
    assert main(["--port", "0", "--script", str(path)]) == 2
    assert "route 'mistral' is not one of" in capsys.readouterr().err
    assert main(["--port", "0", "--script", str(tmp_path / "missing.json")]) == 2


def test_cli_serves_a_script_on_a_port(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text(
        json.dumps({"openai": [{"status": 503}, {"ok": "hello"}], "defaults": {"http": "quota"}})
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "providers.simulator", "--port", "0", "--script", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("simulated provider server on http://127.0.0.1:")
        base = first.rsplit(" on ", 1)[1].strip()
        with httpx.Client(timeout=10) as client:
            url = f"{base}/openai/v1/chat/completions"
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            assert client.post(url, json=body).status_code == 503
            assert client.post(url, json=body).json()["choices"][0]["message"]["content"] == "hello"
            assert client.post(f"{base}/http/complete", json={"prompt": "x"}).status_code == 402
            assert client.get(f"{base}/_sim/counts").json()["openai"] == 2
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


# -- the HTTP/1.1 layer ------------------------------------------------------------------


async def test_pipelined_keep_alive_and_chunked_request_bodies(sim: SimulatedServer) -> None:
    body = json.dumps({"prompt": "hello"}).encode()
    first = (
        b"POST /http/complete HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%b" % (len(body), body)
    )
    second = (
        b"POST /http/complete HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", sim.port)
    writer.write(first + second)  # both requests in one write: pipelined
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), timeout=10)  # server closes after the second
    writer.close()
    replies = raw.split(b"HTTP/1.1 200 OK\r\n")[1:]
    assert len(replies) == 2
    assert all(b'"text":"sim-http: hello"' in r for r in replies)
    assert sim.count("http") == 2


async def test_stream_interval_paces_the_events(
    sim: SimulatedServer, client: httpx.AsyncClient
) -> None:
    sim.script("openai", [Fault.ok("abcdef", chunks=3, interval=0.05)])
    url, body = route_request(sim, "openai", stream=True)
    arrivals = []
    start = time.perf_counter()
    async with client.stream("POST", url, json=body) as r:
        async for _ in r.aiter_raw():
            arrivals.append(time.perf_counter() - start)
    assert len(arrivals) >= 3  # paced events arrive in separate reads
    assert arrivals[-1] >= 0.2  # 6 events (role, 3 texts, finish, [DONE]) 50 ms apart

"""The official SDKs, pointed at the simulated server, parse its replies.

If the openai SDK (chat completions and the Responses API) or the anthropic
SDK can read a reply (streaming included) and raises its own exception class
for an error, the simulator speaks the real wire format. No Gemini SDK is installed here, so the Gemini replies are checked
against the documented REST shapes (GenerateContentResponse, google.rpc.Status).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel

from providers.simulator import Fault, SimulatedServer

MESSAGES: list[Any] = [{"role": "user", "content": "Name one prime number."}]


class Answer(BaseModel):
    value: int
    reason: str


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedServer]:
    async with SimulatedServer() as server:
        yield server


@pytest.fixture
async def oai(sim: SimulatedServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=sim.openai_url, api_key="sk-test", max_retries=0)
    yield client
    await client.close()


@pytest.fixture
async def claude(sim: SimulatedServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(
        base_url=sim.anthropic_url, api_key="sk-ant-test", max_retries=0
    )
    yield client
    await client.close()


# -- OpenAI ------------------------------------------------------------------------


async def test_openai_sdk_parses_a_completion(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("openai", [Fault.ok("seven", usage=(12, 3))])
    reply = await oai.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert reply.choices[0].message.content == "seven"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 3)
    assert reply.model == "gpt-4o-mini"


async def test_openai_sdk_streams_with_usage(sim: SimulatedServer, oai: openai.AsyncOpenAI) -> None:
    sim.script("openai", [Fault.ok("two three five", chunks=3, usage=(4, 5))])
    stream = await oai.chat.completions.create(
        model="gpt-4o-mini",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = [], None, None
    async for chunk in stream:
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
        usage = chunk.usage or usage
    assert "".join(text) == "two three five"
    assert finish == "stop"
    assert usage is not None
    assert usage.total_tokens == 9


async def test_openai_sdk_parses_structured_output(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("openai", [Fault.ok('{"value": 7, "reason": "prime"}')])
    reply = await oai.chat.completions.parse(
        model="gpt-4o-mini", messages=MESSAGES, response_format=Answer
    )
    assert reply.choices[0].message.parsed == Answer(value=7, reason="prime")
    sent = sim.requests("openai")[0]["body"]["response_format"]
    assert sent["type"] == "json_schema"
    # Unscripted, the simulator answers with a sample of the schema the SDK sent.
    sampled = await oai.chat.completions.parse(
        model="gpt-4o-mini", messages=MESSAGES, response_format=Answer
    )
    assert sampled.choices[0].message.parsed == Answer(value=0, reason="sim")


async def test_openai_sdk_sees_content_filter(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("openai", [Fault.content_filter()])
    reply = await oai.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert reply.choices[0].finish_reason == "content_filter"


@pytest.mark.parametrize(
    ("fault", "error", "code"),
    [
        (Fault.rate_limited(1), openai.RateLimitError, "rate_limit_exceeded"),
        (Fault.quota(), openai.RateLimitError, "insufficient_quota"),
        (Fault.auth(), openai.AuthenticationError, "invalid_api_key"),
        (Fault.auth(403), openai.PermissionDeniedError, "unsupported_country_region_territory"),
        (Fault.model_not_found(), openai.NotFoundError, "model_not_found"),
        (Fault.context_too_long(), openai.BadRequestError, "context_length_exceeded"),
        (Fault.overloaded(), openai.InternalServerError, None),
        (Fault.server_error(), openai.InternalServerError, None),
    ],
)
async def test_openai_sdk_raises_its_own_errors(
    sim: SimulatedServer,
    oai: openai.AsyncOpenAI,
    fault: Fault,
    error: type[openai.APIStatusError],
    code: str | None,
) -> None:
    sim.script("openai", [fault])
    with pytest.raises(error) as info:
        await oai.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert info.value.code == code
    assert sim.count("openai") == 1  # max_retries=0: exactly one request


async def test_openai_sdk_stream_cut_ends_without_finish_reason(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("openai", [Fault.cut_stream(after=2, text="abcdef")])
    stream = await oai.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "abcd"
    assert all(c.choices[0].finish_reason is None for c in chunks)


# -- OpenAI Responses API ------------------------------------------------------------


async def test_openai_sdk_parses_a_response(sim: SimulatedServer, oai: openai.AsyncOpenAI) -> None:
    sim.script("responses", [Fault.ok("seven", usage=(12, 3))])
    reply = await oai.responses.create(model="gpt-4o-mini", input="Name one prime number.")
    assert reply.output_text == "seven"
    assert reply.status == "completed"
    assert reply.model == "gpt-4o-mini"
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 3)
    assert reply.usage.total_tokens == 15
    message = reply.output[0]
    assert message.type == "message"
    assert message.content[0].type == "output_text"
    assert sim.count("responses") == 1
    assert sim.count("openai") == 0


async def test_openai_sdk_streams_a_response(sim: SimulatedServer, oai: openai.AsyncOpenAI) -> None:
    sim.script("responses", [Fault.ok("two three five", chunks=3, usage=(4, 5))])
    stream = await oai.responses.create(model="gpt-4o-mini", input=MESSAGES, stream=True)
    deltas, kinds, final = [], [], None
    async for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        elif event.type == "response.completed":
            final = event.response
    assert len(deltas) == 3
    assert "".join(deltas) == "two three five"
    assert kinds[0] == "response.created"
    assert final is not None
    assert final.output_text == "two three five"
    assert final.usage is not None
    assert final.usage.total_tokens == 9


async def test_openai_sdk_stream_helper_accumulates_the_events(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    # The helper rebuilds the response from the events: wrong ids or order would break it.
    sim.script("responses", [Fault.ok("abc def", chunks=2)])
    async with oai.responses.stream(model="gpt-4o-mini", input="hi") as stream:
        texts = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert texts == ["abc ", "def"]
    assert final.output_text == "abc def"


async def test_openai_sdk_parses_structured_output_from_a_response(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("responses", [Fault.ok('{"value": 7, "reason": "prime"}')])
    reply = await oai.responses.parse(model="gpt-4o-mini", input=MESSAGES, text_format=Answer)
    assert reply.output_parsed == Answer(value=7, reason="prime")
    assert sim.requests("responses")[0]["body"]["text"]["format"]["type"] == "json_schema"
    sampled = await oai.responses.parse(model="gpt-4o-mini", input=MESSAGES, text_format=Answer)
    assert sampled.output_parsed == Answer(value=0, reason="sim")


async def test_openai_sdk_sees_an_incomplete_filtered_response(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("responses", [Fault.content_filter(), Fault.content_filter()])
    reply = await oai.responses.create(model="gpt-4o-mini", input="x")
    assert reply.status == "incomplete"
    assert reply.incomplete_details is not None
    assert reply.incomplete_details.reason == "content_filter"
    stream = await oai.responses.create(model="gpt-4o-mini", input="x", stream=True)
    events = [event async for event in stream]
    assert events[-1].type == "response.incomplete"


async def test_openai_sdk_response_stream_cut_lacks_completed(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("responses", [Fault.cut_stream(after=2, text="abcdef")])
    stream = await oai.responses.create(model="gpt-4o-mini", input="x", stream=True)
    events = [event async for event in stream]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert "".join(deltas) == "abcd"
    assert "response.completed" not in [e.type for e in events]


@pytest.mark.parametrize(
    ("fault", "error", "code"),
    [
        (Fault.rate_limited(1), openai.RateLimitError, "rate_limit_exceeded"),
        (Fault.quota(), openai.RateLimitError, "insufficient_quota"),
        (Fault.auth(), openai.AuthenticationError, "invalid_api_key"),
        (Fault.model_not_found(), openai.NotFoundError, "model_not_found"),
        (Fault.context_too_long(), openai.BadRequestError, "context_length_exceeded"),
        (Fault.overloaded(), openai.InternalServerError, None),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_openai_sdk_raises_its_own_errors_for_responses(
    sim: SimulatedServer,
    oai: openai.AsyncOpenAI,
    fault: Fault,
    error: type[openai.APIStatusError],
    code: str | None,
    stream: bool,
) -> None:
    sim.script("responses", [fault])
    with pytest.raises(error) as info:
        await oai.responses.create(model="gpt-4o-mini", input="x", stream=stream)
    assert info.value.code == code
    assert sim.count("responses") == 1


# -- Anthropic -----------------------------------------------------------------------


async def test_anthropic_sdk_parses_a_message(
    sim: SimulatedServer, claude: anthropic.AsyncAnthropic
) -> None:
    sim.script("anthropic", [Fault.ok("seven", usage=(12, 3))])
    reply = await claude.messages.create(model="claude-test", max_tokens=64, messages=MESSAGES)
    assert reply.content[0].type == "text"
    assert reply.content[0].text == "seven"
    assert reply.stop_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 3)


async def test_anthropic_sdk_streams(
    sim: SimulatedServer, claude: anthropic.AsyncAnthropic
) -> None:
    sim.script("anthropic", [Fault.ok("two three five", chunks=4, usage=(4, 5))])
    async with claude.messages.stream(
        model="claude-test", max_tokens=64, messages=MESSAGES
    ) as stream:
        pieces = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert len(pieces) == 4
    assert "".join(pieces) == "two three five"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 5


async def test_anthropic_sdk_reads_a_forced_tool_call(
    sim: SimulatedServer, claude: anthropic.AsyncAnthropic
) -> None:
    tool: Any = {"name": "answer", "description": "d", "input_schema": Answer.model_json_schema()}
    choice: Any = {"type": "tool", "name": "answer"}
    sim.script("anthropic", [Fault.ok('{"value": 7, "reason": "prime"}')] * 2)
    reply = await claude.messages.create(
        model="claude-test", max_tokens=64, messages=MESSAGES, tools=[tool], tool_choice=choice
    )
    block = reply.content[0]
    assert block.type == "tool_use"
    assert Answer.model_validate(block.input) == Answer(value=7, reason="prime")
    async with claude.messages.stream(
        model="claude-test", max_tokens=64, messages=MESSAGES, tools=[tool], tool_choice=choice
    ) as stream:
        final = await stream.get_final_message()
    streamed = final.content[0]
    assert streamed.type == "tool_use"
    assert streamed.input == {"value": 7, "reason": "prime"}
    assert final.stop_reason == "tool_use"


async def test_anthropic_sdk_sees_a_refusal(
    sim: SimulatedServer, claude: anthropic.AsyncAnthropic
) -> None:
    sim.script("anthropic", [Fault.content_filter()])
    reply = await claude.messages.create(model="claude-test", max_tokens=64, messages=MESSAGES)
    assert reply.stop_reason == "refusal"


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (Fault.overloaded(), getattr(anthropic, "OverloadedError", anthropic.InternalServerError)),
        (Fault.rate_limited(1), anthropic.RateLimitError),
        (Fault.auth(), anthropic.AuthenticationError),
        (Fault.auth(403), anthropic.PermissionDeniedError),
        (Fault.model_not_found(), anthropic.NotFoundError),
        (Fault.context_too_long(), anthropic.BadRequestError),
        (Fault.quota(), anthropic.BadRequestError),
        (Fault.server_error(), anthropic.InternalServerError),
    ],
)
async def test_anthropic_sdk_raises_its_own_errors(
    sim: SimulatedServer,
    claude: anthropic.AsyncAnthropic,
    fault: Fault,
    error: type[anthropic.APIStatusError],
) -> None:
    sim.script("anthropic", [fault])
    with pytest.raises(error) as info:
        await claude.messages.create(model="claude-test", max_tokens=64, messages=MESSAGES)
    assert isinstance(info.value.body, dict)
    assert info.value.body["type"] == "error"
    assert sim.count("anthropic") == 1


async def test_anthropic_529_is_an_internal_server_error_subclass(
    sim: SimulatedServer, claude: anthropic.AsyncAnthropic
) -> None:
    sim.script("anthropic", [Fault.overloaded()])
    with pytest.raises(anthropic.InternalServerError) as info:
        await claude.messages.create(model="claude-test", max_tokens=64, messages=MESSAGES)
    assert info.value.status_code == 529


# -- Gemini (documented REST shapes; no SDK installed) -------------------------------------


def _check_response(obj: dict[str, Any], *, final: bool) -> str:
    """Check one GenerateContentResponse against the documented REST shape."""
    assert set(obj) <= {
        "candidates",
        "promptFeedback",
        "usageMetadata",
        "modelVersion",
        "responseId",
    }
    (candidate,) = obj["candidates"]
    assert candidate["content"]["role"] == "model"
    (part,) = candidate["content"]["parts"]
    assert isinstance(part["text"], str)
    assert isinstance(candidate["index"], int)
    if final:
        assert candidate["finishReason"] == "STOP"
    else:
        assert "finishReason" not in candidate
    usage = obj["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]
    return str(part["text"])


async def test_gemini_replies_follow_the_rest_format(sim: SimulatedServer) -> None:
    base = f"{sim.gemini_url}/v1beta/models/gemini-2.0-flash"
    body = {"contents": [{"role": "user", "parts": [{"text": "Name one prime."}]}]}
    sim.script(
        "gemini", [Fault.ok("seven"), Fault.ok("two three five", chunks=3), Fault.rate_limited(2)]
    )
    async with httpx.AsyncClient(timeout=10) as client:
        reply = await client.post(
            f"{base}:generateContent", json=body, headers={"x-goog-api-key": "k"}
        )
        assert _check_response(reply.json(), final=True) == "seven"
        streamed = await client.post(
            f"{base}:streamGenerateContent", params={"alt": "sse"}, json=body
        )
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = [e for e in streamed.text.split("\r\n\r\n") if e]
        assert all(e.startswith("data: ") for e in events)
        chunks = [json.loads(e[len("data: ") :]) for e in events]
        texts = [_check_response(c, final=i == len(chunks) - 1) for i, c in enumerate(chunks)]
        assert "".join(texts) == "two three five"
        error = await client.post(f"{base}:generateContent", json=body)
        assert error.status_code == 429
        status = error.json()["error"]
        assert (status["code"], status["status"]) == (429, "RESOURCE_EXHAUSTED")
        assert isinstance(status["message"], str)
        assert status["details"][0]["@type"] == "type.googleapis.com/google.rpc.RetryInfo"


# -- Tool calls (scripted with Fault.ok(tool_calls=...)) --------------------------------

CALLS: list[Any] = [
    {"name": "get_weather", "arguments": {"city": "Paris"}},
    {"name": "get_time", "arguments": {"zone": "CET"}},
]
PARAMS: Any = {"type": "object", "properties": {"city": {"type": "string"}}}


async def test_openai_sdk_parses_tool_calls(sim: SimulatedServer, oai: openai.AsyncOpenAI) -> None:
    sim.script("openai", [Fault.ok(tool_calls=CALLS)])
    tools: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMS}}]
    reply = await oai.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=tools)
    message = reply.choices[0].message
    assert message.content is None and reply.choices[0].finish_reason == "tool_calls"
    calls = message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    assert len({c.id for c in calls}) == 2
    assert sim.tools("openai") == [["get_weather"]]


async def test_openai_sdk_stream_helper_assembles_tool_calls(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    # The helper accumulates delta.tool_calls by index: wrong indexes or ids would break it.
    sim.script("openai", [Fault.ok("Checking.", tool_calls=CALLS)])
    async with oai.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Checking."
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("get_weather", '{"city":"Paris"}'),
        ("get_time", '{"zone":"CET"}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"


async def test_openai_sdk_parses_function_calls_from_a_response(
    sim: SimulatedServer, oai: openai.AsyncOpenAI
) -> None:
    sim.script("responses", [Fault.ok(tool_calls=CALLS)] * 2)
    tools: Any = [{"type": "function", "name": "get_weather", "parameters": PARAMS}]
    reply = await oai.responses.create(model="gpt-4o-mini", input="hi", tools=tools)
    calls = [o for o in reply.output if o.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    async with oai.responses.stream(model="gpt-4o-mini", input="hi", tools=tools) as stream:
        pieces = [
            e.delta async for e in stream if e.type == "response.function_call_arguments.delta"
        ]
        final = await stream.get_final_response()
    assert "".join(pieces) == '{"city":"Paris"}{"zone":"CET"}'
    assert [o.type for o in final.output] == ["function_call", "function_call"]
    assert sim.tools("responses") == [["get_weather"], ["get_weather"]]


async def test_anthropic_sdk_parses_tool_use_blocks(
    sim: SimulatedServer, claude: anthropic.AsyncAnthropic
) -> None:
    tools: Any = [{"name": "get_weather", "input_schema": PARAMS}]
    sim.script("anthropic", [Fault.ok("Checking.", tool_calls=CALLS)] * 2)
    reply = await claude.messages.create(
        model="claude-test", max_tokens=64, messages=MESSAGES, tools=tools
    )
    assert reply.stop_reason == "tool_use"
    assert [b.type for b in reply.content] == ["text", "tool_use", "tool_use"]
    uses = [b for b in reply.content if b.type == "tool_use"]
    assert [(b.name, b.input) for b in uses] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    async with claude.messages.stream(
        model="claude-test", max_tokens=64, messages=MESSAGES, tools=tools
    ) as stream:
        final = await stream.get_final_message()
    streamed = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    assert streamed == [("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})]
    assert final.content[0].type == "text" and final.content[0].text == "Checking."
    assert sim.tools("anthropic") == [["get_weather"], ["get_weather"]]


async def test_gemini_function_calls_follow_the_rest_format(sim: SimulatedServer) -> None:
    sim.script("gemini", [Fault.ok(tool_calls=CALLS)] * 2)
    url = f"{sim.gemini_url}/v1beta/models/gemini-2.5-flash"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    async with httpx.AsyncClient() as client:
        plain = (await client.post(f"{url}:generateContent", json=body)).json()
        sse = (await client.post(f"{url}:streamGenerateContent?alt=sse", json=body)).text
    parts = plain["candidates"][0]["content"]["parts"]
    assert parts == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "get_time", "args": {"zone": "CET"}}},
    ]
    last = json.loads(sse.strip().split("\r\n\r\n")[-1].removeprefix("data: "))
    assert last["candidates"][0]["content"]["parts"] == parts
    assert last["candidates"][0]["finishReason"] == "STOP"

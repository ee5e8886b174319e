"""boto3's ``bedrock-runtime`` client (``converse``, ``converse_stream``) and anthropic's
``AnthropicBedrock`` (InvokeModel and its stream), pointed at the simulator's bedrock
route, parse its replies, streams and errors: the simulator speaks Bedrock's wire, and
its signature check accepts what botocore signs and refuses a wrong secret.

``sim`` is the module's simulated server (tests/providers/conftest.py).
"""

from __future__ import annotations

from typing import Any

import anthropic
import boto3
import botocore.config
import botocore.exceptions
import pytest

from providers.simulator import Fault, SimulatedServer
from providers.simulator.server import SIM_AWS_KEY_ID, SIM_AWS_SECRET

MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"
MESSAGES: list[Any] = [{"role": "user", "content": [{"text": "Name one prime number."}]}]
NO_RETRIES = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"})


def runtime(sim: SimulatedServer, secret: str = SIM_AWS_SECRET) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-west-2",
        endpoint_url=sim.bedrock_url,
        aws_access_key_id=SIM_AWS_KEY_ID,
        aws_secret_access_key=secret,
        config=NO_RETRIES,
    )


def test_converse_text_usage_and_stop_reason(sim: SimulatedServer) -> None:
    sim.script("bedrock", [Fault.ok("seven", usage=(12, 3))])
    reply = runtime(sim).converse(modelId=MODEL, messages=MESSAGES, system=[{"text": "Brief."}])
    assert reply["output"]["message"]["content"] == [{"text": "seven"}]
    assert reply["stopReason"] == "end_turn"
    assert reply["usage"] == {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}
    (sent,) = sim.requests("bedrock")
    assert sent["path"] == f"/bedrock/model/{MODEL}/converse"  # boto3 sends %3A: decoded
    assert sent["body"]["system"] == [{"text": "Brief."}]


def test_converse_tool_use_and_forced_tool(sim: SimulatedServer) -> None:
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    sim.script("bedrock", [Fault.ok(tool_calls=[call])])
    spec = {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}
    reply = runtime(sim).converse(
        modelId=MODEL,
        messages=MESSAGES,
        toolConfig={"tools": [{"toolSpec": spec}], "toolChoice": {"any": {}}},
    )
    (block,) = reply["output"]["message"]["content"]
    assert block["toolUse"]["name"] == "get_weather"
    assert block["toolUse"]["input"] == {"city": "Paris"}
    assert reply["stopReason"] == "tool_use"


def test_converse_stream_events(sim: SimulatedServer) -> None:
    sim.script("bedrock", [Fault.ok("two three five", chunks=3, usage=(4, 5))])
    reply = runtime(sim).converse_stream(modelId=MODEL, messages=MESSAGES)
    events = list(reply["stream"])
    assert list(events[0]) == ["messageStart"]
    text = "".join(
        e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e
    )
    assert text == "two three five"
    stops = [e["messageStop"]["stopReason"] for e in events if "messageStop" in e]
    assert stops == ["end_turn"]
    assert events[-1]["metadata"]["usage"]["outputTokens"] == 5


def test_converse_stream_tool_use_in_pieces(sim: SimulatedServer) -> None:
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    sim.script("bedrock", [Fault.ok(tool_calls=[call])])
    events = list(runtime(sim).converse_stream(modelId=MODEL, messages=MESSAGES)["stream"])
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start["start"]["toolUse"]["name"] == "get_weather"
    pieces = [
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in events
        if "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"]
    ]
    assert "".join(pieces) == '{"city":"Paris"}'


@pytest.mark.parametrize(
    ("fault", "code", "status"),
    [
        (lambda: Fault.rate_limited(None), "ThrottlingException", 429),
        (Fault.overloaded, "ServiceUnavailableException", 503),
        (Fault.context_too_long, "ValidationException", 400),
        (lambda: Fault.auth(403), "AccessDeniedException", 403),
        (Fault.model_not_found, "ResourceNotFoundException", 404),
        (Fault.quota, "ServiceQuotaExceededException", 400),
        (lambda: Fault.status(408), "ModelTimeoutException", 408),
    ],
)
def test_errors_are_boto3s_own(sim: SimulatedServer, fault: Any, code: str, status: int) -> None:
    sim.script("bedrock", [fault()])
    with pytest.raises(botocore.exceptions.ClientError) as info:
        runtime(sim).converse(modelId=MODEL, messages=MESSAGES)
    assert info.value.response["Error"]["Code"] == code
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert sim.count("bedrock") == 1  # boto3's own retries are off


def test_an_exception_inside_the_stream_is_boto3s_event_stream_error(sim: SimulatedServer) -> None:
    sim.script("bedrock", [Fault.stream_error(Fault.rate_limited(None), after=2)])
    reply = runtime(sim).converse_stream(modelId=MODEL, messages=MESSAGES)
    seen: list[Any] = []
    with pytest.raises(botocore.exceptions.EventStreamError) as info:
        for event in reply["stream"]:
            seen.append(event)
    assert info.value.response["Error"]["Code"] == "throttlingException"
    assert sum("contentBlockDelta" in e for e in seen) == 2


def test_a_wrong_secret_is_refused_with_aws_403(sim: SimulatedServer) -> None:
    with pytest.raises(botocore.exceptions.ClientError) as info:
        runtime(sim, secret="wrong-secret").converse(modelId=MODEL, messages=MESSAGES)
    assert info.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert sim.count("bedrock") == 0


# -- anthropic's AnthropicBedrock: InvokeModel and InvokeModelWithResponseStream ------------


def claude(sim: SimulatedServer, secret: str = SIM_AWS_SECRET) -> anthropic.AnthropicBedrock:
    return anthropic.AnthropicBedrock(
        aws_access_key=SIM_AWS_KEY_ID,
        aws_secret_key=secret,
        aws_region="us-east-1",
        base_url=sim.bedrock_url,
        max_retries=0,
    )


CLAUDE = "anthropic.claude-sonnet-4-6-v1:0"
PROMPT: list[Any] = [{"role": "user", "content": "Name one prime number."}]


def test_anthropic_bedrock_message(sim: SimulatedServer) -> None:
    sim.script("bedrock", [Fault.ok("seven", usage=(9, 2))])
    message = claude(sim).messages.create(model=CLAUDE, max_tokens=50, messages=PROMPT)
    assert message.content[0].text == "seven"  # type: ignore[union-attr]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 2)
    (sent,) = sim.requests("bedrock")
    assert sent["path"] == f"/bedrock/model/{CLAUDE}/invoke"
    assert "anthropic_version" in sent["body"] and "model" not in sent["body"]


def test_anthropic_bedrock_stream(sim: SimulatedServer) -> None:
    sim.script("bedrock", [Fault.ok("two three five", chunks=3)])
    with claude(sim).messages.stream(model=CLAUDE, max_tokens=50, messages=PROMPT) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "two three five" and final.stop_reason == "end_turn"
    assert sim.requests("bedrock")[0]["path"].endswith("/invoke-with-response-stream")


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (lambda: Fault.rate_limited(None), anthropic.RateLimitError),
        (Fault.overloaded, anthropic.InternalServerError),
        (Fault.bad_request, anthropic.BadRequestError),
        (lambda: Fault.auth(403), anthropic.PermissionDeniedError),
    ],
)
def test_anthropic_bedrock_errors(sim: SimulatedServer, fault: Any, error: Any) -> None:
    sim.script("bedrock", [fault()])
    with pytest.raises(error):
        claude(sim).messages.create(model=CLAUDE, max_tokens=50, messages=PROMPT)


def test_anthropic_bedrock_wrong_secret(sim: SimulatedServer) -> None:
    with pytest.raises(anthropic.PermissionDeniedError):
        claude(sim, "wrong").messages.create(model=CLAUDE, max_tokens=50, messages=PROMPT)
    assert sim.count("bedrock") == 0

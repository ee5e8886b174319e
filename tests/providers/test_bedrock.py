"""BedrockConverse over loopback HTTP against the simulator, which checks every SigV4
signature: the Converse wire, tools, structured output, usage, the error taxonomy
before and inside a stream, credentials off the event loop, no secret in any
message, prices, the chain file and a three-child chain with health in Redis."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import botocore.credentials
import pytest

from orchestrator import FallbackAgent
from orchestrator import errors as E
from orchestrator.testing import capture_events
from orchestrator.types import Message, Request, Response, Tool, ToolCall
from providers import AnthropicMessages, BedrockConverse, Fault, SimulatedServer
from providers.simulator.server import SIM_AWS_KEY_ID, SIM_AWS_SECRET
from tests.conftest import turns
from tests.orchestrator.health.redis.conftest import prefix, redis_server  # noqa: F401
from tests.orchestrator.telemetry.conftest import Otel, otel  # noqa: F401
from tests.providers.conftest import after_cli_help, kept_then_refreshed

MODEL = "us.anthropic.claude-sonnet-4-6-v1:0"


def keys(secret: str = SIM_AWS_SECRET, token: str | None = None) -> Any:
    return botocore.credentials.Credentials(SIM_AWS_KEY_ID, secret, token)


def bedrock(sim: SimulatedServer, **kw: Any) -> BedrockConverse:
    kw.setdefault("credentials", keys())
    kw.setdefault("region", "us-east-1")
    return BedrockConverse(kw.pop("model_id", MODEL), endpoint_url=sim.bedrock_url, **kw)


async def streamed(provider: BedrockConverse, request: Request) -> tuple[list[Any], Response]:
    items = [item async for item in provider.stream(request)]
    final = items[-1]
    assert isinstance(final, Response)
    return [i for i in items[:-1] if i], final


# -- the wire --------------------------------------------------------------------------


async def test_converse_url_signature_and_body(sim: SimulatedServer) -> None:
    provider = bedrock(sim, max_tokens=300, cache_points=("system", "messages"))
    request = Request(
        messages=turns("Hi", "Hello.", "What is the capital of France?"),
        system="Be brief.",
        temperature=0.2,
        stop=["END"],
    )
    response = await provider.complete(request)
    assert response.text == "sim-bedrock: What is the capital of France?"
    assert response.finish_reason == "end_turn"
    (sent,) = sim.requests("bedrock")
    assert sent["path"] == f"/bedrock/model/{MODEL}/converse"
    assert sent["headers"]["authorization"].startswith(
        f"AWS4-HMAC-SHA256 Credential={SIM_AWS_KEY_ID}/"
    )
    assert "/us-east-1/bedrock/aws4_request" in sent["headers"]["authorization"]
    body = sent["body"]
    assert body["system"] == [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][-1]["content"] == [
        {"text": "What is the capital of France?"},
        {"cachePoint": {"type": "default"}},
    ]
    assert body["inferenceConfig"] == {
        "maxTokens": 300,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }


async def test_an_arn_is_url_encoded_and_signed_as_sent(sim: SimulatedServer) -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sim-v1:0"
    await bedrock(sim, model_id=arn).complete(Request("hi"))
    (sent,) = sim.requests("bedrock")
    assert sent["path"] == f"/bedrock/model/{arn}/converse"  # decoded by the server


async def test_tool_calls_both_ways_and_tool_config(sim: SimulatedServer) -> None:
    weather = Tool("get_weather", "Weather in a city", {"type": "object", "properties": {}})
    call = {"name": "get_weather", "arguments": {"city": "Paris"}}
    sim.script("bedrock", [Fault.ok(tool_calls=[call]), Fault.ok(tool_calls=[call])])
    provider = bedrock(sim, cache_points=("tools",))
    request = Request("Weather in Paris?", tools=[weather], tool_choice="required")
    response = await provider.complete(request)
    assert [(c.name, dict(c.arguments)) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    _, final = await streamed(provider, request)
    assert [(c.name, dict(c.arguments)) for c in final.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    config = sim.requests("bedrock")[0]["body"]["toolConfig"]
    assert config["toolChoice"] == {"any": {}}
    assert config["tools"][0]["toolSpec"]["inputSchema"] == {"json": dict(weather.parameters)}
    assert config["tools"][-1] == {"cachePoint": {"type": "default"}}
    # The results go back as toolResult blocks of one user turn, after the toolUse turn.
    made = ToolCall("tooluse_1", "get_weather", {"city": "Paris"})
    history = [
        Message("user", "Weather in Paris?"),
        Message("assistant", "", tool_calls=(made,)),
        Message("tool", "18 C", tool_call_id="tooluse_1"),
    ]
    await provider.complete(Request(messages=history, tools=[weather]))
    turns = sim.requests("bedrock")[-1]["body"]["messages"]
    assert turns[1]["content"] == [
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}
    ]
    assert turns[2] == {
        "role": "user",
        "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "18 C"}]}}],
    }


@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_structured_output_is_a_forced_tool(sim: SimulatedServer, mode: str) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    sim.script("bedrock", [Fault.ok('{"city": "Paris"}')])
    request = Request("Capital of France?", json_schema=schema, schema_name="capital")
    provider = bedrock(sim)
    if mode == "complete":
        response = await provider.complete(request)
    else:
        _, response = await streamed(provider, request)
    assert json.loads(response.text) == {"city": "Paris"}
    config = sim.requests("bedrock")[0]["body"]["toolConfig"]
    assert config["toolChoice"] == {"tool": {"name": "capital"}}


async def test_usage_counts_cache_reads_and_writes_and_costs(sim: SimulatedServer) -> None:
    reply = {
        "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
        "stopReason": "end_turn",
        "usage": {
            "inputTokens": 10,
            "outputTokens": 5,
            "cacheReadInputTokens": 100,
            "cacheWriteInputTokens": 1000,
        },
    }
    sim.script("bedrock", [Fault.status(200, body=reply)])
    response = await bedrock(sim, price=(1.0, 2.0)).complete(Request("hi"))
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1110, 5)
    assert response.cost_usd == pytest.approx((1110 * 1.0 + 5 * 2.0) / 1e6)


# -- errors, before and inside a stream ---------------------------------------------------

ERRORS = [
    (lambda: Fault.rate_limited(None), E.RateLimited),
    (Fault.overloaded, E.ServerError),
    (Fault.server_error, E.ServerError),
    (lambda: Fault.status(408), E.ProviderTimeout),
    (lambda: Fault.status(424), E.ServerError),
    (Fault.context_too_long, E.ContextWindowExceeded),
    (Fault.quota, E.QuotaExhausted),
    (lambda: Fault.auth(403), E.AuthenticationFailed),
    (Fault.model_not_found, E.ModelNotFound),
    (Fault.bad_request, E.InvalidRequest),
]


@pytest.mark.parametrize(("fault", "expected"), ERRORS)
async def test_an_exception_frame_after_200_is_the_same_error(
    sim: SimulatedServer, fault: Any, expected: type[E.ProviderError]
) -> None:
    sim.script("bedrock", [fault(), Fault.stream_error(fault(), after=2)])
    provider = bedrock(sim)
    with pytest.raises(E.ProviderError) as before:
        await provider.complete(Request("hi"))
    chunks: list[Any] = []
    with pytest.raises(E.ProviderError) as inside:
        async for item in provider.stream(Request("hi")):
            chunks.append(item)
    assert type(before.value) is expected and type(inside.value) is expected
    assert len([c for c in chunks if c]) == 2  # the text before the exception was delivered
    assert sim.count("bedrock") == 2


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"),
    [
        (
            429,
            {"x-amzn-ErrorType": "ThrottlingException:http://x/"},
            {"message": "Too many requests, please wait before trying again. Try again in 3s"},
            E.RateLimited,
        ),
        (
            400,
            {},
            {
                "__type": "com.amazon#ValidationException",
                "message": "Input is too long for requested model.",
            },
            E.ContextWindowExceeded,
        ),
        (
            400,
            {},
            {"__type": "ValidationException", "message": "too many input tokens"},
            E.ContextWindowExceeded,
        ),
        (
            400,
            {},
            {
                "__type": "ValidationException",
                "message": "The provided model identifier is invalid.",
            },
            E.ModelNotFound,
        ),
        (
            400,
            {},
            {
                "__type": "ValidationException",
                "message": "Invocation of model ID x with on-demand throughput isn't supported.",
            },
            E.ModelNotFound,
        ),
        (
            400,
            {},
            {
                "__type": "ValidationException",
                "message": "The model is not available in this region.",
            },
            E.ModelNotFound,
        ),
        (
            400,
            {},
            {"__type": "ValidationException", "message": "Malformed input request"},
            E.InvalidRequest,
        ),
        (
            403,
            {"x-amzn-ErrorType": "AccessDeniedException"},
            {"message": "You don't have access to the model with the specified model ID."},
            E.AuthenticationFailed,
        ),
        (
            404,
            {"x-amzn-ErrorType": "ResourceNotFoundException"},
            {"message": "Model not found"},
            E.ModelNotFound,
        ),
        (
            429,
            {"x-amzn-ErrorType": "ModelNotReadyException"},
            {"message": "Model is loading"},
            E.ServerError,
        ),
        (
            503,
            {"x-amzn-ErrorType": "ServiceUnavailableException"},
            {"message": "unavailable"},
            E.ServerError,
        ),
        (
            408,
            {"x-amzn-ErrorType": "ModelTimeoutException"},
            {"message": "timed out"},
            E.ProviderTimeout,
        ),
        (
            424,
            {"x-amzn-ErrorType": "ModelErrorException"},
            {"message": "model failed"},
            E.ServerError,
        ),
        (
            400,
            {"x-amzn-ErrorType": "ServiceQuotaExceededException"},
            {"message": "quota"},
            E.QuotaExhausted,
        ),
        (
            403,
            {"x-amzn-ErrorType": "InvalidSignatureException"},
            {"message": "bad"},
            E.AuthenticationFailed,
        ),
    ],
)
def test_bedrock_error_types(
    status: int, headers: dict[str, str], body: Any, expected: type[E.ProviderError]
) -> None:
    from providers.bedrock.errors import map_bedrock_error

    lower = {k.lower(): v for k, v in headers.items()}
    err = map_bedrock_error(status, lower, body, provider="b")
    assert type(err) is expected, err
    if isinstance(err, E.RateLimited):
        assert err.retry_after == 3.0  # the message's hint, with no Retry-After header


async def test_a_throttled_region_falls_over_to_the_next_region(sim: SimulatedServer) -> None:
    async with SimulatedServer() as west_sim:
        sim.script("bedrock", [Fault.rate_limited(30), Fault.status(404)])
        east, west = bedrock(sim, name="east"), bedrock(west_sim, name="west")
        result = await FallbackAgent([east, west], max_retries=0).run("hi")
        assert result.handled_by == "west"
        assert isinstance(result.attempts[0].error, E.RateLimited)


async def test_spans_name_the_platform_and_the_region(
    sim: SimulatedServer,
    otel: Otel,  # noqa: F811
) -> None:
    await FallbackAgent([bedrock(sim, region="eu-west-1")]).run("hi")
    (span,) = otel.attempt_spans()
    assert span.attributes is not None
    assert span.attributes["gen_ai.provider.name"] == "aws.bedrock"
    assert span.attributes["cloud.region"] == "eu-west-1"


# -- signatures and secrets ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["complete", "stream"])
async def test_a_wrong_secret_gets_aws_403_and_is_not_counted(
    sim: SimulatedServer, mode: str
) -> None:
    provider = bedrock(sim, credentials=keys("not-the-secret"))
    with pytest.raises(E.AuthenticationFailed) as info:
        if mode == "complete":
            await provider.complete(Request("hi"))
        else:
            await streamed(provider, Request("hi"))
    assert info.value.status == 403
    assert "signature we calculated does not match" in str(info.value)
    assert sim.count("bedrock") == 0


async def test_no_secret_token_or_signature_in_any_message(
    sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret, token = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYsecret", "FwoGZXIvYXdzEJr-session-token-0123"
    monkeypatch.setattr(sim, "aws_secret_access_key", secret)
    echo = {"message": f"denied: secret {secret} token {token}"}
    sim.script("bedrock", [Fault.status(403, body=echo)])
    provider = bedrock(sim, credentials=keys(secret, token), name="east")
    with capture_events() as events, pytest.raises(E.FallbackError) as info:
        await FallbackAgent([provider], max_retries=0).run("hi")
    (sent,) = sim.requests("bedrock")
    assert sent["headers"]["x-amz-security-token"] == token  # it was sent, and signed
    signature = sent["headers"]["authorization"].rpartition("Signature=")[2]
    err = info.value.attempts[0].error
    assert isinstance(err, E.AuthenticationFailed)
    shown = [str(info.value), repr(info.value), str(err), repr(err), repr(provider)]
    shown += [repr(err.__cause__), repr(err.__context__), str(events)]
    for text in shown:
        assert secret not in text and token not in text and signature not in text


async def test_credentials_resolved_once_off_the_loop_and_refreshed_before_expiry(
    sim: SimulatedServer,
) -> None:
    now = [1_000_000.0]

    class Refreshable:
        def __init__(self) -> None:
            self.calls: list[int] = []

        @property
        def _expiry_time(self) -> datetime:
            return datetime.fromtimestamp(now[0] + 3600, tz=UTC)

        def get_frozen_credentials(self) -> Any:
            self.calls.append(threading.get_ident())
            return botocore.credentials.ReadOnlyCredentials(
                SIM_AWS_KEY_ID, SIM_AWS_SECRET, f"token-{len(self.calls)}"
            )

    source = Refreshable()
    provider = bedrock(sim, credentials=source)
    provider._signer._token._clock = lambda: now[0]
    await asyncio.gather(*(provider.complete(Request("hi")) for _ in range(100)))
    assert len(source.calls) == 1 and threading.get_ident() not in source.calls
    assert {r["headers"]["x-amz-security-token"] for r in sim.requests("bedrock")} == {"token-1"}
    await kept_then_refreshed(provider, now, 900, lambda: len(source.calls))  # 15 minutes
    assert sim.requests("bedrock")[-1]["headers"]["x-amz-security-token"] == "token-2"


async def test_credentials_from_the_environment_chain(
    sim: SimulatedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in sim.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    provider = BedrockConverse(MODEL)  # region, endpoint and keys from the environment
    assert provider.base_url == sim.bedrock_url and provider.region == "us-east-1"
    response = await provider.complete(Request("hello"))
    assert response.text == "sim-bedrock: hello"


def test_missing_credentials_are_authentication_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
    provider = BedrockConverse(MODEL, region="eu-west-1", endpoint_url="http://127.0.0.1:9")
    with pytest.raises(E.AuthenticationFailed, match="AWS credentials"):
        asyncio.run(provider.complete(Request("hi")))


def test_urls_names_regions_and_prices() -> None:
    east = BedrockConverse("anthropic.claude-sonnet-4-6", region="us-east-1", credentials=keys())
    west = BedrockConverse(MODEL, region="us-west-2", credentials=keys())
    assert east.base_url == "https://bedrock-runtime.us-east-1.amazonaws.com"
    assert (east.name, west.name) == (
        "bedrock:anthropic.claude-sonnet-4-6@us-east-1",
        f"bedrock:{MODEL}@us-west-2",
    )
    assert east.gen_ai_provider_name == "aws.bedrock"
    assert east.price is not None and east.context_window == 1_000_000
    assert west.price == east.price  # an inference profile's id, versioned
    for prefix_ in ("eu.", "apac.", "global."):
        BedrockConverse(
            prefix_ + "anthropic.claude-sonnet-4-6", region="eu-west-1", credentials=keys()
        )
    with pytest.raises(ValueError, match="region"):
        BedrockConverse(MODEL, region="Mars", credentials=keys())
    with pytest.raises(ValueError, match="api_key"):
        BedrockConverse(MODEL, region="us-east-1", api_key="k")  # type: ignore[call-arg]


def test_without_botocore_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore.auth", None)  # as if not installed
    with pytest.raises(E.NotInstalled, match=r"pip install 'failover-orchestrator\[aws\]'"):
        BedrockConverse(MODEL, region="us-east-1")


def test_import_providers_and_failover_help_never_import_botocore() -> None:
    assert after_cli_help("providers.BedrockConverse", '"botocore" in sys.modules') == "False"


# -- the chain file's type: bedrock ---------------------------------------------------------


def test_chain_file_bedrock(sim: SimulatedServer, tmp_path: Path) -> None:
    from orchestrator.config import load_config

    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n"
        "  east:\n"
        "    type: bedrock\n"
        f"    model: {MODEL}\n"
        "    region: us-east-1\n"
        "    endpoint_url: ${SIM}\n"
        "agents:\n  claude:\n    providers: [east]\n"
    )
    env = {"SIM": sim.bedrock_url}
    agent = load_config(path, environ=env).agents["claude"]
    provider = agent.children[0]
    assert isinstance(provider, BedrockConverse) and provider.region == "us-east-1"
    provider._signer._source = keys()
    result = asyncio.run(agent.run("hi"))
    assert result.handled_by == "east"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("    type: bedrock\n    region: us-east-1\n", "model"),
        ("    type: bedrock\n    model: m\n    api_key: ${K}\n", "no api_key"),
        ("    type: bedrock\n    model: m\n    base_url: https://x.example\n", "endpoint_url"),
    ],
)
def test_chain_file_bedrock_errors_name_line_and_field(
    tmp_path: Path, entry: str, says: str
) -> None:
    from orchestrator.config import ConfigError, load_config

    path = tmp_path / "chain.yaml"
    path.write_text(f"providers:\n  east:\n{entry}agents:\n  c:\n    providers: [east]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"K": "key"})
    assert says in str(info.value) and str(info.value).startswith(f"{path}:")


# -- Anthropic (529) -> Bedrock us-east-1 (throttled) -> us-west-2, health in Redis -----------


@pytest.mark.redis
async def test_three_children_100_in_flight_health_shared_through_redis(
    redis_server: Any,  # noqa: F811
    prefix: str,  # noqa: F811
) -> None:
    from orchestrator.health import RedisHealthStore

    async with SimulatedServer() as east_sim, SimulatedServer() as west_sim:
        east_sim.set_default("anthropic", Fault.overloaded())
        east_sim.set_default("bedrock", Fault.rate_limited(5))
        direct = AnthropicMessages(
            "claude-sonnet-4-6", base_url=east_sim.anthropic_url, api_key="sk-ant-0123456789"
        )
        east = bedrock(east_sim, region="us-east-1", name="us-east-1")
        west = bedrock(west_sim, region="us-west-2", name="us-west-2")
        store = RedisHealthStore(redis_server.url, key_prefix=prefix)
        try:
            agent = FallbackAgent([direct, east, west], max_retries=0, health=store)
            results = await asyncio.gather(*(agent.run(f"question {i}") for i in range(100)))
        finally:
            await store.aclose()
        assert {r.handled_by for r in results} == {"us-west-2"}
        assert west_sim.count("bedrock") == 100
        first = {type(r.attempts[0].error) for r in results}
        assert E.Overloaded in first and first <= {E.Overloaded, E.CircuitOpen}
        assert east_sim.count("anthropic") <= 100 and east_sim.count("bedrock") <= 100


def test_a_profile_from_the_shared_files_gives_keys_and_region(
    sim: SimulatedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    config, credentials = tmp_path / "config", tmp_path / "credentials"
    config.write_text("[profile bench]\nregion = eu-central-1\n")
    credentials.write_text(
        f"[bench]\naws_access_key_id = {SIM_AWS_KEY_ID}\naws_secret_access_key = {SIM_AWS_SECRET}\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_ENDPOINT_URL", sim.bedrock_url)  # the general variable, too
    provider = BedrockConverse(MODEL, profile="bench")
    assert provider.region == "eu-central-1" and provider.base_url == sim.bedrock_url
    assert asyncio.run(provider.complete(Request("hi"))).text == "sim-bedrock: hi"
    (sent,) = sim.requests("bedrock")
    assert "/eu-central-1/bedrock/aws4_request" in sent["headers"]["authorization"]

"""One verdict for every time argument: each input x each entry point that takes seconds.

Before one ``seconds`` rule existed, five validators disagreed: ``CLIAgent(timeout="5")``
was 5.0 and ``timeout=True`` was 1.0, ``OpenAIChat`` refused ``"5"`` (as a ValueError)
but took ``inf``, and ``CircuitBreaker`` refused ``inf``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from orchestrator import FallbackAgent, RetryPolicy
from orchestrator.function import FunctionProvider
from orchestrator.health import CircuitBreaker, RedisHealthStore, RetryBudget
from orchestrator.units import seconds, seconds_or_none
from providers.anthropic import AnthropicMessages
from providers.cli.agents import CLIAgent
from providers.gemini.client import GeminiGenerate
from providers.generic_http import HTTPFallback
from providers.openai import OpenAIChat

NAN, INF = float("nan"), float("inf")


async def _ok(request: Any) -> str:
    return "ok"


def _run_timeout(value: Any) -> float | None:
    agent = FallbackAgent([FunctionProvider(_ok, name="f")], max_retries=0)
    result = asyncio.run(agent.run("x", timeout=value))
    assert result.text == "ok"
    return agent.timeout if value is None else seconds(value, "timeout")


# (entry point, build it with the value and return what it kept, zero allowed, what None gives:
# the TypeError of a required argument, None for "no limit", or the default it stands for)
ENTRY_POINTS: list[tuple[str, Callable[[Any], Any], bool, Any]] = [
    ("RetryPolicy.delay", lambda v: RetryPolicy(delay=v).delay, True, TypeError),
    ("RetryPolicy.max_delay", lambda v: RetryPolicy(max_delay=v).max_delay, True, TypeError),
    (
        "RetryPolicy.max_retry_after",
        lambda v: RetryPolicy(max_retry_after=v).max_retry_after,
        True,
        TypeError,
    ),
    (
        "FallbackAgent.retry_delay",
        lambda v: FallbackAgent([P], retry_delay=v).policy.delay,
        True,
        1.0,
    ),
    ("FallbackAgent.timeout", lambda v: FallbackAgent([P], timeout=v).timeout, False, None),
    (
        "FallbackAgent.attempt_timeout",
        lambda v: FallbackAgent([P], attempt_timeout=v).attempt_timeout,
        False,
        None,
    ),
    ("FallbackAgent.run(timeout=)", _run_timeout, False, None),
    ("CircuitBreaker.window", lambda v: CircuitBreaker(window=v).window, False, TypeError),
    ("CircuitBreaker.cooldown", lambda v: CircuitBreaker(cooldown=v).cooldown, False, TypeError),
    (
        "CircuitBreaker.max_cooldown",
        lambda v: CircuitBreaker(cooldown=0.001, max_cooldown=v).max_cooldown,
        False,
        TypeError,
    ),
    ("RetryBudget.window", lambda v: RetryBudget(window=v).window, False, TypeError),
    (
        "RedisHealthStore.sync_interval",
        lambda v: RedisHealthStore("redis://127.0.0.1:1", sync_interval=v).sync_interval,
        False,
        TypeError,
    ),
    (
        "RedisHealthStore.timeout",
        lambda v: RedisHealthStore("redis://127.0.0.1:1", timeout=v).timeout,
        False,
        TypeError,
    ),
    ("OpenAIChat.timeout", lambda v: OpenAIChat("m", timeout=v).timeout, False, TypeError),
    (
        "AnthropicMessages.timeout",
        lambda v: AnthropicMessages("m", timeout=v).timeout,
        False,
        TypeError,
    ),
    ("GeminiGenerate.timeout", lambda v: GeminiGenerate("m", timeout=v).timeout, False, TypeError),
    (
        "HTTPFallback.timeout",
        lambda v: HTTPFallback("https://hooks.example.com/x", timeout=v).timeout,
        False,
        TypeError,
    ),
    ("CLIAgent.timeout", lambda v: CLIAgent(["x"], timeout=v).timeout, False, TypeError),
    ("CLIAgent.idle_timeout", lambda v: CLIAgent(["x"], idle_timeout=v).idle_timeout, False, None),
    ("CLIAgent.kill_grace", lambda v: CLIAgent(["x"], kill_grace=v).kill_grace, False, TypeError),
]

P = FunctionProvider(_ok, name="p")

# (input, what it normalizes to, or the exception it raises)
INPUTS: list[tuple[str, Any, Any]] = [
    ("int", 5, 5.0),
    ("float", 2.5, 2.5),
    ("timedelta", timedelta(milliseconds=1500), 1.5),
    ("zero", 0, "zero"),
    ("zero-timedelta", timedelta(0), "zero"),
    ("negative", -1, ValueError),
    ("negative-timedelta", timedelta(seconds=-1), ValueError),
    ("nan", NAN, ValueError),
    ("inf", INF, ValueError),
    ("-inf", -INF, ValueError),
    ("huge-int", 10**400, ValueError),
    ("bool", True, TypeError),
    ("str", "5", TypeError),
    ("list", [5], TypeError),
    ("none", None, "none"),
]


@pytest.mark.parametrize(
    ("point", "build", "zero_ok", "none"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS]
)
@pytest.mark.parametrize(("label", "value", "verdict"), INPUTS, ids=[i[0] for i in INPUTS])
def test_every_entry_point_gives_the_same_verdict(
    point: str,
    build: Callable[[Any], Any],
    zero_ok: bool,
    none: Any,
    label: str,
    value: Any,
    verdict: Any,
) -> None:
    if verdict == "zero":
        verdict = 0.0 if zero_ok else ValueError
    if verdict == "none":
        verdict = none
    if isinstance(verdict, type):
        with pytest.raises(verdict) as info:
            build(value)
        message = str(info.value)
        name = point.split(".")[-1]
        assert ("timeout" if name.startswith("run") else name) in message  # names the argument
        assert repr(value)[:20] in message  # shows the value given
        assert ("timedelta" if verdict is TypeError else "seconds") in message  # and the rule
    elif verdict is None:
        assert build(value) is None
    else:
        kept = build(value)
        assert kept == verdict and type(kept) is float


def test_seconds_messages_name_field_value_and_rule() -> None:
    with pytest.raises(
        ValueError, match=r"^OpenAIChat\.timeout=0 must be a finite number of seconds > 0$"
    ):
        seconds(0, "OpenAIChat.timeout")
    with pytest.raises(
        TypeError, match=r"^x='5' must be seconds: a number or a datetime\.timedelta, not str$"
    ):
        seconds("5", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"x=-1 must be a finite number of seconds >= 0 \(or None"):
        seconds_or_none(-1, "x", allow_zero=True)
    assert seconds_or_none(None, "x") is None
    assert seconds(timedelta(minutes=2), "x") == 120.0


@pytest.mark.parametrize(
    ("where", "key", "path"),
    [
        ("provider", "timeout", ("providers", "a", "timeout")),
        ("agent", "timeout", ("agents", "main", "timeout")),
        ("agent", "retry_delay", ("agents", "main", "retry_delay")),
    ],
)
@pytest.mark.parametrize("value", [".inf", ".nan", "-1"])
def test_chain_file_refuses_the_same_values_at_their_key(
    tmp_path: Any, where: str, key: str, path: tuple[str, ...], value: str
) -> None:
    from orchestrator.config import ConfigError, load_config

    provider_extra = f"\n    {key}: {value}" if where == "provider" else ""
    agent_extra = f"\n    {key}: {value}" if where == "agent" else ""
    chain = tmp_path / "chain.yaml"
    chain.write_text(
        f"providers:\n  a:\n    type: openai\n    model: m{provider_extra}\n"
        f"agents:\n  main:\n    providers: [a]{agent_extra}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(str(chain))
    assert [p.path for p in info.value.problems] == [path]

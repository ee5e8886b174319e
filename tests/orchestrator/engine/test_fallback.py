"""FallbackAgent semantics: order, retries, taxonomy, hooks, results (all on fake time)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from orchestrator import Attempt, FallbackAgent, FallbackError, Request, Response, RetryPolicy, only
from orchestrator.errors import (
    AuthenticationFailed,
    ContextWindowExceeded,
    GuardrailTriggered,
    InvalidOutput,
    InvalidRequest,
    NotInstalled,
    Overloaded,
    RateLimited,
    ServerError,
    TransientError,
)
from orchestrator.testing import FakeClock
from providers import FunctionProvider
from tests.conftest import Scripted


async def test_first_success_wins_and_later_children_are_not_called(clock: FakeClock) -> None:
    a, b, c = Scripted("a", ["A"]), Scripted("b", ["B"]), Scripted("c", ["C"])
    result = await FallbackAgent([a, b, c], clock=clock).run("hi")
    assert (result.text, result.handled_by) == ("A", "a")
    assert (a.calls, b.calls, c.calls) == (1, 0, 0)
    assert [x.agent for x in result.attempts] == ["a"]
    assert result.attempts[-1].error is None
    assert clock.sleeps == []


async def test_children_are_tried_in_order(clock: FakeClock) -> None:
    order: list[str] = []

    def make(name: str, ok: bool) -> FunctionProvider:
        async def fn(req: Request) -> str:
            order.append(name)
            if not ok:
                raise AuthenticationFailed("no", provider=name)
            return name

        return FunctionProvider(fn, name=name)

    agent = FallbackAgent([make("x", False), make("y", False), make("z", True)], clock=clock)
    result = await agent.run("hi")
    assert order == ["x", "y", "z"]
    assert result.handled_by == "z"


async def test_documented_exponential_schedule_then_fall_over(clock: FakeClock) -> None:
    a = Scripted("a", [ServerError("down", status=503)])
    b = Scripted("b", ["ok"])
    agent = FallbackAgent(
        [a, b], max_retries=3, retry_strategy="exponential", retry_delay=2.0, clock=clock
    )
    result = await agent.run("hi")
    assert clock.sleeps == [2.0, 4.0, 8.0]  # and no wait before b
    assert a.calls == 4 and b.calls == 1
    assert [(x.agent, x.attempt_number) for x in result.attempts] == [
        ("a", 1),
        ("a", 2),
        ("a", 3),
        ("a", 4),
        ("b", 1),
    ]


@pytest.mark.parametrize(
    ("strategy", "delay", "expected"),
    [
        ("linear", 1.5, [1.5, 1.5, 1.5]),
        ("none", 3.0, []),
        ("exponential", 1.0, [1.0, 2.0, 4.0]),
    ],
)
async def test_strategies(
    clock: FakeClock, strategy: str, delay: float, expected: list[float]
) -> None:
    a = Scripted("a", [TimeoutError("slow")])
    # A timeout retried at once (not last, the default): the schedule under test.
    policy = RetryPolicy(max_retries=3, strategy=strategy, delay=delay, retry_timeouts_last=False)  # type: ignore[arg-type]
    agent = FallbackAgent([a, Scripted("b", ["ok"])], policy=policy, clock=clock)
    await agent.run("hi")
    assert clock.sleeps == expected


async def test_max_delay_caps_the_schedule(clock: FakeClock) -> None:
    agent = FallbackAgent(
        [Scripted("a", [RuntimeError("x")]), Scripted("b", ["ok"])],
        policy=RetryPolicy(max_retries=5, delay=10.0, max_delay=25.0),
        hedge_after=None,  # the whole schedule: no hedge cutting into the backoff
        clock=clock,
    )
    await agent.run("hi")
    assert clock.sleeps == [10.0, 20.0, 25.0, 25.0, 25.0]


async def test_full_jitter_draws_within_the_delay_from_injected_rng(clock: FakeClock) -> None:
    import random

    agent = FallbackAgent(
        [Scripted("a", [RuntimeError("x")]), Scripted("b", ["ok"])],
        max_retries=3,
        retry_delay=1.0,
        jitter="full",
        clock=clock,
        rng=random.Random(7),
    )
    await agent.run("hi")
    expected_rng = random.Random(7)
    assert clock.sleeps == [expected_rng.uniform(0, d) for d in (1.0, 2.0, 4.0)]


async def test_timedelta_delay(clock: FakeClock) -> None:
    from datetime import timedelta

    agent = FallbackAgent(
        [Scripted("a", [RuntimeError("x")]), Scripted("b", ["ok"])],
        max_retries=1,
        retry_delay=timedelta(milliseconds=250),
        clock=clock,
    )
    await agent.run("hi")
    assert clock.sleeps == [0.25]


async def test_per_child_policy_overrides(clock: FakeClock) -> None:
    a = Scripted("a", [ServerError("x")])
    b = Scripted("b", [ServerError("x")])
    c = Scripted("c", [ServerError("x")])
    c.retry_policy = RetryPolicy(max_retries=1, strategy="linear", delay=7.0)  # type: ignore[attr-defined]
    agent = FallbackAgent(
        [a, b, c],
        policy=RetryPolicy(max_retries=2, strategy="none"),
        policies={
            "a": RetryPolicy(max_retries=5, strategy="none"),
            "b": RetryPolicy(max_retries=0),
        },
        clock=clock,
    )
    with pytest.raises(FallbackError):
        await agent.run("hi")
    assert (a.calls, b.calls, c.calls) == (6, 1, 2)
    assert clock.sleeps == [7.0]


async def test_unusable_errors_fall_over_at_once_without_retry(clock: FakeClock) -> None:
    for err, reason in (
        (AuthenticationFailed("k"), "unusable"),
        (ContextWindowExceeded("big"), "context_window"),
        (NotInstalled("cli"), "unusable"),
    ):
        a, b = Scripted("a", [err]), Scripted("b", ["ok"])
        result = await FallbackAgent([a, b], max_retries=3, clock=clock).run("hi")
        assert a.calls == 1 and result.handled_by == "b"
        assert result.attempts[0].reason == reason
    assert clock.sleeps == []


async def test_invalid_output_retried_per_schema_retries_then_falls_over(clock: FakeClock) -> None:
    a, b = Scripted("a", [InvalidOutput("bad json")]), Scripted("b", ["ok"])
    result = await FallbackAgent([a, b], max_retries=3, retry_strategy="none", clock=clock).run("x")
    assert a.calls == 2  # schema_retries=1 by default
    assert result.attempts[1].note == "schema_retries spent"
    a2 = Scripted("a", [InvalidOutput("bad json")])
    await FallbackAgent(
        [a2, Scripted("b", ["ok"])],
        max_retries=3,
        retry_strategy="none",
        schema_retries=3,
        clock=clock,
    ).run("x")
    assert a2.calls == 4


@pytest.mark.parametrize("err", [GuardrailTriggered("refused"), InvalidRequest("bad", status=400)])
async def test_terminal_errors_reraise_as_is_without_hooks(
    clock: FakeClock, err: Exception
) -> None:
    fired: list[str] = []
    a, b = Scripted("a", [err]), Scripted("b", ["ok"])
    agent = FallbackAgent(
        [a, b],
        max_retries=3,
        clock=clock,
        on_fallback=lambda *x: fired.append("fallback"),
        on_all_failed=lambda e: fired.append("all"),
        on_retry=lambda *x: fired.append("retry"),
    )
    from orchestrator.testing import capture_events

    with capture_events() as events, pytest.raises(type(err)) as info:
        await agent.run("hi")
    assert info.value is err
    assert (a.calls, b.calls, fired) == (1, 0, [])
    assert any(e["event"] == "terminal_error" and e["child"] == "a" for e in events)


async def test_escalate_on_guardrail_opt_in(clock: FakeClock) -> None:
    a, b = Scripted("a", [GuardrailTriggered("refused")]), Scripted("b", ["ok"])
    result = await FallbackAgent([a, b], escalate_on_guardrail=True, clock=clock).run("hi")
    assert result.handled_by == "b" and a.calls == 1


async def test_rate_limited_waits_exactly_retry_after_even_with_strategy_none(
    clock: FakeClock,
) -> None:
    a = Scripted("a", [RateLimited("slow down", retry_after=7.5), "late ok"])
    result = await FallbackAgent([a], retry_strategy="none", max_retries=2, clock=clock).run("x")
    assert clock.sleeps == [7.5]
    assert result.text == "late ok"


async def test_rate_limited_longer_than_max_retry_after_falls_over_at_once(
    clock: FakeClock,
) -> None:
    a = Scripted("a", [RateLimited("come back later", retry_after=120)])
    b = Scripted("b", ["ok"])
    result = await FallbackAgent([a, b], max_retries=3, clock=clock).run("x")
    assert a.calls == 1 and clock.sleeps == []
    assert result.attempts[0].reason == "rate_limited"
    pol = RetryPolicy(max_retries=1, max_retry_after=200)
    a2 = Scripted("a", [RateLimited("later", retry_after=120), "ok"])
    await FallbackAgent([a2], policy=pol, clock=clock).run("x")
    assert clock.sleeps == [120.0]


async def test_plain_exceptions_are_transient_and_kept_as_is(clock: FakeClock) -> None:
    boom, slow = RuntimeError("boom"), TimeoutError("slow")
    seen: dict[str, Any] = {}

    async def a(req: Request) -> str:
        raise boom

    def b(req: Request) -> str:
        raise slow

    agent = FallbackAgent(
        [FunctionProvider(a), FunctionProvider(b)],
        max_retries=1,
        retry_strategy="none",
        clock=clock,
        on_fallback=lambda f, t, e: seen.setdefault("fallback", e),
        on_all_failed=lambda errors: seen.setdefault("all", errors),
    )
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert seen["fallback"] is boom
    assert seen["all"] == [boom, boom, slow, slow]
    assert all(x is y for x, y in zip(seen["all"], [boom, boom, slow, slow], strict=True))
    assert [a.error for a in info.value.attempts] == [boom, boom, slow, slow]
    assert info.value.attempts[0].error is boom


async def test_only_retry_on_and_fallback_on_replace_the_defaults(clock: FakeClock) -> None:
    class Flaky(Exception):
        pass

    # retry_on=only(...): only Flaky is retried; a RuntimeError falls over at once.
    a = Scripted("a", [RuntimeError("no retry")])
    await FallbackAgent(
        [a, Scripted("b", ["ok"])], retry_on=only(Flaky), max_retries=3, clock=clock
    ).run("x")
    assert a.calls == 1
    # fallback_on=only(predicate): a ValueError that does not match is raised as is.
    a2 = Scripted("a", [ValueError("stop here")])
    with pytest.raises(ValueError, match="stop here"):
        await FallbackAgent(
            [a2, Scripted("b", ["ok"])],
            max_retries=0,
            clock=clock,
            fallback_on=only(lambda e: isinstance(e, TransientError)),
        ).run("x")
    # only(...) of several types
    a3 = Scripted("a", [Flaky("x")])
    result = await FallbackAgent(
        [a3, Scripted("b", ["ok"])],
        retry_on=only(Flaky),
        fallback_on=only(Flaky, TransientError),
        max_retries=2,
        retry_strategy="none",
        clock=clock,
    ).run("x")
    assert a3.calls == 3 and result.handled_by == "b"


async def test_hooks_fire_in_order_with_the_right_arguments(clock: FakeClock) -> None:
    log: list[tuple[Any, ...]] = []
    e1, e2, e3 = ServerError("a down"), AuthenticationFailed("b key"), Overloaded("c busy")

    async def on_fallback(frm: str, to: str, err: BaseException) -> None:
        log.append(("fallback", frm, to, err))

    agent = FallbackAgent(
        [Scripted("a", [e1]), Scripted("b", [e2]), Scripted("c", [e3])],
        max_retries=1,
        retry_delay=0.5,
        clock=clock,
        on_fallback=on_fallback,
        on_retry=lambda name, n, err, delay: log.append(("retry", name, n, err, delay)),
        on_all_failed=lambda errors: log.append(("all", errors)),
    )
    with pytest.raises(FallbackError):
        await agent.run("x")
    assert log == [
        ("retry", "a", 1, e1, 0.5),
        ("fallback", "a", "b", e1),
        ("fallback", "b", "c", e2),
        ("retry", "c", 1, e3, 0.5),
        ("all", [e1, e1, e2, e3, e3]),
    ]


@pytest.mark.parametrize("hook", ["on_fallback", "on_retry", "on_all_failed"])
async def test_a_raising_observational_hook_never_stops_the_run(
    clock: FakeClock, hook: str
) -> None:
    bug = KeyError("hook bug")

    def bad(*args: Any) -> None:
        raise bug

    a, b = Scripted("a", [ServerError("x")]), Scripted("b", [ServerError("y")])
    agent = FallbackAgent([a, b], max_retries=1, clock=clock, **{hook: bad})
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert a.calls == 2 and b.calls == 2  # the whole chain ran, retries and hand-over included
    assert any(f"{hook} raised KeyError" in (x.note or "") for x in info.value.attempts)


async def test_fallback_error_content_and_pickling(clock: FakeClock) -> None:
    agent = FallbackAgent(
        [
            Scripted("codex", [ServerError("boom", status=503)]),
            Scripted("claude", [AuthenticationFailed("bad key", status=401)]),
        ],
        max_retries=1,
        retry_strategy="none",
        clock=clock,
    )
    with pytest.raises(FallbackError) as info:
        await agent.run("SECRET PROMPT TEXT")
    err = info.value
    assert str(err).startswith("All agents failed after 3 attempts")
    assert "codex: ServerError" in str(err) and "claude: AuthenticationFailed" in str(err)
    assert "SECRET PROMPT TEXT" not in str(err) and "SECRET PROMPT TEXT" not in repr(err.attempts)
    assert [(a.agent, a.attempt_number) for a in err.attempts] == [
        ("codex", 1),
        ("codex", 2),
        ("claude", 1),
    ]
    assert all(isinstance(a, Attempt) and a.duration >= 0 for a in err.attempts)
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err)
    assert [type(a.error) for a in back.attempts] == [
        ServerError,
        ServerError,
        AuthenticationFailed,
    ]
    assert back.attempts[0].error.status == 503  # type: ignore[union-attr]


async def test_result_fields_and_default_names(clock: FakeClock) -> None:
    async def call_codex(req: Request) -> str:
        raise RuntimeError("x")

    async def call_claude(req: Request) -> Response:
        return Response("reviewed", model="claude-x")

    agent = FallbackAgent(
        [FunctionProvider(call_codex), FunctionProvider(call_claude)], max_retries=0, clock=clock
    )
    clock.advance(5)
    result = await agent.run(Request("review"))
    assert result.text == "reviewed" and result.handled_by == "call_claude"
    assert result.model == "claude-x"
    assert [a.agent for a in result.attempts] == ["call_codex", "call_claude"]
    assert result.attempts[-1].error is None and result.attempts[0].error is not None
    assert result.latency == 0.0  # fake time did not move during the run
    assert result.attempts[0].started_at == clock.wall()
    named = FallbackAgent([FunctionProvider(call_claude, name="claude")], name="review")
    assert named.name == "review" and named.children[0].name == "claude"


def test_sync_function_provider_and_run_sync() -> None:
    def echo(req: Request) -> str:
        return req.prompt.upper()

    agent = FallbackAgent([FunctionProvider(echo)])
    assert agent.run_sync("abc").text == "ABC"
    assert agent.run_sync("def").text == "DEF"  # a second event loop works too


async def test_run_sync_inside_a_loop_is_a_clear_error() -> None:
    agent = FallbackAgent([FunctionProvider(lambda r: "x", name="x")])
    with pytest.raises(RuntimeError, match=r"await agent\.run"):
        agent.run_sync("abc")


async def test_function_returning_wrong_type_is_invalid_output(clock: FakeClock) -> None:
    agent = FallbackAgent(
        [FunctionProvider(lambda r: 42, name="bad", run_in_thread=False), Scripted("b", ["ok"])],
        max_retries=0,
        clock=clock,
    )
    result = await agent.run("x")
    assert isinstance(result.attempts[0].error, InvalidOutput)
    assert "int" in str(result.attempts[0].error)


async def test_nested_chains(clock: FakeClock) -> None:
    eu = FallbackAgent(
        [Scripted("eu-west", [ServerError("x")]), Scripted("eu-north", [ServerError("y")])],
        name="eu",
        max_retries=0,
        clock=clock,
    )
    us = FallbackAgent([Scripted("us-east", ["from us"])], name="us", clock=clock)
    fired: list[tuple[str, str]] = []
    outer = FallbackAgent(
        [eu, us],
        name="global",
        max_retries=3,
        clock=clock,
        on_fallback=lambda f, t, e: fired.append((f, t)),
    )
    result = await outer.run("x")
    assert result.handled_by == "us-east"
    assert [a.agent for a in result.attempts] == ["eu-west", "eu-north", "us-east"]
    assert fired == [("eu", "us")]
    assert clock.sleeps == []  # the inner chain's failure is not retried by the outer one


async def test_request_values_reach_providers(clock: FakeClock) -> None:
    a = Scripted("a", ["ok"])
    req = Request(messages=[{"role": "user", "content": "hello"}], system="be brief", max_tokens=5)
    await FallbackAgent([a], clock=clock).run(req)
    assert a.requests[0] is req
    await FallbackAgent([a], clock=clock).run("plain")
    assert a.requests[1].prompt == "plain"


async def test_sync_callable_returning_a_coroutine_is_awaited() -> None:
    async def model(req: Request) -> str:
        return "answer"

    agent = FallbackAgent([FunctionProvider(lambda r: model(r), name="lam")])
    assert (await agent.run("x")).text == "answer"


async def test_an_oversized_reply_falls_over_at_once_without_retries(clock: FakeClock) -> None:
    from orchestrator.errors import InvalidOutput, ResponseTooLarge

    big = Scripted("big", [ResponseTooLarge("reply over max_response_bytes", provider="big")])
    ok = Scripted("ok", ["fine"])
    agent = FallbackAgent(
        [big, ok], max_retries=3, retry_strategy="none", schema_retries=2, clock=clock
    )
    result = await agent.run("x")
    assert result.text == "fine" and result.handled_by == "ok"
    assert big.calls == 1, "an oversized reply is not asked for again"
    first = result.attempts[0]
    assert isinstance(first.error, ResponseTooLarge) and isinstance(first.error, InvalidOutput)
    assert first.reason == "invalid_output"


async def test_exhausted_nested_chain_hands_over_even_with_fallback_on(clock: FakeClock) -> None:
    inner = FallbackAgent(
        [Scripted("down", [ServerError("x")])], name="eu", max_retries=0, clock=clock
    )
    outer = FallbackAgent(
        [inner, Scripted("backup", ["ok"])], fallback_on=(ServerError,), max_retries=0, clock=clock
    )
    assert (await outer.run("x")).handled_by == "backup"


async def test_the_winning_replys_tool_calls_reach_the_result_through_nested_chains(
    clock: FakeClock,
) -> None:
    from orchestrator import Request, Response, Tool, ToolCall

    call = ToolCall("c1", "lookup", {"q": "x"})

    class Calls:
        name = "calls"

        async def complete(self, request: object) -> Response:
            return Response("", tool_calls=(call,))

    inner = FallbackAgent([Scripted("a", [AuthenticationFailed("k")]), Calls()], clock=clock)
    # The request offers the tool: a call of a tool not offered is InvalidOutput.
    result = await FallbackAgent([inner], clock=clock).run(Request("hi", tools=[Tool("lookup")]))
    assert result.tool_calls == (call,) and result.text == ""

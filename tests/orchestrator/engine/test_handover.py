"""before_fallback, Stop, best_effort, reasons, accept and structured output."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from orchestrator import REASONS, FallbackAgent, FallbackError, HookError, Request, Response, Stop
from orchestrator.errors import (
    AuthenticationFailed,
    InvalidOutput,
    Overloaded,
    RateLimited,
    Rejected,
    ServerError,
)
from orchestrator.testing import FakeClock
from tests.conftest import Scripted


async def test_before_fallback_redacts_a_copy_only(clock: FakeClock) -> None:
    a, b = Scripted("a", [ServerError("x")]), Scripted("b", ["ok"])
    seen: list[tuple[str, str]] = []
    original = Request("my email is bob@example.com", system="sys")

    def redact(req: Request, reason: str) -> Request:
        seen.append((req.prompt, reason))
        return req.replace(prompt=req.prompt.replace("bob@example.com", "[email]"))

    result = await FallbackAgent([a, b], max_retries=0, before_fallback=redact, clock=clock).run(
        original
    )
    assert a.requests[0].prompt == "my email is bob@example.com"
    assert b.requests[0].prompt == "my email is [email]"
    assert b.requests[0].system == "sys"
    assert original.prompt == "my email is bob@example.com"
    assert seen == [("my email is bob@example.com", "error")]
    assert result.handled_by == "b"


async def test_before_fallback_not_called_for_the_first_child(clock: FakeClock) -> None:
    calls: list[str] = []
    await FallbackAgent(
        [Scripted("a", ["ok"])], before_fallback=lambda r, why: calls.append(why) or r, clock=clock
    ).run("x")
    assert calls == []


async def test_before_fallback_stop_ends_the_run(clock: FakeClock) -> None:
    a, b = Scripted("a", [AuthenticationFailed("k")]), Scripted("b", ["never"])
    result = await FallbackAgent(
        [a, b], before_fallback=lambda r, why: Stop(text="kept local", reason="pii"), clock=clock
    ).run("x")
    assert b.calls == 0
    assert result.text == "kept local" and result.stopped == Stop("kept local", "pii")
    assert result.handled_by is None and len(result.attempts) == 1


async def test_before_fallback_bad_return_or_raise_is_hook_error(clock: FakeClock) -> None:
    b = Scripted("b", ["never"])
    with pytest.raises(HookError, match="before_fallback"):
        await FallbackAgent(
            [Scripted("a", [ServerError("x")]), b],
            max_retries=0,
            before_fallback=lambda r, why: "not a request",
            clock=clock,
        ).run("x")

    def boom(r: Request, why: str) -> Request:
        raise ValueError("redactor broke")

    with pytest.raises(HookError) as info:
        await FallbackAgent(
            [Scripted("a", [ServerError("x")]), b],
            max_retries=0,
            before_fallback=boom,
            clock=clock,
        ).run("x")
    assert isinstance(info.value.__cause__, ValueError)
    assert b.calls == 0


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ServerError("x"), "error"),
        (TimeoutError("x"), "timeout"),
        (RateLimited("x", retry_after=999), "rate_limited"),
        (Overloaded("x"), "overloaded"),
        (AuthenticationFailed("x"), "unusable"),
        (InvalidOutput("x"), "invalid_output"),
    ],
)
async def test_reasons_on_attempts_and_hooks(
    clock: FakeClock, error: Exception, reason: str
) -> None:
    reasons: list[str] = []
    result = await FallbackAgent(
        [Scripted("a", [error]), Scripted("b", ["ok"])],
        max_retries=0,
        clock=clock,
        before_fallback=lambda r, why: reasons.append(why) or r,
    ).run("x")
    assert result.attempts[0].reason == reason and reason in REASONS
    assert reasons == [reason]


async def test_handover_context_travels_without_request_text(clock: FakeClock) -> None:
    b = Scripted("b", ["ok"])
    await FallbackAgent([Scripted("a", [ServerError("x")]), b], max_retries=0, clock=clock).run(
        "private"
    )
    handover = b.requests[0].metadata["handover"]
    assert handover["reason"] == "error"
    assert handover["attempts"] == [
        {
            "agent": "a",
            "attempt_number": 1,
            "reason": "error",
            "error_type": "ServerError",
            "error_kind": "transient",
        }
    ]
    assert "private" not in repr(handover)


async def test_best_effort_returns_instead_of_raising(clock: FakeClock) -> None:
    order: list[str] = []
    agent = FallbackAgent(
        [Scripted("a", [ServerError("x")])],
        max_retries=0,
        clock=clock,
        on_all_failed=lambda e: order.append("all_failed"),
        best_effort=lambda attempts: order.append(f"best:{len(attempts)}") or "cached answer",
    )
    result = await agent.run("x")
    assert result.best_effort and result.text == "cached answer" and result.handled_by is None
    assert order == ["all_failed", "best:1"]
    agent2 = FallbackAgent(
        [Scripted("a", [ServerError("x")])],
        max_retries=0,
        clock=clock,
        best_effort=lambda attempts: None,
    )
    with pytest.raises(FallbackError):
        await agent2.run("x")


async def test_accept_escalates_to_the_next_child_at_once(clock: FakeClock) -> None:
    cheap = Scripted("cheap", ["meh"])
    pricey = Scripted("pricey", ["a thorough answer"])
    agent = FallbackAgent(
        [cheap, pricey], max_retries=3, clock=clock, accept=lambda r: len(r.text) > 5
    )
    result = await agent.run("x")
    assert result.handled_by == "pricey" and cheap.calls == 1
    assert isinstance(result.attempts[0].error, Rejected)
    assert result.attempts[0].reason == "rejected"


class Review(BaseModel):
    verdict: str
    score: int


async def test_schema_validates_into_value_and_asks_for_json(clock: FakeClock) -> None:
    a = Scripted("a", ['{"verdict": "ok"}', '{"verdict": "ok", "score": 3}'])
    result = await FallbackAgent([a], clock=clock).run("review", schema=Review)
    assert result.value == Review(verdict="ok", score=3)
    assert a.calls == 2  # one schema retry on the same provider
    err = result.attempts[0].error
    assert isinstance(err, InvalidOutput) and "score" in str(err) and "Review" in str(err)
    sent = a.requests[0]
    assert sent.schema_name == "Review" and sent.json_schema is not None
    assert sent.json_schema["properties"]["score"]["type"] == "integer"


async def test_schema_invalid_json_falls_over_after_schema_retries(clock: FakeClock) -> None:
    a = Scripted("a", ["not json"])
    b = Scripted("b", ['{"verdict": "fine", "score": 9}'])
    result = await FallbackAgent([a, b], clock=clock).run("review", schema=Review)
    assert a.calls == 2 and result.handled_by == "b" and result.value.score == 9
    assert "not json" not in str(result.attempts[0].error)


async def test_usage_and_cost_sum_over_every_attempt(clock: FakeClock) -> None:
    from orchestrator import Usage

    a = Scripted("a", [Response("meh", usage=Usage(10, 2), cost_usd=0.001)])
    b = Scripted("b", [Response("good answer", usage=Usage(10, 20), cost_usd=0.01)])
    result = await FallbackAgent([a, b], accept=lambda r: r.text != "meh", clock=clock).run("x")
    assert result.usage == Usage(20, 22)
    assert result.cost_usd == pytest.approx(0.011)


async def test_a_billed_reply_it_could_not_parse_counts_its_usage_and_cost(
    clock: FakeClock,
) -> None:
    from orchestrator import Usage

    unparsable = InvalidOutput("bad tool arguments", usage=Usage(100, 50), cost_usd=0.002)
    a = Scripted("a", [unparsable, InvalidOutput("no usage readable")])
    b = Scripted("b", [Response("ok", usage=Usage(10, 20), cost_usd=0.01)])
    result = await FallbackAgent([a, b], schema_retries=1, clock=clock).run("x")
    first, second, _ = result.attempts
    assert (first.usage, first.cost_usd) == (Usage(100, 50), 0.002)
    assert (second.usage, second.cost_usd) == (None, None)
    assert result.usage == Usage(110, 70)
    assert result.cost_usd == pytest.approx(0.012)


async def test_on_fallback_may_take_the_reason_as_a_fourth_argument(clock: FakeClock) -> None:
    seen: list[tuple[str, str, str]] = []

    def hook(frm: str, to: str, error: BaseException, reason: str) -> None:
        seen.append((frm, to, reason))

    await FallbackAgent(
        [Scripted("a", [RateLimited("x", retry_after=999)]), Scripted("b", ["ok"])],
        on_fallback=hook,
        clock=clock,
    ).run("x")
    assert seen == [("a", "b", "rate_limited")]


async def test_outer_accept_judges_nested_replies(clock: FakeClock) -> None:
    inner = FallbackAgent([Scripted("cheap", ["BAD"])], name="regional", clock=clock)
    outer = FallbackAgent(
        [inner, Scripted("premium", ["GOOD"])], clock=clock, accept=lambda r: r.text != "BAD"
    )
    r = await outer.run("x")
    assert r.text == "GOOD" and r.attempts[0].reason == "rejected"

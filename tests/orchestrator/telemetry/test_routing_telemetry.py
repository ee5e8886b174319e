"""A routed run's order and split arm on its span, and the arm on the attempts metric."""

from __future__ import annotations

import random

from orchestrator import FallbackAgent, Split
from orchestrator.testing import FakeClock, capture_events
from tests.orchestrator.routing.fakes import Timed
from tests.orchestrator.telemetry.conftest import Otel


async def test_the_run_span_carries_the_order_and_the_arm_and_metrics_the_arm(
    otel: Otel,
) -> None:
    clock = FakeClock()
    a, b = Timed("a", clock), Timed("b", clock)
    a.down = True  # the assigned arm fails: the other arm answers, the assignment stays
    split = Split({"exp": 1.0, "ctl": 0.0}, children=[a, b], clock=clock, max_retries=0)
    agent = FallbackAgent([split, Timed("safety", clock)], clock=clock, hedge_after=None)
    with capture_events() as events:
        result = await agent.run("hi", split_key="user-1")
    assert (result.arm, result.handled_by) == ("exp", "b")
    spans = {s.name: s for s in otel.run_spans()}
    outer, inner = spans[f"failover {agent.name}"], spans[f"failover {split.name}"]
    assert outer.attributes is not None and inner.attributes is not None
    assert inner.attributes["failover.arm"] == "exp"
    assert tuple(inner.attributes["failover.order"]) == ("a", "b")
    assert outer.attributes["failover.arm"] == "exp"  # the outer run was assigned it too
    points = otel.points("failover.attempts")
    assert {dict(p.attributes).get("failover.arm") for p in points} == {"exp"}
    done = [e for e in events if e["event"] == "run_succeeded"]
    assert [e["arm"] for e in done] == ["exp", "exp"]


async def test_a_plain_priority_run_adds_no_routing_attributes(otel: Otel) -> None:
    clock = FakeClock()
    agent = FallbackAgent([Timed("a", clock)], clock=clock, rng=random.Random(1))
    result = await agent.run("hi")
    assert result.order == ("a",) and result.arm is None
    (span,) = otel.run_spans()
    assert span.attributes is not None
    assert "failover.order" not in span.attributes and "failover.arm" not in span.attributes

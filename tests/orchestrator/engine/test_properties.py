"""Property tests over random failure scripts (hypothesis)."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import FallbackAgent, FallbackError
from orchestrator.errors import (
    AuthenticationFailed,
    InvalidOutput,
    Overloaded,
    RateLimited,
    ServerError,
)
from orchestrator.testing import FakeClock
from tests.conftest import Scripted

FAILURES = [
    lambda: ServerError("5xx"),
    lambda: Overloaded("529"),
    lambda: RateLimited("429", retry_after=1.0),
    lambda: RateLimited("429 long", retry_after=500.0),
    lambda: AuthenticationFailed("401"),
    lambda: InvalidOutput("bad"),
    lambda: RuntimeError("plain"),
]

outcome = st.one_of(st.integers(0, len(FAILURES) - 1), st.just("ok"))
child_script = st.lists(outcome, min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    scripts=st.lists(child_script, min_size=1, max_size=5),
    max_retries=st.integers(0, 4),
    strategy=st.sampled_from(["exponential", "linear", "none"]),
)
def test_chain_invariants(scripts: list[list[Any]], max_retries: int, strategy: str) -> None:
    clock = FakeClock()
    children = [
        Scripted(f"c{i}", [FAILURES[x]() if x != "ok" else f"text{i}" for x in script])
        for i, script in enumerate(scripts)
    ]
    handovers: list[tuple[str, str]] = []
    all_failed: list[list[BaseException]] = []
    agent = FallbackAgent(
        children,
        max_retries=max_retries,
        retry_strategy=strategy,
        clock=clock,
        schema_retries=2,
        on_fallback=lambda f, t, e: handovers.append((f, t)),
        on_all_failed=lambda errors: all_failed.append(errors),
        hedge_after=None,  # the invariants of a chain tried in order (hedged: test_hedging)
    )
    try:
        result = asyncio.run(agent.run("x"))
        attempts = list(result.attempts)
        failed = [a for a in attempts if a.error is not None]
        winner = next(
            i
            for i, c in enumerate(children)
            if c.calls and any(a.agent == c.name and a.error is None for a in attempts)
        )
        assert result.handled_by == f"c{winner}" and result.text == f"text{winner}"
        # The first child whose script reached "ok" within its attempts wins.
        for c in children[:winner]:
            assert c.calls >= 1
        assert all(c.calls == 0 for c in children[winner + 1 :])
        assert all_failed == []
    except FallbackError as e:
        attempts = list(e.attempts)
        failed = attempts
        assert len(all_failed) == 1 and all_failed[0] == [a.error for a in attempts]
    tried = [c for c in children if c.calls]
    # attempts per child never exceed max_retries + 1, and match the calls made
    for c in children:
        mine = [a for a in attempts if a.agent == c.name]
        assert len(mine) == c.calls <= max_retries + 1
        assert [a.attempt_number for a in mine] == list(range(1, c.calls + 1))
    # order is kept: children appear in priority order, contiguously
    names = [a.agent for a in attempts]
    assert names == sorted(names, key=lambda n: int(n[1:]))
    assert [c.name for c in tried] == [c.name for c in children[: len(tried)]]
    # on_fallback fires (children tried - 1) times, between consecutive children
    assert handovers == [(tried[i].name, tried[i + 1].name) for i in range(len(tried) - 1)]
    # every failed attempt is recorded with its error
    assert all(a.error is not None for a in failed)
    # unusable errors and long Retry-After never get retried
    for i, a in enumerate(attempts[:-1]):
        nxt = attempts[i + 1]
        if isinstance(a.error, AuthenticationFailed) or (
            isinstance(a.error, RateLimited) and (a.error.retry_after or 0) > 30
        ):
            assert nxt.agent != a.agent
    # sleeps only ever happen between retries of one child, never between children;
    # with strategy "none" only a Retry-After makes the engine wait.
    waits = [
        attempts[i - 1].error
        for i in range(1, len(attempts))
        if attempts[i].agent == attempts[i - 1].agent
    ]
    expected = [
        e.retry_after if isinstance(e, RateLimited) else None
        for e in waits
        if strategy != "none" or isinstance(e, RateLimited)
    ]
    assert len(clock.sleeps) == len(expected)
    for slept, want in zip(clock.sleeps, expected, strict=True):
        if want is not None:
            assert slept == want

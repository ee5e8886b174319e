"""``failover run -v`` shows hedges, deadline failures and context-window skips (fake time)."""

from __future__ import annotations

import io

from orchestrator import FallbackAgent
from orchestrator.cli.progress import Progress
from orchestrator.testing import FakeClock
from tests.conftest import Scripted
from tests.orchestrator.engine.paced import HANG, Paced, Ticker

PROMPT = "x" * 4000  # at least 32 tokens: more than the small child's window


def lines_of(out: io.StringIO) -> list[str]:
    return [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]


async def test_hedge_started_lost_and_won_are_lines(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(2.0, "slow")])
    fast = Paced("fast", clock, [(0.05, "fast")])
    agent = FallbackAgent([slow, fast], name="h", hedge_after=0.4, clock=clock)
    out = io.StringIO()
    with Progress(out).active():
        async with Ticker(clock):
            await agent.run("hi")
    lines = lines_of(out)
    (hedge,) = [line for line in lines if line.startswith("h: hedge: ")]
    assert hedge.startswith("h: hedge: slow has no content after 40")
    assert hedge.endswith(" ms, starting fast in parallel")
    (lost,) = [line for line in lines if "cancelled" in line]
    assert lost.startswith("h: slow try 1 cancelled after 45")
    assert lost.endswith(" ms: the hedge to fast answered first")
    assert any(line.startswith("h: answered by fast") for line in lines)


async def test_no_hedge_is_a_line_saying_why(clock: FakeClock) -> None:
    slow = Paced("slow", clock, [(0.6, "slow")])
    small = Paced("small", clock, [(0.01, "small")], context_window=8)
    agent = FallbackAgent([slow, small], name="h", hedge_after=0.4, clock=clock)
    out = io.StringIO()
    with Progress(out).active():
        async with Ticker(clock):
            await agent.run(PROMPT)
    assert "h: no hedge to small: its context window cannot hold the request" in lines_of(out)


async def test_deadline_failures_and_context_window_skips_are_lines(clock: FakeClock) -> None:
    silent = Paced("silent", clock, [(0.0, HANG)], first_token_timeout=0.5)
    stalling = Paced("stalling", clock, [(0.1, "a"), (9.0, "b")], idle_timeout=0.3)
    small = Paced("small", clock, [(0.01, "ok")], context_window=8)
    big = Scripted("big", ["ok"])
    agent = FallbackAgent([silent, stalling, small, big], name="d", max_retries=0, clock=clock)
    out = io.StringIO()
    with Progress(out).active():
        async with Ticker(clock):
            await agent.run(PROMPT)
    lines = lines_of(out)
    failed = [line for line in lines if " failed after " in line]
    assert failed[0].startswith("d: silent try 1 failed after 50")
    assert failed[0].endswith(" ms: no first token in time (FirstTokenTimeout)")
    assert failed[1].startswith("d: stalling try 1 failed after 40")
    assert failed[1].endswith(" ms: stream stalled (StreamStalled)")
    assert "d: skipped small: its context window cannot hold the request" in lines
    assert not any("circuit open" in line for line in lines)
    assert "x" * 20 not in out.getvalue()


def test_a_quiet_wait_says_which_provider_it_waits_on() -> None:
    """A hung provider must not leave the terminal blank (issue 10): after ``every`` seconds
    without a line, -v says who it is waiting on, and again each ``every`` after."""
    now = [0.0]
    out = io.StringIO()
    progress = Progress(out, now=lambda: now[0], every=5.0)
    progress.waiting_on("codex")
    now[0] = 4.0
    progress.tick()
    assert out.getvalue() == ""  # not yet: 4 s of quiet
    now[0] = 5.5
    progress.tick()
    now[0] = 7.0
    progress.tick()  # 1.5 s since the last line: quiet again only at 10.5
    now[0] = 10.6
    progress.tick()
    assert lines_of(out) == ["still waiting on codex (5.50 s)", "still waiting on codex (10.60 s)"]


async def test_the_provider_waited_on_follows_retries_and_fallbacks(clock: FakeClock) -> None:
    from orchestrator.errors import AuthenticationFailed

    agent = FallbackAgent(
        [Scripted("codex", [AuthenticationFailed("no key")]), Scripted("claude", ["ok"])],
        name="r",
        clock=clock,
    )
    progress = Progress(io.StringIO())
    progress.waiting_on("codex")
    with progress.active():
        await agent.run("hi")
    assert progress.current == "claude"

"""The sixteen fault scenarios of an independent failover benchmark (issue 17), shared by the
library and the gateway tests: the chain, the faults, and what a rescue looks like.

Default settings, as the benchmark ran them: two retries, one fallback, a 30 s attempt
timeout, everything else default. Real time over loopback, so every duration of the
benchmark is scaled by :data:`F` (30 s -> 1.5 s, 20 s -> 1.0 s, the default 1 s retry delay
-> 0.05 s); nothing else is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from orchestrator import FallbackAgent
from providers import AnthropicMessages, BenchmarkFault, Fault, OpenAIChat, SimulatedServer

F = 0.05  # the benchmark's seconds, scaled
#: Real seconds a bound allows beyond the scaled ones: loopback HTTP, the SDK and the gateway
#: cost what they cost whatever F is (a 503-then-fallback request took 0.5015 s against a
#: 0.5 s bound in one CI run), while the faults' waits are whole benchmark seconds.
SLACK = 0.25
KEY = "sk-benchmark-upstream-0123456789"
PRIMARY, FALLBACK = "openai:gpt-primary", "anthropic:claude-fallback"
FILTERED = {
    "error": {
        "message": "The response was filtered due to the prompt triggering content policy",
        "type": "invalid_request_error",
        "param": "prompt",
        "code": "content_filter",
    }
}
SIXTY = " ".join(f"w{i}" for i in range(60))


def chain(sim: SimulatedServer) -> FallbackAgent:
    """The benchmark's chain with its settings, durations scaled."""
    return FallbackAgent(
        [
            OpenAIChat("gpt-primary", base_url=sim.openai_url, api_key=KEY),
            AnthropicMessages("claude-fallback", base_url=sim.anthropic_url, api_key=KEY),
        ],
        max_retries=2,
        attempt_timeout=30 * F,
        retry_delay=1.0 * F,
    )


@dataclass(frozen=True)
class Scenario:
    """One fault on the primary and what a rescue is.

    ``answered_by`` None: the call must fail cleanly (no retry, no fallback) with an error
    naming ``reason``. ``primary_calls`` bounds the requests the primary got (no hammering);
    ``within`` the seconds (scaled) the caller may wait; ``stream`` streams the call.
    """

    name: str
    primary: list[Fault]
    answered_by: str | None
    primary_calls: int
    within: float
    stream: bool = False
    at_least: float = 0.0
    reason: str | None = None
    fallback: list[Fault] = field(default_factory=list)
    #: Through the gateway, a stream's status line and chunks name the provider whose text
    #: reached the client first (they leave before the run ends); when another provider
    #: continued that text, this names the first (``answered_by`` otherwise).
    streamed_by: str | None = None

    def script(self, sim: SimulatedServer) -> None:
        sim.script("openai", self.primary)
        sim.script("anthropic", self.fallback)

    def param(self) -> Any:
        return pytest.param(self, id=self.name)


SCENARIOS = [
    Scenario(
        "429_retry_after_2s_once",
        [Fault.rate_limited(retry_after=2 * F)],
        PRIMARY,
        primary_calls=2,
        within=10 * F,
        at_least=2 * F,
    ),
    Scenario(
        # No Retry-After, but the body's "try again in 1s" (unscaled, as the simulator says
        # it): the primary is backed off, not hammered, and the hedge answers meanwhile.
        "429_without_retry_after_persists",
        [Fault.rate_limited(retry_after=None)] * 10,
        FALLBACK,
        primary_calls=3,
        within=20 * F,
    ),
    Scenario("500_once", [Fault.server_error(500)], PRIMARY, primary_calls=2, within=10 * F),
    Scenario("503_persists", [Fault.status(503)] * 10, FALLBACK, primary_calls=3, within=10 * F),
    Scenario("tcp_reset_before_headers", [BenchmarkFault.reset()] * 10, FALLBACK, 3, 10 * F),
    # Item 18: no longer 93 s (retried twice at 30 s each): before one timeout has passed.
    Scenario("no_response", [Fault.hang()] * 10, FALLBACK, primary_calls=1, within=30 * F),
    Scenario(
        # Item 19: hedged at 10 s by default, the slow primary kept racing then cancelled.
        "first_token_after_20s",
        [Fault.first_token(20 * F)],
        FALLBACK,
        primary_calls=1,
        within=20 * F,
        stream=True,
    ),
    # Streams rescued by default (item 20: continue after a cut, a stall seen without
    # waiting for the whole timeout, a malformed chunk; item 2: a complete answer without
    # its terminator finishes at once, usage kept): a cut or broken stream is continued by
    # the primary's retry; a stall is a timeout, so the fallback continues it (item 18).
    *(
        Scenario(name, [fault], by, calls, within * F, stream=True, streamed_by=PRIMARY)
        for name, fault, by, calls, within in (
            (
                "stream_cut_after_40_of_60_tokens",
                Fault.cut_stream(40, text=SIXTY, how="abort"),
                PRIMARY,
                2,
                10,
            ),
            # Scaled, the attempt timeout (1.5 s) sees the stall before the default idle deadline
            # (20 s, not scaled); at full scale that deadline sees it first, 10 s earlier.
            ("stream_stalls_30s_connection_open", Fault.stall(3), FALLBACK, 1, 40),
            ("malformed_chunk_mid_stream", Fault.invalid_json(), PRIMARY, 2, 10),
            (
                "stream_ends_without_done",
                BenchmarkFault.unterminated(hold=30 * F, usage=(9, 6)),
                PRIMARY,
                1,
                20,
            ),
        )
    ),
    Scenario(
        "400_context_length_goes_to_the_larger_model",
        [Fault.context_too_long()],
        FALLBACK,
        primary_calls=1,
        within=10 * F,
    ),
    Scenario(
        "400_content_filter_refusal",
        [Fault.status(400, body=FILTERED)],
        None,
        primary_calls=1,
        within=10 * F,
        reason="filtered",
    ),
    Scenario(
        "cut_stream_fallback_refuses_prefill",
        [Fault.cut_stream(40, text=SIXTY, how="abort")] * 10,
        FALLBACK,
        primary_calls=3,
        within=10 * F,
        stream=True,
        fallback=[Fault.no_prefill()] * 10,
        streamed_by=PRIMARY,
    ),
    Scenario(
        "503_primary_fallback_answers",
        [Fault.status(503)] * 10,
        FALLBACK,
        primary_calls=3,
        within=10 * F,
        fallback=[Fault.ok("from the fallback", usage=(12, 5))],
    ),
]
# The sixteenth, a primary down for 60 s then healthy over 20 requests, is a sequence of
# calls: test_library_scenarios / test_gateway_scenarios each run it on their own.
DOWN_FOR = 60 * F
REQUESTS = 20
EVERY = 5 * F  # a request every 5 benchmark seconds
#: The requests sent while the primary is down, counted rather than timed: on a loaded
#: machine a request sent late is still one of them (the 60 s are a schedule, not a bound).
DOWN_REQUESTS = int(DOWN_FOR / EVERY)

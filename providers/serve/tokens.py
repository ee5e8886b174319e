"""Token estimate for ``POST /v1/messages/count_tokens``: the one place the gateway counts tokens.

It is :mod:`orchestrator.tokens`'s typical estimate (``input_tokens_estimate``:
characters / 4 over the text surely sent), never below that module's strict lower
bound. An estimate, as the endpoint's contract allows: no vendor tokenizer runs here.
"""

from __future__ import annotations

from orchestrator import tokens
from orchestrator.types import Request

__all__ = ["estimate_tokens"]


def estimate_tokens(request: Request) -> int:
    """An estimate of ``request``'s input tokens, never below the lower bound."""
    return max(tokens.input_tokens_at_least(request), tokens.input_tokens_estimate(request))

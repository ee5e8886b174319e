"""Token estimate for ``POST /v1/messages/count_tokens``: the one place the gateway counts tokens.

The estimate is :mod:`orchestrator.tokens`'s typical one (``input_tokens_estimate``,
characters / 4 over the text surely sent) once that lands on main beside the lower
bound; until then a local estimate that errs high (characters / 3 plus a few tokens
a message), never below ``orchestrator.tokens.input_tokens_at_least``. When the
typical estimate is on main, :func:`_local_estimate` can go.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from orchestrator import tokens
from orchestrator.types import Request

__all__ = ["estimate_tokens"]

#: Characters per token assumed locally: fewer than the ~4 of English text, so the estimate
#: errs high (a client that budgets by it does not overflow a window).
CHARS_PER_TOKEN = 3
#: Tokens each message costs beyond its text (role, separators).
PER_MESSAGE = 4

# Looked up, not imported: the typical estimate is being added to orchestrator.tokens.
_TYPICAL: Callable[[Request], Any] | None = getattr(tokens, "input_tokens_estimate", None)


def estimate_tokens(request: Request) -> int:
    """An estimate of ``request``'s input tokens, never below the lower bound."""
    floor = tokens.input_tokens_at_least(request)
    if _TYPICAL is not None:
        return max(floor, int(_TYPICAL(request)))
    return max(floor, _local_estimate(request))


def _local_estimate(request: Request) -> int:
    chars = len(request.system or "")
    for m in request.messages:
        chars += len(m.content)
        for c in m.tool_calls:
            chars += len(c.name) + len(json.dumps(dict(c.arguments)))
    for t in request.tools:
        chars += len(t.name) + len(t.description) + len(json.dumps(dict(t.parameters)))
    return -(-chars // CHARS_PER_TOKEN) + PER_MESSAGE * len(request.messages)

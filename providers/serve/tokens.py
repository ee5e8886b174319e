"""Token estimate for ``POST /v1/messages/count_tokens``.

A placeholder until ``orchestrator.tokens`` (issue 11) lands: the lead swaps
:func:`estimate_tokens` for its conservative estimate at merge; this is the one
place the gateway counts tokens.
"""

from __future__ import annotations

import json

from orchestrator.types import Request

__all__ = ["estimate_tokens"]

#: Characters per token assumed: fewer than the ~4 of English text, so the estimate
#: errs high (a client that budgets by it does not overflow a window).
CHARS_PER_TOKEN = 3
#: Tokens each message costs beyond its text (role, separators).
PER_MESSAGE = 4


def estimate_tokens(request: Request) -> int:
    """A conservative (high) estimate of ``request``'s input tokens."""
    chars = len(request.system or "")
    for m in request.messages:
        chars += len(m.content)
        for c in m.tool_calls:
            chars += len(c.name) + len(json.dumps(dict(c.arguments)))
    for t in request.tools:
        chars += len(t.name) + len(t.description) + len(json.dumps(dict(t.parameters)))
    return -(-chars // CHARS_PER_TOKEN) + PER_MESSAGE * len(request.messages)

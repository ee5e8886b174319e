"""Which models take an assistant prefill: a request that ends in an assistant message,
continued rather than answered.

A mid-stream rescue continues the delivered text on the next attempt
(:mod:`orchestrator.engine.delivery`): as a prefill where the provider's
``accepts_prefill`` is true, else as a user turn asking to continue. Anthropic's
Messages API continues a prefill exactly, except on Claude 4.6 and later, which refuse
it with a 400 ("does not support assistant message prefill"). OpenAI's chat completions
and Gemini answer a trailing assistant turn with a new message instead of continuing
it, so they take the user turn by default. ``accepts_prefill=`` overrides the default
(an OpenAI-compatible server that continues one, a new Claude model).
"""

from __future__ import annotations

import re

__all__ = ["PREFILL_REFUSED", "accepts_prefill", "prefill_default"]

#: How Anthropic words "this model takes no assistant prefill" (a 400: ``PrefillUnsupported``).
PREFILL_REFUSED = re.compile(r"prefill|final assistant content|end with a user message", re.I)

#: ``claude-<family>-<major>[-<minor>]``; a minor of more than two digits is a date.
_CLAUDE = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d{1,2})(?:[-.](\d{1,2})(?!\d))?")
_FIRST_REFUSING = (4, 6)


def prefill_default(family: str, model: str) -> bool:
    """Whether ``model`` of vendor ``family`` continues an assistant prefill by default."""
    if family != "anthropic":
        return False
    found = _CLAUDE.search(model.lower())
    if found is None:
        return True  # claude-3-5-sonnet and older names, or a name we cannot read
    version = (int(found.group(1)), int(found.group(2) or 0))
    return version < _FIRST_REFUSING


def accepts_prefill(given: bool | None, family: str, model: str, owner: str) -> bool:
    """A provider's ``accepts_prefill``: ``given`` when a bool, else :func:`prefill_default`."""
    if given is None:
        return prefill_default(family, model)
    if not isinstance(given, bool):
        raise TypeError(f"{owner}.accepts_prefill={given!r} must be True, False or None")
    return given

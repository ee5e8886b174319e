"""How a failed run is told in one line: ``str(FallbackError)`` and the CLI's ``-v``.

Each attempt shows its error's class and, for the taxonomy's provider errors, the
first line of its message, masked and cut to :data:`DETAIL_LIMIT` characters; repeats
in a row are counted, not repeated. An exception from outside the taxonomy shows its
class only: its text may quote the prompt or a credential the library cannot know.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.errors import ProviderError, describe

if TYPE_CHECKING:
    from orchestrator.types import Attempt

__all__ = ["DETAIL_LIMIT", "attempt_summaries", "never_tried", "summary", "untried_note"]


def summary(attempts: Sequence[Attempt], untried: Sequence[str]) -> str:
    """``All agents failed after N attempts (a: ServerError: ... (x3); b: ...)``, then
    what the run's deadline left untried."""
    runs: list[list[Any]] = []  # [label, how many times in a row]
    for a in attempts:
        label = f"{a.agent}: {_cause(a)}"
        if runs and runs[-1][0] == label:
            runs[-1][1] += 1
        else:
            runs.append([label, 1])
    detail = "; ".join(label + (f" (x{n})" if n > 1 else "") for label, n in runs)
    n = len(attempts)
    return (
        f"All agents failed after {n} attempt{'s' if n != 1 else ''}"
        + (f" ({detail})" if detail else "")
        + (f"; {untried_note(untried)}" if untried else "")
    )


def untried_note(untried: Sequence[str]) -> str:
    """What a run's deadline left out, and the setting that leaves time for them."""
    return (
        f"never tried: {', '.join(untried)} (the run's timeout passed first: set "
        "attempt_timeout= so one provider cannot use the whole timeout)"
    )


#: How much of each attempt's message ``str(FallbackError)`` shows.
DETAIL_LIMIT = 120


def _cause(attempt: Attempt) -> str:
    """One attempt for a summary: its error's class, and a provider error's first line."""
    error = attempt.error
    if not isinstance(error, ProviderError):
        return attempt.kind_label()
    from orchestrator.secrets import redact_urls, scrub

    text = (f"HTTP {error.status}: " if error.status is not None else "") + error.message
    lines = scrub(redact_urls(text)).strip().splitlines()
    first = " ".join(lines[0].split()) if lines else ""
    if len(first) > DETAIL_LIMIT:
        first = first[: DETAIL_LIMIT - 3] + "..."
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def attempt_summaries(attempts: Sequence[Attempt]) -> list[dict[str, Any]]:
    """What the next child is told of the attempts so far (no message text: no secrets)."""
    return [
        {
            "agent": a.agent,
            "attempt_number": a.attempt_number,
            "reason": a.reason,
            **(describe(a.error) if a.error is not None else {}),
        }
        for a in attempts
    ]


def never_tried(members: Sequence[Any], attempts: Sequence[Attempt]) -> tuple[str, ...]:
    """The children no attempt reached (a nested chain counts as tried once one of its own
    children was): what the run's deadline left out."""
    reached = {a.agent for a in attempts}

    def tried(child: Any) -> bool:
        inner = getattr(child, "agent", None)  # a nested chain: any of its children
        return child.name in reached or (inner is not None and any(tried(c) for c in inner.members))

    return tuple(c.name for c in members if not tried(c))

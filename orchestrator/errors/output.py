"""Invalid output: the provider answered, but the reply cannot be used (malformed,
off-schema, refused by ``accept``, too large); what it was billed travels with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.errors.base import ProviderError

if TYPE_CHECKING:
    from orchestrator.usage import Usage

__all__ = ["InvalidOutput", "Rejected", "ResponseTooLarge"]


class InvalidOutput(ProviderError):
    """The reply is malformed or fails the schema: retry (``schema_retries``), then hand over.

    ``usage`` and ``cost_usd`` are what a reply that could not be used still
    reported and cost (the vendor bills it): set by the provider when the reply's
    usage was readable (a stream: the usage seen so far), else None. The engine
    records them on the failed attempt, so ``Result.cost_usd`` counts them.
    """

    kind = "invalid_output"
    retried = True
    counts_for_health = False  # the provider is up; the reply is the problem
    reason = "invalid_output"

    def __init__(
        self,
        message: str = "",
        *,
        provider: str | None = None,
        status: int | None = None,
        usage: Usage | None = None,
        cost_usd: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.usage = usage
        self.cost_usd = cost_usd

    def _kwargs(self) -> dict[str, Any]:
        return {**super()._kwargs(), "usage": self.usage, "cost_usd": self.cost_usd}


class Rejected(InvalidOutput):
    """The ``accept`` check refused a well-formed reply: escalate to the next child at once."""

    retried = False
    reason = "rejected"


class ResponseTooLarge(InvalidOutput):
    """The reply (decoded body, stream, or one stream line or event) passed the provider's
    ``max_response_bytes``: reading stopped there. Not retried on the same provider:
    asking again costs the same download for a reply that is most likely as large
    (a runaway generation or a broken or hostile server); the next child is asked.
    """

    retried = False

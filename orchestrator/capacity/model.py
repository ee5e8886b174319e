"""What the engine asks a capacity store, and its answers: :class:`Want`, :class:`Ticket`,
:class:`Refusal`; and the :class:`CapacityStore` protocol both stores implement."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from orchestrator.capacity.values import Budget, Limits

if TYPE_CHECKING:
    from orchestrator.types import Attempt

__all__ = ["CapacityStore", "Charge", "Refusal", "Ticket", "Want", "used_by"]


@dataclass(frozen=True, slots=True)
class Charge:
    """A budget one call is counted against: its store key, the budget, and whose it is
    (``"agent"``: the run stops when it is spent; ``"provider"``: the child is skipped)."""

    key: str
    budget: Budget
    scope: Literal["agent", "provider"]


@dataclass(frozen=True, slots=True)
class Want:
    """One call about to be made: its limiter (by name) and what it reserves there
    (one request, ``tokens``), the budgets it counts against and the ``cost`` it reserves;
    ``price`` (USD per 1M input and output tokens) counts a reply that came with no cost."""

    name: str
    limits: Limits | None
    tokens: int
    charges: tuple[Charge, ...]
    cost: float
    price: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call may not start now: ``at_capacity`` (a limit) or ``budget``; ``free_in``
    seconds until it may (``None``: when a call in flight ends), ``which`` the limit or
    scope that refused (``rpm``, ``tpm``, ``max_concurrency``, ``agent``, ``provider``)."""

    reason: Literal["at_capacity", "budget"]
    which: str
    free_in: float | None


@dataclass(slots=True)
class Ticket:
    """A call admitted: what it reserved, to settle once it ends (:meth:`CapacityStore.settle`)
    in ``store``, the store that took it (None: the caller's)."""

    want: Want
    entry: object
    settled: bool = False
    store: CapacityStore | None = None
    #: False for a ticket that counts nothing to settle (a limiter of requests and calls
    #: in flight only): the caller frees it with :meth:`release`, reading no attempts.
    counts: ClassVar[bool] = True

    def release(self) -> Awaitable[None] | None:
        """Free the slot of a ticket with ``counts`` False, once (its store's kind makes
        it); an awaitable when that needs a round trip, as :meth:`CapacityStore.settle`."""
        raise NotImplementedError(type(self).__name__)


class CapacityStore(Protocol):
    """Where limiters and budget spend live: process memory or Redis, one atomic take per call."""

    def peek(self, want: Want) -> Refusal | None:
        """Why ``want`` would be refused now, without taking anything (``failover explain``)."""
        ...

    async def take(self, want: Want) -> Ticket | Refusal:
        """Check every limit and budget of ``want`` and reserve them all, or none."""
        ...

    def settle(self, ticket: Ticket, tokens: int | None, cost: float) -> Awaitable[None] | None:
        """The call ended having used ``tokens`` (None: unknown, keep the reservation)
        and cost ``cost`` dollars: give back the rest, count the spend, free its slot.
        None when done; an awaitable when it needs a round trip (the caller awaits it)."""
        ...

    def usage(self) -> dict[str, dict[str, float]]:
        """Each limiter's use and each budget's spend, as this process sees them."""
        ...


def used_by(
    attempts: Iterable[Attempt], price: tuple[float, float] | None
) -> tuple[int | None, float]:
    """Tokens and dollars a call's ``attempts`` used, what its reservation settles with:
    tokens None when unknown (an attempt answered without saying); an attempt with tokens
    and no cost counts at ``price`` (the fallback the call was admitted with)."""
    tokens: int | None = 0
    cost = 0.0
    for attempt in attempts:
        usage = attempt.usage
        if usage is not None:
            tokens = None if tokens is None else tokens + usage.total_tokens
        elif attempt.ok:
            tokens = None  # it answered without saying what it used: keep the reservation
        if attempt.cost_usd is not None:
            cost += attempt.cost_usd
        elif usage is not None and price is not None:
            cost += (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
    return tokens, cost

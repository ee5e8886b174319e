"""Limits and budgets on a run: reserve before a call, settle after, skip or wait when full.

A provider with ``limits`` (:class:`~orchestrator.capacity.Limits`) or a
``budget``, or a chain with a ``budget``, has each call checked and reserved
in one atomic step of the capacity store (the health store's, or the process's
memory) right before it is sent: one request, its input tokens
(:func:`~orchestrator.tokens.input_tokens_counted`) plus ``max_tokens``, and its
cost at that size. When the call ends the reservation is settled with what its
attempts reported (tokens and cost; a failed call that reported nothing used
nothing). A refused call is skipped without a request (``AtCapacity``,
``BudgetSpent``) or, for the chain's own budget, ends the run
(``BudgetExceeded``); ``wait_for_capacity`` waits for a limit to free instead.
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from orchestrator import events
from orchestrator.capacity.memory import Lane, default_capacity
from orchestrator.capacity.model import CapacityStore, Charge, Refusal, Ticket, Want, used_by
from orchestrator.capacity.values import Budget
from orchestrator.errors import AtCapacity, BudgetExceeded, BudgetSpent, RateLimited
from orchestrator.tokens import input_tokens_counted, load_tokenizer
from orchestrator.units import seconds_or_none

if TYPE_CHECKING:
    from orchestrator.clock import Clock
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.run import Run
    from orchestrator.types import Attempt, Request

__all__ = [
    "Capacity",
    "Ticket",
    "Want",
    "admit",
    "admit_waiting",
    "again",
    "every_child_full",
    "look",
    "nested",
    "peek",
    "refused_error",
    "settle",
    "unnested",
]

Unpriced = Literal["dearest", "refuse"] | tuple[float, float]
_COUNTLESS: dict[str, Want] = {}  # provider name -> its Want when nothing is counted
_POLL = 0.01  # how often a wait for a call in flight to end looks again (seconds)
#: The budgets of the chains the current run is nested in (:func:`nested`): each call of
#: its providers counts against them too, as a call of those chains' own providers does.
_OUTER: ContextVar[tuple[Charge, ...]] = ContextVar("failover_outer_budgets", default=())


@dataclass(frozen=True, slots=True)
class Capacity:
    """A chain's own capacity settings: its ``budget``, how long a call may wait for a
    limit (``wait``, seconds; None: skip at once) and how a reply with no price counts
    (``unpriced``: ``"dearest"``, its tokens at the dearest known price of its family, a
    provider's ``dearest_price``, refused when it has none; ``"refuse"`` the call; or a
    ``(usd_per_1M_in, usd_per_1M_out)`` price)."""

    budget: Budget | None = None
    wait: float | None = None
    unpriced: Unpriced = "dearest"
    #: Per provider name: the health store, clock and limits a :class:`Lane` was made for
    #: (:func:`admit` uses it while they are still the agent's and the provider's).
    lanes: dict[str, tuple[Any, Any, Any, Lane]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(
        cls, budget: Any, wait: float | timedelta | None, unpriced: Any, children: Any = ()
    ) -> Capacity:
        """The settings from ``FallbackAgent``'s keywords, validated; loads the tokenizer
        now when a call will count tokens (a ``tpm`` limit, a budget)."""
        counts = budget is not None or any(
            getattr(getattr(c, "limits", None), "tpm", None) or getattr(c, "budget", None)
            for c in children
        )
        if counts:
            load_tokenizer()
        if budget is not None and not isinstance(budget, Budget):
            raise TypeError(f"budget: expected Budget, got {type(budget).__name__}")
        if unpriced not in ("dearest", "refuse") and not _is_price(unpriced):
            raise ValueError(
                f"budget_unpriced={unpriced!r} must be 'dearest', 'refuse' or "
                "(usd_per_1M_in, usd_per_1M_out)"
            )
        return cls(budget, seconds_or_none(wait, "wait_for_capacity"), unpriced)


def store_of(health: Any, clock: Clock) -> CapacityStore:
    """Where limits live: the health store's capacity, or this process's memory."""
    store: CapacityStore | None = None if health is None else getattr(health, "capacity", None)
    return store if store is not None else default_capacity(clock)


def want_of(
    agent_name: str, rules: Capacity, provider: Any, request: Request
) -> Want | Refusal | None:
    """What a call to ``provider`` reserves (None: nothing to check), or the budget's
    refusal of a provider with no price under ``budget_unpriced="refuse"``."""
    limits = getattr(provider, "limits", None)
    own: Budget | None = getattr(provider, "budget", None)
    outer = _OUTER.get()
    if own is None and rules.budget is None and not outer:
        if limits is None:
            return None
        if not limits.tpm:  # the same every call: made once (the hot path's allocation)
            held = _COUNTLESS.get(provider.name)
            if held is None or held.limits is not limits:
                held = _COUNTLESS[provider.name] = Want(provider.name, limits, 0, (), 0.0)
            return held
    charges = []
    if own is not None:
        charges.append(Charge(f"provider:{provider.name}", own, "provider"))
    if rules.budget is not None:
        charges.append(Charge(f"agent:{agent_name}", rules.budget, "agent"))
    charges += [c for c in outer if all(c.key != mine.key for mine in charges)]
    tokens = input_tokens_counted(request) if limits is not None and limits.tpm else 0
    cost = 0.0
    fallback = None
    if charges:
        price = getattr(provider, "price", None)
        if price is None:
            price = fallback = _unpriced_price(rules.unpriced, provider)
        if price is None:
            return Refusal("budget", "unpriced", None)
        counted = tokens or input_tokens_counted(request)
        cost = (counted * price[0] + (request.max_tokens or 0) * price[1]) / 1_000_000
    reserved = tokens + (request.max_tokens or 0)
    return Want(provider.name, limits, reserved, tuple(charges), cost, fallback)


def _is_price(value: object) -> bool:
    """Whether ``value`` is ``(usd_per_1M_in, usd_per_1M_out)``: two numbers >= 0."""
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(p, int | float) and not isinstance(p, bool) and p >= 0 for p in value)
    )


def _unpriced_price(unpriced: Unpriced, provider: Any) -> tuple[float, float] | None:
    """The price a provider with none is counted at under ``budget_unpriced`` (None: refuse)."""
    if unpriced == "refuse":
        return None
    if unpriced == "dearest":  # duck-typed, as routing's cost order reads price and rates
        dearest = getattr(provider, "dearest_price", None)
        return dearest if _is_price(dearest) else None
    return unpriced


def refused_error(name: str, refusal: Refusal) -> BaseException:
    """The error a refused call is recorded with (the taxonomy decides what follows)."""
    when = "" if refusal.free_in is None else f"; frees in {refusal.free_in:.3f} s"
    if refusal.reason == "at_capacity":
        return AtCapacity(
            f"skipped: at its {refusal.which} limit{when}",
            provider=name,
            retry_after=refusal.free_in,
        )
    if refusal.which == "agent":
        return BudgetExceeded(f"the chain's budget is spent{when}", provider=name)
    if refusal.which == "unpriced":
        return BudgetSpent("skipped: no price to count its cost against a budget", provider=name)
    return BudgetSpent(f"skipped: its budget is spent{when}", provider=name)


def peek(agent: FallbackAgent, provider: Any, request: Request) -> BaseException | None:
    """Why a call would be refused now, without reserving anything (``failover explain``)."""
    want = want_of(agent.name, agent.capacity, provider, request)
    if want is None:
        return None
    if not isinstance(want, Refusal):
        want = store_of(agent.health_store, agent.clock).peek(want)
    return None if want is None else refused_error(provider.name, want)


async def look(agent: FallbackAgent, request: Request, depth: int = 0) -> None:
    """Before :func:`peek` (``failover explain``): have a shared store read what each
    provider's limiter and budgets hold now, for every process (nested chains too); a
    store in memory needs nothing. Nothing is taken."""
    store = store_of(agent.health_store, agent.clock)
    ask = getattr(store, "look", None)
    for member in agent.members:
        inner = getattr(member, "agent", None)
        if inner is not None:
            if depth < 8:  # chains nest a few levels; bounded as explain is
                await look(inner, request, depth + 1)
            continue
        want = want_of(agent.name, agent.capacity, getattr(member, "provider"), request)  # noqa: B009
        if ask is not None and isinstance(want, Want):
            await ask(want)


def admit(run: Run, provider: Any, request: Request) -> Ticket | BaseException | Want | None:
    """Reserve a call to ``provider`` now, without a coroutine (the hot path): a Ticket to
    :func:`settle`, None when nothing limits it, the error to skip it with, or its
    :class:`Want` when it must go to :func:`admit_waiting` (a store with a round trip, or
    a refusal ``wait_for_capacity`` may wait out)."""
    agent = run.agent
    rules = agent.capacity
    held = rules.lanes.get(provider.name)
    if held is not None:  # a limiter of requests only, in memory: one take, no Want to make
        health, clock, limits, lane = held
        if (
            health is agent.health_store
            and clock is agent.clock
            and limits is getattr(provider, "limits", None)
            and lane.store.current
            and rules.budget is None
            and getattr(provider, "budget", None) is None
            and not _OUTER.get()
        ):
            got = lane.take()
            if got is not None:
                return got
        else:
            held = None  # made for another store or limits: made again below
    want = want_of(agent.name, rules, provider, request)
    if want is None:
        return None
    if isinstance(want, Refusal):
        return refused_error(provider.name, want)
    store = store_of(agent.health_store, agent.clock)
    take_now = getattr(store, "take_now", None)
    if take_now is None:
        return want
    got = take_now(want)
    if isinstance(got, Ticket):
        if held is None and _requests_only(want) and hasattr(store, "lane"):
            lane = store.lane(want)
            rules.lanes[provider.name] = (agent.health_store, agent.clock, want.limits, lane)
        return got
    if got.reason != "at_capacity" or rules.wait is None:
        return refused_error(provider.name, got)
    return want


def _requests_only(want: Want) -> bool:
    """Whether ``want`` counts requests and calls in flight only (what a Lane takes)."""
    return not want.charges and want.limits is not None and not want.limits.tpm


async def admit_waiting(run: Run, name: str, want: Want) -> Ticket | BaseException:
    """Reserve ``want`` (from :func:`admit`) for provider ``name`` in a store that needs a
    round trip, or after waiting up to ``wait_for_capacity`` (within the run's deadline)
    for a limit to free; the error to skip with when it may not wait."""
    agent = run.agent
    store, clock = store_of(agent.health_store, agent.clock), agent.clock
    wait = agent.capacity.wait
    until = None if wait is None else clock.now() + wait
    if until is not None and run.deadline is not None:
        until = min(until, run.deadline)
    take_now = getattr(store, "take_now", None)  # the memory store's: no coroutine to make
    while True:
        got = take_now(want) if take_now is not None else await store.take(want)
        if isinstance(got, Ticket):
            return got
        pause = _POLL if got.free_in is None else max(got.free_in, 1e-3)
        if got.reason != "at_capacity" or until is None or clock.now() + pause > until:
            return refused_error(name, got)
        events.emit(
            "info",
            "capacity_wait",
            agent=agent.name,
            child=name,
            limit=got.which,
            wait=pause,
        )
        await clock.sleep(pause)


async def again(run: Run, ticket: Ticket, since: int) -> Ticket | BaseException:
    """Before a retry of the call that took ``ticket`` (its request made the attempts from
    ``since`` on): settle it, and take a slot of its own for the retry's request, as the
    call's first request did (the same :class:`Want`). Each request sent counts against
    ``rpm`` and ``tpm``; a retry that finds no slot waits as ``wait_for_capacity`` allows,
    or gets the error its provider is skipped with (``at_capacity``, ``budget``)."""
    pending = settle(run, ticket, since)
    if pending is not None:
        await pending
    return await admit_waiting(run, ticket.want.name, ticket.want)


def nested(run: Run) -> Token[tuple[Charge, ...]] | None:
    """A nested chain of ``run`` is about to run: the calls of its providers count against
    ``run``'s chain budget too (and against the budgets ``run`` itself is nested in), so
    the outer budget sees all the spend made under it. The token for :func:`unnested`."""
    budget = run.agent.capacity.budget
    if budget is None:
        return None
    charge = Charge(f"agent:{run.agent.name}", budget, "agent")
    return _OUTER.set((*_OUTER.get(), charge))


def unnested(token: Token[tuple[Charge, ...]] | None) -> None:
    """The nested chain :func:`nested` was called for ended."""
    if token is not None:
        _OUTER.reset(token)


def settle(run: Run, ticket: Ticket, since: int) -> Awaitable[None] | None:
    """Settle ``ticket`` with what the call's attempts (``run.log.attempts[since:]``) used;
    an awaitable when the store needs a round trip for it (Redis). Once: a settled ticket
    is left as it is."""
    if ticket.settled:
        return None
    want = ticket.want
    store = ticket.store or store_of(run.agent.health_store, run.agent.clock)
    limits = want.limits
    if not want.charges and (limits is None or limits.tpm is None):
        return store.settle(ticket, None, 0.0)  # nothing counted to correct: the hot path
    mine = (a for a in run.log.attempts[since:] if a.agent == want.name and a.attempt_number)
    tokens, cost = used_by(mine, want.price)
    return store.settle(ticket, tokens, cost)


def every_child_full(attempts: tuple[Attempt, ...] | list[Attempt]) -> RateLimited | None:
    """When every attempt of a failed run was a child at capacity: ``RateLimited`` with
    ``retry_after`` the soonest any frees (None when unknown), else None."""
    if not attempts or any(a.reason != "at_capacity" for a in attempts):
        return None
    frees = [getattr(a.error, "retry_after", None) for a in attempts]
    known = [f for f in frees if f is not None]
    soonest = min(known) if known else None
    return RateLimited("every child is at capacity", status=None, retry_after=soonest)

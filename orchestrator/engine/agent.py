"""FallbackAgent: try children in priority order, retry each under its policy, fall over.

This module holds the public node; one run of it lives in :mod:`orchestrator.engine.run`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, Self

from typing_extensions import TypeVar

from orchestrator.clock import SYSTEM_CLOCK, Clock
from orchestrator.engine.capacity import Capacity, Unpriced
from orchestrator.engine.children import ChainChild, ProviderChild
from orchestrator.engine.classify import Classifier, ErrorMatcher, Only
from orchestrator.engine.deadlines import Watch, watched
from orchestrator.engine.hedging import Hedging, check_hedged
from orchestrator.engine.hooks import check_hooks, takes_four
from orchestrator.engine.run import Run
from orchestrator.engine.streaming import StreamRun
from orchestrator.errors import FallbackError
from orchestrator.keywords import KeywordChecked, provider_for_model
from orchestrator.policy import Jitter, RetryPolicy, Strategy
from orchestrator.routing.router import Keys
from orchestrator.routing.setup import DEFAULT_AFFINITY_TTL, OrderName, router_for
from orchestrator.tasks import blocking_twin
from orchestrator.types import Attempt, Provider, Request, Result, Stop
from orchestrator.units import seconds_or_none

if TYPE_CHECKING:
    from orchestrator.capacity import Budget
    from orchestrator.health import HealthStore, ProviderHealth

__all__ = ["FallbackAgent", "FallbackError", "Result", "Attempt", "Stop"]

OnFallback = Callable[[str, str, BaseException], Any]
OnAllFailed = Callable[[list[BaseException]], Any]
OnRetry = Callable[[str, int, BaseException, float], Any]
BeforeFallback = Callable[[Request, str], "Request | Stop | Awaitable[Request | Stop]"]
Accept = Callable[[Result], bool]
BestEffort = Callable[[Sequence[Attempt]], "str | None"]
MidStream = Literal["raise", "continue"]
#: The ``schema=`` type of a run: its ``Result[SchemaT]``; ``None`` without a schema.
SchemaT = TypeVar("SchemaT", default=None)


class FallbackAgent(KeywordChecked):
    """An ordered chain of providers (or other chains): the first success wins.

    Each child is retried under its :class:`RetryPolicy` (per-child overrides in
    ``policies={name: RetryPolicy(...)}`` or a provider's ``retry_policy``
    attribute), then the chain falls over to the next child with no wait.
    Failures are classified by :mod:`orchestrator.errors`: transient errors
    and invalid output are retried, unusable errors hand over at once, terminal
    errors stop everything. When every child fails, ``on_all_failed`` fires and
    :class:`FallbackError` is raised with every attempt.

    ``retry_on=`` / ``fallback_on=`` (exception types, a tuple, or a predicate)
    *add* to the taxonomy's defaults: ``fallback_on=KeyError`` also hands a
    ``KeyError`` over, and a 503 still fails over. To replace a default set,
    say so: ``retry_on=only(ServerError)`` retries nothing else
    (:func:`orchestrator.only`).

    Hooks come in two kinds. Observational hooks (``on_retry``, ``on_fallback``,
    ``on_all_failed``) only watch: if one raises, the run goes on; the failure
    is a ``hook_failed`` event and a note on the attempt that fired the hook.
    Control hooks (``before_fallback``, ``accept``, ``best_effort``) decide what
    happens (a redactor, a quality gate), so one that raises stops the run with
    :class:`~orchestrator.errors.HookError`: unredacted text never leaves.

    A ``FallbackAgent`` is itself a valid child: chains nest. Use ``run`` from
    async code, ``run_sync`` from scripts, ``stream`` for text as it arrives.

    ``first_token_timeout`` / ``idle_timeout`` (seconds) are the deadlines inside a
    call for children that set none (:mod:`orchestrator.engine.deadlines`);
    ``hedge_after`` (seconds, ``"p95"``: adaptive, ``"auto"``: the default, ``None``: off)
    and ``max_hedges`` start the next child in parallel when the current one is slow to its
    first content (:mod:`orchestrator.engine.hedging`, :mod:`~orchestrator.engine.hedge_delay`).

    When an OpenTelemetry SDK is installed, each run is a span with one CLIENT
    span per attempt, and metrics are recorded (:mod:`orchestrator.telemetry`);
    ``tracing=False`` turns the spans off for this agent, ``capture_content=True``
    adds prompts and replies to the attempt spans (off by default: they may
    hold personal data). ``budget``, ``wait_for_capacity``, ``budget_unpriced``: the chain's
    spend and its children's ``limits`` (:mod:`orchestrator.engine.capacity`).

    ``order`` (``"priority"``, ``"weighted"`` with ``weights=``, ``"least_busy"``, ``"latency"``,
    ``"cost"``), ``run(affinity=KEY)`` and ``affinity_ttl``: :mod:`orchestrator.routing`.
    """

    def __init__(
        self,
        children: Sequence[Provider | FallbackAgent],
        *,
        name: str | None = None,
        max_retries: int | None = None,
        retry_strategy: Strategy | None = None,
        retry_delay: float | timedelta | None = None,
        max_delay: float | timedelta | None = None,
        jitter: Jitter | None = None,
        policy: RetryPolicy | None = None,
        policies: Mapping[str, RetryPolicy] | None = None,
        retry_on: ErrorMatcher | Only | None = None,
        fallback_on: ErrorMatcher | Only | None = None,
        escalate_on_guardrail: bool = False,
        timeout: float | timedelta | None = None,
        attempt_timeout: float | timedelta | None = None,
        schema_retries: int = 1,
        accept: Accept | None = None,
        on_fallback: OnFallback | None = None,
        on_all_failed: OnAllFailed | None = None,
        on_retry: OnRetry | None = None,
        before_fallback: BeforeFallback | None = None,
        best_effort: BestEffort | None = None,
        mid_stream: MidStream = "continue",
        health: HealthStore | bool | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        first_token_timeout: float | timedelta | None = None,
        idle_timeout: float | timedelta | None = None,
        hedge_after: float | timedelta | str | None = "auto",
        max_hedges: int = 1,
        tracing: bool = True,
        capture_content: bool = False,
        order: OrderName = "priority",
        weights: Mapping[str, float] | None = None,
        affinity_ttl: float | timedelta = DEFAULT_AFFINITY_TTL,
        budget: Budget | None = None,
        wait_for_capacity: float | timedelta | None = None,
        budget_unpriced: Unpriced = "dearest",
    ) -> None:
        self.children: tuple[Provider | FallbackAgent, ...] = _check_children(children)
        self.clock: Clock = clock or SYSTEM_CLOCK
        # Deadlines inside a call (engine.deadlines): off unless asked; hedging: see below.
        self.watch = Watch.of(first_token_timeout, idle_timeout, "FallbackAgent")
        self.name: str = name or "fallback(" + ",".join(c.name for c in self.children) + ")"
        self.policy = _agent_policy(
            policy, max_retries, retry_strategy, retry_delay, max_delay, jitter
        )
        self.policies = _child_policies(self.children, self.policy, policies or {})
        # How the engine tries each child: a nested chain runs inside the run, a provider
        # is called and retried.
        self.members: tuple[ChainChild | ProviderChild, ...] = tuple(
            ChainChild(c)
            if isinstance(c, FallbackAgent)
            else ProviderChild(c, p, watched(c, self.watch, self.clock))
            for c, p in zip(self.children, self.policies, strict=True)
        )
        self.names = tuple(m.name for m in self.members)  # a plain run's Result.order
        self.classifier = Classifier(
            retry_on=retry_on, fallback_on=fallback_on, escalate_on_guardrail=escalate_on_guardrail
        )
        self.timeout = seconds_or_none(timeout, "timeout")
        self.attempt_timeout = seconds_or_none(attempt_timeout, "attempt_timeout")
        # Hedging (engine.hedging) on by default when a successor exists (engine.hedge_delay).
        self.hedge = Hedging.of(
            hedge_after, max_hedges, self.children, (self.timeout, self.attempt_timeout)
        )
        #: Whether a call can be hedged at all: hedging on and two providers to pair, in
        #: whatever order a run tries them (else a call pays no hedging check).
        self.hedges = self.hedge is not None and _providers(self.members) > 1
        if hedge_after is not None and hedge_after != "auto":  # the default warns of nothing
            check_hedged(self.members, hedge_after)
        if type(schema_retries) is not int or schema_retries < 0:  # a bool is not a count
            raise ValueError(f"schema_retries: {schema_retries!r} must be an int >= 0")
        self.schema_retries = schema_retries
        if mid_stream not in ("raise", "continue"):
            raise ValueError(f"mid_stream: {mid_stream!r} is not one of raise, continue")
        self.mid_stream: MidStream = mid_stream
        check_hooks(
            {
                "accept": accept,
                "on_fallback": on_fallback,
                "on_all_failed": on_all_failed,
                "on_retry": on_retry,
                "before_fallback": before_fallback,
                "best_effort": best_effort,
            }
        )
        self.accept, self.on_fallback, self.on_all_failed = accept, on_fallback, on_all_failed
        self.on_retry, self.before_fallback = on_retry, before_fallback
        self.best_effort = best_effort
        # on_fallback(from, to, error) or, if it takes a fourth argument, (..., reason).
        self.on_fallback_wants_reason = on_fallback is not None and takes_four(on_fallback)
        self.health_store = _health_store(health)
        self.capacity = Capacity.of(budget, wait_for_capacity, budget_unpriced, self.children)
        self.rng = rng or random.Random()
        # OpenTelemetry (orchestrator.telemetry): spans when an SDK is installed, unless
        # tracing=False; prompts and replies on them only with capture_content=True.
        self.tracing, self.capture_content = bool(tracing), bool(capture_content)
        self.described: dict[str, Any] = {}  # each child's span attributes, made on first use
        self.watched_by: object = None  # the instruments reporting its circuits, once they do
        self.router = router_for(self, order, weights, affinity_ttl)  # orchestrator.routing

    async def run(
        self,
        request: str | Request,
        *,
        schema: type[SchemaT] | None = None,
        timeout: float | timedelta | None = None,
        affinity: str | None = None,
        split_key: str | None = None,
    ) -> Result[SchemaT]:
        """Run the chain once; returns the first success or raises ``FallbackError``.

        ``schema`` (a pydantic model, or any type pydantic validates) asks every
        provider for JSON in its native way and validates the reply into
        ``result.value``: ``run(p, schema=Review)`` is a ``Result[Review]``.
        ``timeout`` overrides the agent's whole-run timeout for this call.
        ``affinity`` / ``split_key`` route by key (:mod:`orchestrator.routing`).
        """
        keys = None if affinity is None and split_key is None else Keys(affinity, split_key)
        run = Run.start(self, _as_request(request), schema, timeout, keys=keys)
        return await run.execute()

    run_sync = blocking_twin(run, "FallbackAgent.run_sync", "await agent.run(...)")

    def stream(
        self,
        request: str | Request,
        *,
        mid_stream: MidStream | None = None,
        timeout: float | timedelta | None = None,
        affinity: str | None = None,
        split_key: str | None = None,
        progress: bool = False,
    ) -> StreamRun:
        """Stream text chunks as they arrive: ``async with agent.stream(p) as s: async for c in s``.

        Failing over is free before the first chunk. After chunks were delivered,
        ``mid_stream`` decides: ``"raise"`` or ``"continue"`` (the next attempt
        continues from the partial text, so no text is seen twice). ``s.result``
        holds the final :class:`Result` once the stream ends. ``progress``: also yield
        :data:`~orchestrator.PROGRESS` for each provider event without text (for relays).
        """
        mode = self.mid_stream if mid_stream is None else mid_stream
        if mode not in ("raise", "continue"):
            raise ValueError(f"mid_stream: {mode!r} is not one of raise, continue")
        keys = Keys.of(affinity, split_key)
        return StreamRun(self, _as_request(request), mode, timeout, keys, progress)

    def health(self) -> dict[str, ProviderHealth]:
        """Each provider's circuit state (needs a health store: ``health=True`` or a store)."""
        if self.health_store is None:
            raise RuntimeError(
                f"FallbackAgent({self.name!r}).health: no health store; "
                "pass health=True (in-process) or health=RedisHealthStore(url)"
            )
        return {c.name: self.health_store.snapshot(c.name) for c in self.children}

    # -- lifecycle: async with FallbackAgent(...) as agent / await agent.aclose() ----------

    async def __aenter__(self) -> Self:
        """Enter the children that have a lifecycle (``__aenter__`` and ``aclose``).

        An entered HTTP provider opens its own connection pool until closed; a
        nested agent enters its own children. If one child fails to enter, the
        ones already entered are closed.
        """
        async with AsyncExitStack() as entered:
            for child in self.children:
                if hasattr(child, "__aenter__") and hasattr(child, "aclose"):
                    await child.__aenter__()
                    entered.push_async_callback(child.aclose)
            entered.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close what the children opened: each child's ``aclose()``, the last child first.

        Every child is closed even if one raises. A provider closes only what it
        opened itself: never a user's ``client=``, never the event loop's shared
        client; the health store is not the agent's to close either.
        """
        async with AsyncExitStack() as closing:
            for child in self.children:
                close = getattr(child, "aclose", None)
                if callable(close):
                    closing.push_async_callback(close)

    def __repr__(self) -> str:
        return f"FallbackAgent(name={self.name!r}, children={[c.name for c in self.children]!r})"


def _providers(members: Sequence[object]) -> int:
    return sum(isinstance(m, ProviderChild) for m in members)


def _as_request(request: str | Request) -> Request:
    if isinstance(request, Request):
        return request
    if isinstance(request, str):
        return Request(request)
    raise TypeError(f"request: expected str or Request, got {type(request).__name__}")


def _check_children(children: Sequence[Provider | FallbackAgent]) -> tuple[Any, ...]:
    if isinstance(children, str | bytes) or not isinstance(children, Sequence):
        raise TypeError(f"children: expected a list of providers, got {type(children).__name__}")
    if not children:
        raise ValueError("children: the list is empty; give at least one provider")
    seen: dict[str, int] = {}
    for i, child in enumerate(children):
        if isinstance(child, str):
            raise TypeError(
                f"children[{i}]: a model name is not a provider; give the provider that "
                f"calls it: {provider_for_model(child)}"
            )
        if not isinstance(child, FallbackAgent) and not (
            isinstance(getattr(child, "name", None), str)
            and callable(getattr(child, "complete", None))
        ):
            raise TypeError(
                f"children[{i}]: {type(child).__name__} is not a provider "
                "(needs a 'name' and 'async complete(request)'); wrap plain functions "
                "in providers.FunctionProvider"
            )
        if child.name in seen:
            raise ValueError(
                f"children[{i}]: name {child.name!r} is already used by "
                f"children[{seen[child.name]}]; give each provider a distinct name=..."
            )
        seen[child.name] = i
    return tuple(children)


def _agent_policy(
    policy: RetryPolicy | None,
    max_retries: int | None,
    strategy: Strategy | None,
    delay: float | timedelta | None,
    max_delay: float | timedelta | None,
    jitter: Jitter | None,
) -> RetryPolicy:
    loose: dict[str, Any] = {
        k: v
        for k, v in (
            ("max_retries", max_retries),
            ("strategy", strategy),
            ("delay", delay),
            ("max_delay", max_delay),
            ("jitter", jitter),
        )
        if v is not None
    }
    if policy is not None:
        if not isinstance(policy, RetryPolicy):
            raise TypeError(f"policy: expected RetryPolicy, got {type(policy).__name__}")
        if loose:
            raise TypeError(
                f"policy: given together with {sorted(loose)}; put those inside RetryPolicy(...)"
            )
        return policy
    return RetryPolicy(**loose)


def _child_policies(
    children: tuple[Any, ...], default: RetryPolicy, overrides: Mapping[str, RetryPolicy]
) -> tuple[RetryPolicy, ...]:
    names = [c.name for c in children]
    for key, pol in overrides.items():
        if key not in names:
            raise ValueError(f"policies: {key!r} names no child; children are {names}")
        if not isinstance(pol, RetryPolicy):
            raise TypeError(f"policies[{key!r}]: expected RetryPolicy, got {type(pol).__name__}")
        if isinstance(children[names.index(key)], FallbackAgent):
            raise ValueError(
                f"policies: {key!r} is a nested FallbackAgent, which is never retried as a whole; "
                "set the policy on that agent (policy= or its own policies=)"
            )
    out = []
    for c in children:
        own = getattr(c, "retry_policy", None)
        out.append(overrides.get(c.name) or (own if isinstance(own, RetryPolicy) else default))
    return tuple(out)


def _health_store(health: Any) -> HealthStore | None:
    if health is None or health is False:
        return None
    from orchestrator.health.model import store_from  # the health package only when used

    return store_from(health)

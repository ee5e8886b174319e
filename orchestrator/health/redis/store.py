"""RedisHealthStore: circuits and the retry budget shared by many processes through Redis.

Every call is answered from a local mirror (the same state machine as the
memory store) and never waits on the network. A background asyncio task,
started lazily on the first call made inside a running loop, pushes what this
process recorded (Lua scripts, one pipelined round trip per tick: :mod:`.exchange`)
and pulls the shared state every ``sync_interval`` seconds, so a change made by one
process is seen by the others within about two intervals plus one round trip.
If Redis is unreachable or slow, the mirror keeps working alone, one
``health_store_degraded`` warning is emitted per outage, and the task
reconnects (``health_store_recovered``) and re-publishes circuits it opened
meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import socket
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from orchestrator import events
from orchestrator.capacity.redis import RedisCapacity
from orchestrator.clock import SYSTEM_CLOCK, Clock
from orchestrator.health.machine import BudgetWindow, CircuitTable
from orchestrator.health.model import (
    Admission,
    CircuitBreaker,
    ProviderHealth,
    RetryBudget,
)
from orchestrator.health.redis.exchange import Exchange, Op, Outbox, Shared, enqueue, replayed
from orchestrator.health.redis.link import close_client, connect, listen, safe_url
from orchestrator.health.redis.routing import SharedRouting
from orchestrator.tasks import cancel_and_wait, raise_if_cancel_requested
from orchestrator.units import seconds

__all__ = ["RedisHealthStore"]

_RECONNECT_DELAY = 0.2


class RedisHealthStore:
    """Circuit breakers and a retry budget shared through Redis by every process using ``url``.

    Use it when several processes or hosts call the same providers: one
    process's failures open the circuit for all, cooldowns are Redis keys with
    expiry, only one process gets the half-open probe, and the retry budget
    counts the whole fleet's requests. All calls are synchronous and local;
    sharing happens in the background (see the module docstring), so the
    fleet-wide budget can be overspent by what other processes spend within
    one ``sync_interval``. Like every store it records what the engine tells
    it; the engine decides what counts. Needs the ``redis`` extra. Call
    :meth:`aclose` when done. Rate limits and budgets (``capacity``) are exact
    instead: one atomic script per call (:mod:`orchestrator.capacity.redis`);
    ``replicas`` is how many processes share them, for the local share each
    takes while Redis is down.
    """

    def __init__(
        self,
        url: str,
        *,
        circuit: CircuitBreaker | None = None,
        budget: RetryBudget | None = None,
        clock: Clock | None = None,
        key_prefix: str = "failover:",
        sync_interval: float | timedelta = 0.05,
        timeout: float | timedelta = 0.25,
        replicas: int = 1,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(
                f"RedisHealthStore: url={safe_url(str(url))!r} must be a redis://, rediss:// "
                "or unix:// URL"
            )
        self.url = url
        self.circuit = circuit if circuit is not None else CircuitBreaker()
        self.budget = budget if budget is not None else RetryBudget()
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self.key_prefix = key_prefix
        self.sync_interval = seconds(sync_interval, "RedisHealthStore.sync_interval")
        self.timeout = seconds(timeout, "RedisHealthStore.timeout")
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: Rate limits and budgets, one atomic round trip per call (``replicas``: see there).
        self.capacity = RedisCapacity(
            url, key_prefix=key_prefix, timeout=max(1.0, self.timeout), replicas=replicas,
            clock=self.clock,
        )  # fmt: skip
        self._exchange = Exchange(
            key_prefix=key_prefix,
            circuit=self.circuit,
            budget=self.budget,
            sync_interval=self.sync_interval,
            owner=self.owner,
        )
        self._table = CircuitTable(self.circuit, self.clock, probe_gate=self._probe_gate)
        #: Routing figures, mirrored through Redis on each tick (:mod:`.routing`).
        self.routing = SharedRouting(self.clock, key_prefix, self.owner, self.sync_interval)
        self._local_budget = BudgetWindow(self.budget, self.clock)
        self._ops: list[Op] = []  # to push in the next round trip
        self._dirty: set[str] = set()  # providers whose local state changed since the last push
        self._requests = 0  # recorded since the last push
        self._retries = 0
        self._remote_budget: tuple[int, int] | None = None  # fleet (requests, retries)
        self._remote_window: dict[str, tuple[int, int]] = {}  # provider -> fleet (fails, calls)
        self._claims: dict[str, float] = {}  # provider -> monotonic end of our probe claim
        self._want_claim: set[str] = set()
        self._synced = False  # Redis answered the last tick
        self._degraded = False
        self._republish = False
        self._closed = False
        # Round trips begun (connecting included), and the numbers of the last one that
        # answered and the last one that failed: what ``sync`` waits on.
        self._ticks_started = self._tick_answered = self._tick_failed = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    # -- the synchronous interface (local, never raises because of Redis) ----------------

    def admit(self, provider: str) -> Admission:
        """May ``provider`` be called now? Answered from the local mirror."""
        self._kick(urgent=False)
        admission = self._table.admit(provider)
        if not admission.allowed and self._synced:
            until = admission.open_until
            lead = 2 * self.sync_interval
            if until is None or until - self.clock.wall() <= lead:
                self._want_claim.add(provider)  # someone here wants the probe: claim it
                self._kick(urgent=True)
        return admission

    def record_success(self, provider: str) -> None:
        """A call succeeded; closes a half-open circuit here now and for all soon."""
        probe = self._record(provider, failed=False, retry_after=None)
        enqueue(self._ops, "s", provider, None)
        self._kick(urgent=probe)

    def record_failure(self, provider: str, *, retry_after: float | None = None) -> None:
        """A counted failure; pushed to Redis at once so other processes see it."""
        self._record(provider, failed=True, retry_after=retry_after)
        # Capped here, once, so the shared circuit honours the same max_cooldown.
        enqueue(self._ops, "f", provider, self.circuit.hold_for(retry_after) or None)
        self._kick(urgent=True)

    def _record(self, provider: str, *, failed: bool, retry_after: float | None) -> bool:
        """Record in the mirror, marking the provider dirty when its circuit changed; True
        when this process held the provider's probe claim."""
        probe = self._claims.pop(provider, None) is not None
        circuit = self._table.get(provider)
        before = (circuit.tripped, circuit.open_until)
        self._table.record(provider, failed=failed, retry_after=retry_after)
        if (circuit.tripped, circuit.open_until) != before:
            self._dirty.add(provider)
        return probe

    def last_resort(self, provider: str) -> bool:
        """Every circuit is open: may this run call ``provider``? One at a time per process.

        The slot is this process's own (not shared through Redis): a fleet of N
        processes sends at most N last-resort calls per provider at a time.
        """
        return self._table.acquire_last_resort(provider)

    def end_last_resort(self, provider: str, *, succeeded: bool) -> None:
        """The last-resort call ended; its success closes the circuit here and for all."""
        if self._table.release_last_resort(provider, succeeded=succeeded):
            self._dirty.add(provider)
            enqueue(self._ops, "c", provider, None)
            self._kick(urgent=True)

    def record_request(self) -> None:
        """One run started: counts toward the fleet-wide retry allowance."""
        self._local_budget.record_request()
        self._requests += 1
        self._kick(urgent=False)

    def try_acquire_retry(self) -> bool:
        """Take a retry token from the fleet budget (as last seen plus local spending)."""
        self._kick(urgent=False)
        remote = self._remote_budget
        if remote is None or not self._synced:
            granted = self._local_budget.try_acquire()
        else:
            requests = remote[0] + self._requests
            granted = remote[1] + self._retries + 1 <= self.budget.allowance(requests)
            if granted:
                self._local_budget.retries.append(self.clock.now())
        if granted:
            self._retries += 1
        return granted

    def snapshot(self, provider: str) -> ProviderHealth:
        """The provider's circuit as this process sees it now."""
        self._kick(urgent=False)
        local = self._table.snapshot(provider)
        shared = self._remote_window.get(provider) if self._synced else None
        if shared is None:
            return local
        return dataclasses.replace(local, recent_failures=shared[0], recent_calls=shared[1])

    async def sync(self, providers: Iterable[str] = (), *, timeout: float | None = None) -> bool:
        """Wait for a round trip with Redis covering ``providers``, so ``admit`` and ``snapshot``
        show the fleet's circuits before this process's first call (for one-shot commands).
        False as soon as a round trip fails (connection refused, wrong password), or if
        Redis did not answer in ``timeout`` (default: connect plus a round trip)."""
        for provider in providers:
            self._table.get(provider)
        wanted = self._ticks_started + 1  # a round trip under way may predate ``providers``
        self._kick(urgent=True)
        limit = timeout if timeout is not None else max(self.timeout, 1.0) + 3 * self.timeout
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit):
                # A refused connection or a wrong password fails the round at once: no
                # reason to wait out the limit (every ``failover run`` would pay it).
                while max(self._tick_answered, self._tick_failed) < wanted:
                    await asyncio.sleep(min(self.sync_interval, 0.01))
        return self._tick_answered >= wanted

    async def aclose(self) -> None:
        """Push what is pending (briefly), stop the background task and close the connection."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            if self._wake is not None:
                self._wake.set()
            try:
                # asyncio.timeout, not wait_for: 3.11's wait_for can drop a cancellation that
                # lands as the awaited task finishes.
                async with asyncio.timeout(self.timeout * 2):
                    await asyncio.shield(task)
            except Exception:  # TimeoutError included
                await cancel_and_wait(task)
        await self.capacity.aclose()

    @property
    def state(self) -> str:
        """``"ok"`` (Redis answered the last sync), ``"degraded"`` (it does not answer: local
        state meanwhile) or ``"idle"`` (not synced yet: no call so far). For readiness probes."""
        if self._degraded:
            return "degraded"
        return "ok" if self._synced else "idle"

    def __repr__(self) -> str:
        return f"RedisHealthStore({safe_url(self.url)!r}, key_prefix={self.key_prefix!r})"

    # -- local bookkeeping ---------------------------------------------------------------

    def _probe_gate(self, provider: str) -> bool:
        if not self._synced:
            return True  # Redis unknown or down: decide locally
        return self._claims.get(provider, 0.0) > self.clock.now()

    def _kick(self, *, urgent: bool) -> None:
        """Start the sync task if needed (only inside a running loop); wake it if urgent."""
        if self._closed:
            return
        task = self._task
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: the mirror alone answers
        if task is None or task.done() or self._loop is not loop:
            self._loop = loop
            self._wake = asyncio.Event()
            self._synced = False
            self._task = loop.create_task(self._run(), name=f"health-sync:{self.key_prefix}")
        elif urgent and self._wake is not None:
            self._wake.set()

    # -- the background sync -------------------------------------------------------------

    async def _run(self) -> None:
        client: Any = None
        listener: asyncio.Task[None] | None = None
        shas: dict[str, str] = {}
        try:
            while True:
                raise_if_cancel_requested()  # redis-py may have swallowed one: see there
                closing = self._closed
                self._ticks_started += 1
                number = self._ticks_started
                try:
                    if client is None:
                        client, shas = await connect(self.url, self.timeout)
                        listener = asyncio.create_task(
                            listen(self.url, self._exchange.channel, self._wake_up)
                        )
                    async with asyncio.timeout(self.timeout * 2):
                        await self._tick(client, shas)
                    self._tick_answered = number
                    self._on_healthy()
                except Exception as exc:  # any Redis or network failure: degrade, never raise
                    self._tick_failed = number
                    self._on_outage(exc)
                    await self._stop(client, listener)
                    client = listener = None
                    if closing:
                        return
                    await asyncio.sleep(_RECONNECT_DELAY)
                    continue
                if closing:
                    return
                await self._idle()
        finally:
            await self._stop(client, listener)

    async def _idle(self) -> None:
        """Sleep until the next tick: ``sync_interval``, or sooner when woken."""
        wake = self._wake
        if wake is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.sync_interval):
                    await wake.wait()
            wake.clear()

    def _wake_up(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _stop(self, client: Any, listener: asyncio.Task[None] | None) -> None:
        if listener is not None:
            await cancel_and_wait(listener)
        await close_client(client)

    def _on_healthy(self) -> None:
        self._synced = True
        if self._degraded:
            self._degraded = False
            events.emit("info", "health_store_recovered", store="redis", url=safe_url(self.url))

    def _on_outage(self, exc: BaseException) -> None:
        self._synced = False
        self._republish = True
        self._claims.clear()
        self._want_claim.clear()
        self._ops.clear()  # the mirror already reflects them; replaying stale counts misleads
        self._dirty.clear()
        self._requests = self._retries = 0
        if not self._degraded:
            self._degraded = True
            events.emit(
                "warning",
                "health_store_degraded",
                store="redis",
                url=safe_url(self.url),
                error_type=type(exc).__name__,
                detail="Redis unreachable or slow; using local state until it is back",
            )

    async def _tick(self, client: Any, shas: dict[str, str]) -> None:
        """One round trip: push ops, budget counts and probe claims, then read shared state."""
        wall, now = self.clock.wall(), self.clock.now()
        ops, self._ops = self._ops, []
        self._dirty.clear()
        requests, retries = self._requests, self._retries
        claims = list(self._want_claim)
        self._want_claim.clear()
        republish, self._republish = self._republish, False
        reopen = [  # after an outage: the circuits opened meanwhile and still open
            (c.provider, self._table.to_wall(c.open_until), c.consecutive)
            for c in (self._table if republish else ())
            if c.tripped and c.open_until > now
        ]
        providers = [c.provider for c in self._table]
        out = Outbox(ops, reopen, claims, requests, retries, providers)
        won, shared, budget = await self._exchange.round_trip(client, shas, wall, out)
        self._requests -= requests
        self._retries -= retries
        for provider in won:
            self._claims[provider] = now + self._exchange.claim_ttl
        self._apply(shared)
        self._remote_budget = budget
        await self.routing.exchange(client)

    def _apply(self, shared: dict[str, Shared]) -> None:
        """Adopt the shared state for every provider with nothing of ours still unpushed."""
        now, wall = self.clock.now(), self.clock.wall()
        for provider, circuit in shared.items():
            if provider in self._dirty:
                continue  # a local state change newer than this read is on its way: keep it
            self._remote_window[provider] = (circuit.fails, circuit.calls)
            until = circuit.open_until
            self._table.adopt(
                provider,
                tripped=circuit.tripped,
                open_until=None if until is None else now + (until - wall),
                consecutive=replayed(circuit.consecutive, self._ops, provider),
            )
            if circuit.probe != self.owner:
                self._claims.pop(provider, None)

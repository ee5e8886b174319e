"""One round trip between a RedisHealthStore and Redis: what it pushes, what it reads back.

The store gathers what this process recorded since the last round trip (an
:class:`Outbox`); :meth:`Exchange.round_trip` sends it as one pipeline of the
scripts' calls, in the argument order :mod:`~orchestrator.health.redis.scripts`
documents, and returns the fleet's state as :class:`Shared` values. Nothing here
holds state between round trips: deciding what to adopt is the store's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.health.model import CircuitBreaker, RetryBudget
from orchestrator.health.redis.scripts import circuit_keys, window_keys

__all__ = ["Exchange", "Op", "Outbox", "Shared", "enqueue", "replayed"]

#: One call of the RECORD script: (kind, provider, n, retry-after hint); kind is "s" for
#: n successes, "f" a failure, "c" a last-resort success.
Op = tuple[str, str, int, float | None]


def enqueue(ops: list[Op], kind: str, provider: str, hint: float | None) -> None:
    """Add one recorded outcome to ``ops``, a run of one provider's successes as one op."""
    if ops and ops[-1][0] == kind == "s" and ops[-1][1] == provider:
        ops[-1] = (kind, provider, ops[-1][2] + 1, None)
    else:
        ops.append((kind, provider, 1, hint))
    if len(ops) > 10_000:  # Redis gone for long: the mirror holds the truth meanwhile
        del ops[:5_000]


def replayed(consecutive: int, unpushed: list[Op], provider: str) -> int:
    """The shared count of ``provider``'s failures in a row, with this process's outcomes
    recorded since the read was sent (``unpushed``, in order) counted on top: a read
    that left before them must not take them back (the circuit would trip a call late)."""
    for kind, name, _, _ in unpushed:
        if name == provider:
            consecutive = consecutive + 1 if kind == "f" else 0
    return consecutive


@dataclass(frozen=True, slots=True)
class Outbox:
    """What one process pushes in a round trip.

    ``ops`` are the RECORD script's calls (:data:`Op`),
    ``reopen`` (provider, open until in wall seconds, consecutive failures) the circuits
    opened during an outage, ``claims`` the providers whose half-open probe it wants,
    ``requests``/``retries`` its budget counts, ``providers`` those whose state it reads.
    """

    ops: list[Op]
    reopen: list[tuple[str, float, int]]
    claims: list[str]
    requests: int
    retries: int
    providers: list[str]


@dataclass(frozen=True, slots=True)
class Shared:
    """One provider's circuit as the fleet shares it (``open_until`` in wall seconds;
    ``probe`` the owner holding the half-open probe, "" for none)."""

    tripped: bool
    open_until: float | None
    consecutive: int
    calls: int
    fails: int
    probe: str


@dataclass(frozen=True, slots=True)
class Exchange:
    """The round trip of one store: its key prefix, its breaker and budget settings."""

    key_prefix: str
    circuit: CircuitBreaker
    budget: RetryBudget
    sync_interval: float
    owner: str

    @property
    def channel(self) -> str:
        """Where a process that changed a circuit tells the others to read at once."""
        return f"{self.key_prefix}changes"

    @property
    def claim_ttl(self) -> float:
        """How long a probe claim lasts: a lost probe (crashed process) frees it after this."""
        return self.circuit.cooldown + 4 * self.sync_interval

    def _keys(self, provider: str, wall: float) -> list[str]:
        return circuit_keys(self.key_prefix, provider, self.circuit.window, wall)

    async def round_trip(
        self, client: Any, shas: dict[str, str], wall: float, out: Outbox
    ) -> tuple[list[str], dict[str, Shared], tuple[int, int]]:
        """Push ``out`` and read the shared state in one pipeline: (the claims won, each
        provider's shared circuit, the fleet's budget (requests, retries))."""
        pipe = client.pipeline(transaction=False)
        self._push(pipe, shas, wall, out)
        claim_at = len(pipe.command_stack)
        for provider in out.claims:
            keys = self._keys(provider, wall)[:3]
            lead = repr(2 * self.sync_interval)
            ttl = int(self.claim_ttl * 1000)
            pipe.evalsha(shas["claim"], 3, *keys, repr(wall), self.owner, lead, ttl)
        budget_keys = window_keys(f"{self.key_prefix}budget:", self.budget.window, wall)
        if out.requests or out.retries:
            pipe.hincrby(budget_keys[0], "req", out.requests)
            pipe.hincrby(budget_keys[0], "retry", out.retries)
            pipe.pexpire(budget_keys[0], self._bucket_ttl())
        read_keys = [key for p in out.providers for key in self._keys(p, wall)] + budget_keys
        pipe.evalsha(shas["read"], len(read_keys), *read_keys, repr(wall), len(out.providers))
        results = await pipe.execute()
        won = results[claim_at : claim_at + len(out.claims)]
        claimed = [p for p, w in zip(out.claims, won, strict=True) if w == 1]
        read = results[-1]
        return claimed, _shared(out.providers, read), (int(read[-2]), int(read[-1]))

    def _bucket_ttl(self) -> int:
        return int(max(self.circuit.window, self.budget.window) * 2000)

    def _push(self, pipe: Any, shas: dict[str, str], wall: float, out: Outbox) -> None:
        """Queue the recorded ops, then the circuits to re-publish after an outage."""
        circuit = self.circuit
        for kind, provider, n, hint in out.ops:
            args = [kind, n, repr(wall), "" if hint is None else repr(float(hint))]
            args += [circuit.failure_threshold or 0, circuit.failure_ratio or 0]
            args += [circuit.min_calls, repr(circuit.cooldown), self._bucket_ttl(), self.channel]
            keys = self._keys(provider, wall)
            pipe.evalsha(shas["record"], len(keys), *keys, *args)
        for provider, until, consecutive in out.reopen:
            keys = self._keys(provider, wall)[:2]
            pipe.evalsha(shas["reopen"], 2, *keys, repr(wall), repr(until), consecutive)


def _shared(providers: list[str], read: list[Any]) -> dict[str, Shared]:
    """The READ script's reply: six fields per provider, in ``providers``' order."""
    out: dict[str, Shared] = {}
    for i, provider in enumerate(providers):
        tripped, open_raw, consec, calls, fails, probe = read[i * 6 : i * 6 + 6]
        out[provider] = Shared(
            tripped=tripped == "1",
            open_until=float(open_raw) if open_raw else None,
            consecutive=int(consec),
            calls=int(calls),
            fails=int(fails),
            probe=probe,
        )
    return out

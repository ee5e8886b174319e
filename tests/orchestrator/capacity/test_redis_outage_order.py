"""RedisCapacity says "degraded" once per outage, whatever order in-flight round trips end in.

CI saw two ``capacity_store_degraded`` events for one Redis restart: a round trip sent before
the outage came back *after* another call's failure had declared it, "recovered" the store,
and the next failure declared a second outage. Round trips here are futures the test ends in
the order it wants (no Redis, no sleeps).
"""

from __future__ import annotations

import asyncio
from typing import Any

from orchestrator.capacity.model import Ticket, Want
from orchestrator.capacity.redis import RedisCapacity
from orchestrator.capacity.values import Limits
from orchestrator.testing import capture_events


class _Scripts:
    """Stands in for the registered TAKE script: each call waits on a future the test ends."""

    def __init__(self) -> None:
        self.pending: list[asyncio.Future[Any]] = []

    def __call__(self, **_: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        return future


def _store() -> tuple[RedisCapacity, _Scripts]:
    store = RedisCapacity("redis://unused", replicas=2, retry_after=0.0)
    take = _Scripts()
    store._script_for_loop = lambda: (take, None)  # type: ignore[method-assign]
    return store, take


WANT = Want("p", Limits(rpm=100), 0, (), 0.0)


async def _settle_loop() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_a_reply_sent_before_the_outage_does_not_end_it() -> None:
    store, take = _store()
    with capture_events() as seen:
        early = asyncio.ensure_future(store.take(WANT))  # sent while Redis was up
        late = asyncio.ensure_future(store.take(WANT))
        await _settle_loop()
        take.pending[1].set_exception(ConnectionError("refused"))  # the outage is declared
        await _settle_loop()
        take.pending[0].set_result(["ok", 0])  # ...then the earlier reply arrives
        assert isinstance(await early, Ticket) and isinstance(await late, Ticket)
        again = asyncio.ensure_future(store.take(WANT))  # retry_after=0: asks Redis again
        await _settle_loop()
        take.pending[2].set_exception(ConnectionError("refused"))  # still the same outage
        assert isinstance(await again, Ticket)
    names = [e["event"] for e in seen]
    assert names.count("capacity_store_degraded") == 1, names
    assert "capacity_store_recovered" not in names


async def test_a_failure_sent_before_recovery_does_not_start_a_new_outage() -> None:
    store, take = _store()
    with capture_events() as seen:
        first = asyncio.ensure_future(store.take(WANT))
        await _settle_loop()
        take.pending[0].set_exception(ConnectionError("refused"))  # outage 1
        await first
        stale = asyncio.ensure_future(store.take(WANT))  # sent during the outage
        fresh = asyncio.ensure_future(store.take(WANT))
        await _settle_loop()
        take.pending[2].set_result(["ok", 0])  # Redis is back
        await _settle_loop()
        take.pending[1].set_exception(TimeoutError())  # the old round trip times out late
        assert isinstance(await stale, Ticket) and isinstance(await fresh, Ticket)
        assert store._down_until is None  # a failure from before the recovery: still up
    names = [e["event"] for e in seen]
    assert names == ["capacity_store_degraded", "capacity_store_recovered"], names


async def test_a_new_failure_after_recovery_is_a_new_outage() -> None:
    store, take = _store()
    with capture_events() as seen:
        for i, outcome in enumerate([ConnectionError("x"), ["ok", 0], ConnectionError("y")]):
            call = asyncio.ensure_future(store.take(WANT))
            await _settle_loop()
            if isinstance(outcome, BaseException):
                take.pending[i].set_exception(outcome)
            else:
                take.pending[i].set_result(outcome)
            await call
    names = [e["event"] for e in seen if e["event"].startswith("capacity_store")]
    assert names == [
        "capacity_store_degraded",
        "capacity_store_recovered",
        "capacity_store_degraded",
    ]

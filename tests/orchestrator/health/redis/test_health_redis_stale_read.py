"""A read sent before this process's latest outcomes must not take them back.

The sync loop pushes what was recorded and reads the shared circuits in one round trip.
Under load a failure recorded *while* that round trip is out is not in its read; adopting
the read's consecutive-failure count then lost it, so the third failure in a row left the
circuit closed and a fourth call went to the failing provider (seen in CI:
test_workers_redis.py, 4 calls where 3 open the circuit). No Redis here: the read is given.
"""

from __future__ import annotations

from orchestrator.health import CircuitBreaker
from orchestrator.health.redis.exchange import Shared
from orchestrator.health.redis.store import RedisHealthStore


def _store() -> RedisHealthStore:
    # Outside a running loop the store never syncs by itself: the test drives it.
    circuit = CircuitBreaker(failure_threshold=3, cooldown=60)
    return RedisHealthStore("redis://127.0.0.1:1", circuit=circuit)


def _read(consecutive: int) -> dict[str, Shared]:
    return {"a": Shared(False, None, consecutive, consecutive, consecutive, "")}


def test_a_failure_recorded_during_a_round_trip_survives_its_read() -> None:
    store = _store()
    store.record_failure("a")
    store._ops.clear()  # pushed by a round trip whose read says one failure in a row
    store.record_failure("a")  # recorded while that round trip was out: not in its read
    store._apply(_read(1))
    assert store.snapshot("a").consecutive_failures == 2
    store.record_failure("a")
    assert store.snapshot("a").state == "open"
    assert not store.admit("a").allowed


def test_a_success_recorded_during_a_round_trip_still_resets_the_count() -> None:
    store = _store()
    store.record_failure("a")
    store.record_failure("a")
    store._ops.clear()
    store.record_success("a")
    store._apply(_read(2))
    assert store.snapshot("a").consecutive_failures == 0


def test_with_nothing_unpushed_the_read_is_adopted() -> None:
    store = _store()
    store._apply(_read(2))  # two failures elsewhere
    assert store.snapshot("a").consecutive_failures == 2

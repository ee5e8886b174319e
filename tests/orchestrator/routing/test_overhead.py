"""What keeps routing cheap per call (bench/routing.py measures the CPU; these pin the
work that is skipped): a conversation's key is hashed once, never kept in the clear;
least_busy reads one count while the first child is idle; a run builds no event fields
while events are off; the system clock is ``time.monotonic`` itself."""

from __future__ import annotations

import functools
import hashlib
import random
import sys
import time
from typing import Any

import pytest

from orchestrator import FallbackAgent, Request, Response, Split, events
from orchestrator.clock import SYSTEM_CLOCK
from orchestrator.engine import run as run_module
from orchestrator.health import MemoryHealthStore
from orchestrator.routing import state as state_module
from orchestrator.testing import FakeClock


class Instant:
    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Request) -> Response:
        return Response("ok")


def _kids() -> list[Instant]:
    return [Instant("a"), Instant("b"), Instant("c")]


class _CountingHashlib:
    """``hashlib`` whose ``blake2b`` counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def blake2b(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return hashlib.blake2b(*args, **kwargs)


async def test_a_conversations_key_is_hashed_once_across_its_turns_and_never_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = _CountingHashlib()
    monkeypatch.setattr(state_module, "hashlib", counting)
    monkeypatch.setattr(state_module, "_DIGESTS", {}, raising=False)  # none from earlier tests
    agent = FallbackAgent(_kids(), health=MemoryHealthStore(), hedge_after=None)
    for turn in range(50):
        key = "".join(["conversation-", str(1234 + turn * 0)])  # a new str each turn
        assert (await agent.run(f"turn {turn}", affinity=key)).handled_by == "a"
    assert counting.calls == 1  # main: 50 (once per run)
    cache = state_module._DIGESTS
    assert cache and all(isinstance(k, int) for k in cache)  # hashes, not the key
    assert "conversation-1234" not in repr(cache)


def test_the_digest_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state_module, "_DIGESTS", {})
    for i in range(10_000):
        state_module.scoped_digest("agent", f"user-{i}")
    assert 0 < len(state_module._DIGESTS) <= 4096
    again = state_module.scoped_digest("agent", "user-9999")
    assert again == state_module.key_digest("agent\0user-9999")


async def test_least_busy_reads_one_count_while_the_first_child_is_idle() -> None:
    store = MemoryHealthStore()
    agent = FallbackAgent(_kids(), order="least_busy", health=store, hedge_after=None)
    asked: list[str] = []
    in_flight = store.routing.in_flight

    def counted(child: str) -> int:
        asked.append(child)
        return in_flight(child)

    store.routing.in_flight = counted  # type: ignore[method-assign]
    for _ in range(10):
        await agent.run("hi")
    assert asked == ["a"] * 10  # main: a, b, c per run
    store.routing.began("a")  # now a is busy: every count is read, b goes first
    assert (await agent.run("hi")).order == ("b", "c", "a")


async def test_a_routed_run_builds_no_event_fields_while_events_are_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[object] = []
    routed = run_module.routed

    def counted(run: Any) -> dict[str, Any]:
        built.append(run)
        return routed(run)

    monkeypatch.setattr(run_module, "routed", counted)
    agent = FallbackAgent(_kids(), order="cost", hedge_after=None)
    with events.enabled(False):
        await agent.run("hi")
    assert built == []  # main: one dict per run, for an event nobody receives
    with events.enabled(True):
        await agent.run("hi")
    assert len(built) == 1


def test_the_system_clock_is_the_time_functions_themselves() -> None:
    # The engine asks the time several times per call: a method around them cost 0.3 us.
    assert SYSTEM_CLOCK.now is time.monotonic and SYSTEM_CLOCK.wall is time.time
    assert abs(SYSTEM_CLOCK.now() - time.monotonic()) < 1.0


def _python_calls(run: Any) -> int:
    """Python function calls (frames) made while ``run()``'s coroutine runs to its end
    (the test's children answer at once: it never suspends), the fake clock's not counted
    (the system clock's ``now`` is ``time.monotonic``, no frame)."""
    frames = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal frames
        frames += event == "call" and frame.f_code not in CLOCK_CODE

    coroutine = run()
    sys.setprofile(count)
    try:
        coroutine.send(None)
    except StopIteration:
        pass
    finally:
        sys.setprofile(None)
    return frames


CLOCK_CODE = {FakeClock.now.__code__, FakeClock.wall.__code__}
#: Python calls each strategy adds to a run over priority, at most (main: weighted 2,
#: cost 2, split 3, least_busy 7, latency 5, affinity 4).
ADDED_CALLS = {
    "weighted": 2,  # the seam, the strategy
    "cost": 2,
    "split": 2,  # the seam, its weighted draw (the arm is looked up in the seam)
    "least_busy": 4,  # ... and one began and one ended (the memory state's counts: no call)
    "latency": 3,  # ... and one sample, batched (the order is reused for 50 ms)
    "affinity": 4,  # the keys, the seam, the holder, the served turn
}


async def test_each_strategy_adds_at_most_a_few_python_calls_per_run(clock: FakeClock) -> None:
    store = MemoryHealthStore(clock=clock)

    def chain(**kw: Any) -> FallbackAgent:
        return FallbackAgent(_kids(), health=store, hedge_after=None, clock=clock, **kw)

    runs: dict[str, Any] = {
        order: functools.partial(chain(order=order).run, "hi")
        for order in ("priority", "weighted", "cost", "least_busy", "latency")
    }
    runs["affinity"] = functools.partial(chain().run, "hi", affinity="conversation-1")
    split = Split({"x": 0.5, "y": 0.5}, children=_kids()[:2], health=store, hedge_after=None)
    runs["split"] = functools.partial(split.run, "hi")
    for run in runs.values():
        for _ in range(5):  # first runs explore, and make what later runs reuse
            await run()
    base = _python_calls(runs["priority"])
    added = {name: _python_calls(run) - base for name, run in runs.items() if name != "priority"}
    assert added == {name: min(added[name], most) for name, most in ADDED_CALLS.items()}, added


async def test_a_conversations_turns_read_and_write_the_store_once_a_second(
    clock: FakeClock,
) -> None:
    store = MemoryHealthStore(clock=clock)
    agent = FallbackAgent(_kids(), health=store, hedge_after=None, clock=clock, max_retries=0)
    reads: list[str] = []
    writes: list[str] = []
    affinity, keep = store.routing.affinity, store.routing.keep

    def read(digest: str) -> str | None:
        reads.append(digest)
        return affinity(digest)

    def write(digest: str, child: str, ttl: float) -> None:
        writes.append(child)
        keep(digest, child, ttl)

    store.routing.affinity, store.routing.keep = read, write  # type: ignore[method-assign]
    for _ in range(50):  # 50 turns in half a second
        assert (await agent.run("hi", affinity="conversation-1")).handled_by == "a"
        clock.advance(0.01)
    assert (len(reads), writes) == (1, ["a"])  # main: 50 reads, 50 writes
    clock.advance(1.0)
    await agent.run("hi", affinity="conversation-1")
    assert (len(reads), writes) == (2, ["a", "a"])  # a second on: read, and its ttl touched
    store.record_failure("a", retry_after=60)  # a's circuit opens: the key moves at once
    await agent.run("hi", affinity="conversation-1")
    assert writes[-1] == "b" and store.routing.affinity(reads[0]) == "b"
    assert "conversation-1" not in repr(agent.router.recent)  # remembered by hash only


async def test_a_nested_chains_turns_write_the_store_once_a_second_at_each_level(
    clock: FakeClock,
) -> None:
    store = MemoryHealthStore(clock=clock)
    inner = FallbackAgent(_kids()[:2], health=store, hedge_after=None, clock=clock, name="inner")
    outer = FallbackAgent([inner, Instant("c")], health=store, hedge_after=None, clock=clock)
    writes: list[str] = []
    keep = store.routing.keep

    def write(digest: str, child: str, ttl: float) -> None:
        writes.append(child)
        keep(digest, child, ttl)

    store.routing.keep = write  # type: ignore[method-assign]
    for _ in range(50):
        assert (await outer.run("hi", affinity="conversation-1")).handled_by == "a"
        clock.advance(0.01)
    assert sorted(writes) == ["a", "inner"]  # main: 50 of each
    clock.advance(1.0)
    await outer.run("hi", affinity="conversation-1")
    assert sorted(writes) == ["a", "a", "inner", "inner"]  # the ttl refreshed, at each level


async def test_latency_samples_reach_the_state_in_batches_with_the_same_figures(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryHealthStore(clock=clock)
    agent = FallbackAgent(_kids(), order="latency", health=store, hedge_after=None, clock=clock)
    one_by_one: list[tuple[str, float, float]] = []  # the same samples, told one at a time
    batches: list[int] = []
    observe_many = state_module.MemoryRouting.observe_many

    def counted(self: Any, samples: Any) -> None:
        samples = list(samples)
        if self is store.routing:
            batches.append(len(samples))
            one_by_one.extend(samples)
        observe_many(self, samples)

    monkeypatch.setattr(state_module.MemoryRouting, "observe_many", counted)
    for i in range(40):  # 40 calls in 0.2 s: the order is made again every 50 ms
        result = await agent.run("hi")
        clock.advance(0.005 * (1 + i % 2))
        assert result.attempts[-1].agent in "abc"
    assert len(batches) < 10 and sum(batches) < 40  # main: 40 calls into the state, one each
    agent.router.state(agent)  # whoever reads the figures gets every sample in them
    assert sum(batches) == 40
    alone = state_module.MemoryRouting(clock)
    for sample in one_by_one:
        observe_many(alone, [sample])
    for name in "abc":
        assert store.routing.averages.get(name) == alone.averages.get(name)


def test_a_batch_of_samples_moves_the_figures_exactly_as_one_at_a_time(clock: FakeClock) -> None:
    rng = random.Random(5)
    for _ in range(200):  # runs of one child, gaps of 0 to past FORGET_AFTER, new children
        one_by_one, batched = MemoryHealthStore(clock=clock), MemoryHealthStore(clock=clock)
        samples = []
        for _ in range(rng.randint(0, 40)):
            clock.advance(rng.choice([0.0, 1e-4, 0.5, 3.0, 12.0]))
            sample = (rng.choice("aab"), rng.random(), clock.now())
            one_by_one.routing.observe(sample[0], sample[1])
            samples.append(sample)
        batched.routing.observe_many(samples)
        assert batched.routing.averages == one_by_one.routing.averages

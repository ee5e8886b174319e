"""Journaled workflow runs: completed steps are never sent twice, interrupted steps re-run
(or are refused), changed workflows are refused, one holder per run id."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator import FallbackAgent, Request, Response
from orchestrator.journal import RunInProgress, SQLiteJournal, StepInterrupted, WorkflowChanged
from orchestrator.journal.records import MAX_RECORD_CHARS
from orchestrator.workflow import Parallel, Phase, Step, Workflow, WorkflowError
from providers import FunctionProvider


class Crash(BaseException):
    """Stands for a SIGKILL: nothing after it runs (not an Exception: nothing catches it)."""


def counting(name: str, calls: list[str], crash_on: set[str] | None = None) -> FunctionProvider:
    async def fn(req: Request) -> Response:
        calls.append(req.prompt)
        if crash_on and any(word in req.prompt for word in crash_on):
            raise Crash
        return Response(f"{name}<{req.prompt}>")

    return FunctionProvider(fn, name=name)


def review_flow(p: FunctionProvider, q: FunctionProvider | None = None) -> Workflow:
    q = q or p
    return Workflow(
        Phase("One", Parallel(Step("a", p, prompt="A {diff}"), Step("b", p, prompt="B {diff}"))),
        Phase("Two", Step("c", q, prompt="C {a.text} {b.text}")),
        name="review",
    )


async def test_a_rerun_returns_completed_steps_without_a_request(tmp_path: Path) -> None:
    calls: list[str] = []
    wf = review_flow(counting("p", calls))
    journal = f"sqlite:///{tmp_path}/j.db"
    first = await wf.run({"diff": "d1"}, run_id="pr-1", journal=journal)
    assert len(calls) == 3
    again = await wf.run({"diff": "d1"}, run_id="pr-1", journal=journal)
    assert len(calls) == 3  # nothing sent again
    assert {k: r.text for k, r in again.items()} == {k: r.text for k, r in first.items()}
    assert again["c"].handled_by == "p" and again["c"].attempts[-1].ok


async def test_a_step_in_flight_at_a_crash_reruns_and_completed_ones_do_not(
    tmp_path: Path,
) -> None:
    calls: list[str] = []
    path = tmp_path / "j.db"
    with pytest.raises(Crash):
        await review_flow(counting("p", calls, crash_on={"C "})).run(
            {"diff": "d"}, run_id="r", journal=path
        )
    store = SQLiteJournal(path)
    shown = store.show_run("r")
    assert shown is not None
    assert {s.step: s.status for s in shown[1]} == {"a": "done", "b": "done", "c": "started"}
    calls.clear()
    out = await review_flow(counting("p", calls)).run({"diff": "d"}, run_id="r", journal=store)
    assert calls == ["C p<A d> p<B d>"]  # only the interrupted step was sent
    assert out["c"].text == "p<C p<A d> p<B d>>"
    assert store.show_run("r")[0].status == "done"  # type: ignore[index]


async def test_on_interrupted_fail_refuses_the_step_without_sending(tmp_path: Path) -> None:
    calls: list[str] = []
    path = tmp_path / "j.db"
    with pytest.raises(Crash):
        await review_flow(counting("p", calls, crash_on={"C "})).run(
            {"diff": "d"}, run_id="r", journal=path
        )
    calls.clear()
    p = counting("p", calls)
    with pytest.raises(WorkflowError) as info:
        await review_flow(p).run({"diff": "d"}, run_id="r", journal=path, on_interrupted="fail")
    assert isinstance(info.value.error, StepInterrupted) and info.value.step == "c"
    assert "on_interrupted" in str(info.value) and calls == []
    # A step may say it for itself, whatever the run says.
    wf = Workflow(
        Phase("One", Step("a", p, prompt="A {diff}")),
        Phase("Two", Step("c", p, prompt="C {a.text}", on_interrupted="fail")),
        name="one-two",
    )
    with pytest.raises(Crash):
        await Workflow(
            *wf.phases[:1],
            Phase("Two", Step("c", counting("p", [], {"C "}), prompt="C {a.text}")),
            name="one-two",
        ).run({"diff": "d"}, run_id="s", journal=path)
    with pytest.raises(WorkflowError, match="interrupted"):
        await wf.run({"diff": "d"}, run_id="s", journal=path)


async def test_a_changed_step_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    calls: list[str] = []
    path = tmp_path / "j.db"
    await review_flow(counting("p", calls)).run({"diff": "d"}, run_id="r", journal=path)
    calls.clear()
    changed = Workflow(
        Phase(
            "One",
            Parallel(
                Step("a", counting("p", calls), prompt="A2 {diff}"),
                Step("b", counting("p", calls), prompt="B {diff}"),
            ),
        ),
        Phase("Two", Step("c", counting("p", calls), prompt="C {a.text} {b.text}")),
        name="review",
    )
    with pytest.raises(WorkflowChanged, match=r"'a'.*--restart-changed") as info:
        await changed.run({"diff": "d"}, run_id="r", journal=path)
    assert calls == [] and info.value.steps == ("a",)
    # Another input is a change too; so is another chain.
    with pytest.raises(WorkflowChanged):
        await review_flow(counting("p", calls)).run({"diff": "other"}, run_id="r", journal=path)
    with pytest.raises(WorkflowChanged, match="'c'"):
        await review_flow(counting("p", calls), counting("q", calls)).run(
            {"diff": "d"}, run_id="r", journal=path
        )
    assert calls == []
    out = await changed.run({"diff": "d"}, run_id="r", journal=path, restart_changed=True)
    # a changed, so c (which reads a) changed; b is the journal's.
    assert calls == ["A2 d", "C p<A2 d> p<B d>"]
    assert out["b"].text == "p<B d>"


async def test_exactly_one_of_many_runs_of_one_id_holds_it(tmp_path: Path) -> None:
    gate = asyncio.Event()
    calls: list[str] = []

    async def slow(req: Request) -> str:
        calls.append(req.prompt)
        await gate.wait()
        return "ok"

    p = FunctionProvider(slow, name="slow")
    wf = Workflow(Phase("One", Step("a", p, prompt="A {diff}")), name="w")
    runs = [
        asyncio.create_task(wf.run({"diff": "d"}, run_id="r", journal=tmp_path / "j.db"))
        for _ in range(8)
    ]
    await asyncio.sleep(0)
    for _ in range(20):
        if calls:
            break
        await asyncio.sleep(0)
    gate.set()
    results = await asyncio.gather(*runs, return_exceptions=True)
    refused = [r for r in results if isinstance(r, RunInProgress)]
    assert len(refused) == 7 and len(calls) == 1
    assert "being run by another process" in str(refused[0]) and "pid" in str(refused[0])
    # Once the holder is done, the run is free: returned from the journal.
    out = await wf.run({"diff": "d"}, run_id="r", journal=tmp_path / "j.db")
    assert out["a"].text == "ok" and len(calls) == 1


def test_a_dead_or_silent_holder_is_taken_over(tmp_path: Path) -> None:
    now = [1000.0]
    store = SQLiteJournal(tmp_path / "j.db", lease=30, wall=lambda: now[0])
    store.claim("r", "w", "elsewhere:123:aa")  # another machine: trusted for the lease
    with pytest.raises(RunInProgress):
        store.claim("r", "w", "me:1:bb")
    now[0] += 31
    store.claim("r", "w", "me:1:bb")
    import socket

    gone = f"{socket.gethostname()}:999999999:cc"  # this machine, no such process
    store.claim("s", "w", gone)
    store.claim("s", "w", "me:1:bb")  # at once: the holder's process is gone


def test_retention_prunes_finished_runs_by_age_and_count(tmp_path: Path) -> None:
    now = [0.0]
    store = SQLiteJournal(tmp_path / "j.db", keep_days=1, keep_runs=3, wall=lambda: now[0])
    for i in range(5):
        now[0] += 10
        store.claim(f"r{i}", "w", "h:1:x")
        store.record_started(f"r{i}", "a", "fp")
        if i != 0:  # r0 is still held: never pruned
            store.release(f"r{i}", "h:1:x", "done")
    assert [r.run_id for r in store.list_runs()] == ["r4", "r3", "r2", "r0"]
    now[0] += 2 * 86400
    store.claim("new", "w", "h:1:x")
    assert [r.run_id for r in store.list_runs()] == ["new", "r0"]
    db = sqlite3.connect(tmp_path / "j.db")
    assert {r[0] for r in db.execute("SELECT run_id FROM steps")} == {"r0"}


async def test_the_journal_keeps_no_request_text_and_refuses_a_corrupt_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"

    async def answer(req: Request) -> str:
        return "reply"

    wf = Workflow(Phase("One", Step("a", FunctionProvider(answer), prompt="SECRET-{x}")), name="w")
    await wf.run({"x": "PROMPT"}, run_id="r", journal=path)
    SQLiteJournal(path).close()  # checkpoint: everything is in the main file
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"SECRET-PROMPT" not in data and b"reply" in data
    db = sqlite3.connect(path)
    db.execute("UPDATE steps SET result=?", ("[" * 100_000,))
    db.commit()
    db.close()
    from orchestrator.journal import JournalError

    with pytest.raises(JournalError, match="not readable JSON"):
        await wf.run({"x": "PROMPT"}, run_id="r", journal=path)
    db = sqlite3.connect(path)
    db.execute("UPDATE steps SET result=NULL, partial=?", ("x" * (MAX_RECORD_CHARS + 1),))
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="streamed text is over"):
        await wf.run({"x": "PROMPT"}, run_id="r", journal=path)


async def test_parallel_steps_in_flight_are_all_journaled(tmp_path: Path) -> None:
    calls: list[str] = []
    p = counting("p", calls)
    steps = [Step(f"s{i}", p, prompt=f"{i} {{diff}}") for i in range(24)]
    wf = Workflow(Phase("All", Parallel(*steps, limit=12)), name="many")
    await wf.run({"diff": "d"}, run_id="r", journal=tmp_path / "j.db")
    assert len(calls) == 24
    out = await wf.run({"diff": "d"}, run_id="r", journal=tmp_path / "j.db")
    assert len(calls) == 24 and len(out) == 24


class Streamer:
    """Streams its reply in chunks; crashes after ``crash_after`` chunks the first time."""

    name = "streamer"

    def __init__(self, crash_after: int | None) -> None:
        self.crash_after, self.requests = crash_after, []  # type: list[Request]

    async def complete(self, request: Request) -> Response:
        raise AssertionError("streamed steps stream")

    async def stream(self, request: Request) -> AsyncIterator[str | Response]:
        self.requests.append(request)
        words = ["alpha ", "beta ", "gamma ", "delta"]
        if request.messages[-1].role == "assistant":  # a continuation
            words = ["gamma ", "delta"]
        for i, w in enumerate(words):
            if self.crash_after is not None and i == self.crash_after:
                raise Crash
            yield w
        yield Response("".join(words))


async def test_a_streamed_step_continues_from_the_text_its_crashed_run_saw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.journal import runner

    monkeypatch.setattr(runner._JournaledSteps, "partial_every", 0.0)
    path = tmp_path / "j.db"

    def flow(p: Streamer) -> Workflow:
        return Workflow(
            Phase("One", Step("a", FallbackAgent([p]), prompt="go {x}", mid_stream="continue")),
            name="w",
        )

    with pytest.raises(Crash):
        await flow(Streamer(crash_after=2)).run({"x": "1"}, run_id="r", journal=path)
    steps = SQLiteJournal(path).show_run("r")[1]  # type: ignore[index]
    assert steps[0].status == "started" and steps[0].partial == "alpha beta "
    again = Streamer(crash_after=None)
    out = await flow(again).run({"x": "1"}, run_id="r", journal=path)
    sent = again.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant"] and sent[-1].content == "alpha beta "
    assert out["a"].text == "alpha beta gamma delta"


@pytest.mark.parametrize(
    "error",
    [RunInProgress("r", "pid 1 on h", 0.5), StepInterrupted("r", "c"), WorkflowChanged("r", ["a"])],
)
def test_journal_errors_stop_the_run_and_pickle(error: Exception) -> None:
    import pickle

    from orchestrator.errors import meaning

    kind = meaning(error)
    assert kind is not None
    assert (kind.retried, kind.hands_over, kind.counts_for_health) == (False, False, False)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error)


async def test_a_replayed_step_keeps_its_prompt_cache_counts(tmp_path: Path) -> None:
    """Usage's cache reads and writes survive the journal; a record from before they were
    counted ([input, output]) still reads."""
    import json

    from orchestrator import Usage
    from orchestrator.journal.records import decode_result, encode_result

    cached = Usage(100, 10, 60, 20)

    async def fn(req: Request) -> Response:
        return Response("ok", usage=cached)

    wf = Workflow(Phase("One", Step("a", FunctionProvider(fn, name="p"), prompt="A")), name="w")
    journal = f"sqlite:///{tmp_path}/j.db"
    first = await wf.run({}, run_id="r-1", journal=journal)
    again = await wf.run({}, run_id="r-1", journal=journal)
    assert first["a"].usage == again["a"].usage == cached
    record = json.loads(json.dumps(encode_result(first["a"])))
    record["attempts"][0]["usage"] = [100, 10]
    assert decode_result(record).usage == Usage(100, 10)

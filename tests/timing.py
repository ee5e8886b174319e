"""Seconds a test can bound whatever else the machine runs: wall-clock time minus the time
the machine kept this process ready to run but waiting for a CPU.

A bound on plain wall-clock time measures the machine: on a loaded 2-core CI machine
(load 9) a call that costs 0.2 s of CPU waits a second or more for its turn, and a scaled
benchmark bound of 0.75 s fails although the code waited for nothing it should not. Linux
counts, per thread, the time it spent runnable on a run queue without a CPU
(``/proc/self/task/*/schedstat``, second field): the longest such wait of any one thread
is the machine's share, at least (:meth:`Stopwatch.starved`), and what is left is the
code's own (its CPU time, its sleeps and timeouts, what it waited for over
loopback). A deliberate wait (a sleep, a timeout, a backoff) is spent asleep, not
runnable, so it is never subtracted: a regression that waits longer still fails.

Where the kernel does not say (another OS, a kernel without ``CONFIG_SCHED_INFO``),
nothing is subtracted: the bound is plain wall-clock time, as before.
"""

from __future__ import annotations

import os
import time

__all__ = ["Stopwatch", "waits"]

_TASKS = "/proc/self/task"


def waits() -> dict[str, int]:
    """Per thread of this process (by id), the nanoseconds it has waited for a CPU while
    runnable; empty where the kernel does not say."""
    out: dict[str, int] = {}
    try:
        tasks = os.listdir(_TASKS)
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"{_TASKS}/{task}/schedstat", "rb") as stats:
                out[task] = int(stats.read().split()[1])
        except (OSError, IndexError, ValueError):  # the thread ended meanwhile
            continue
    return out


class Stopwatch:
    """Started when made: :meth:`elapsed` is the wall-clock seconds since, less the seconds
    the machine kept this process waiting for a CPU meanwhile (see the module). A lower
    bound on time (the code waited at least ...) stays on :attr:`wall` time."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.waits = waits()

    def wall(self) -> float:
        """Wall-clock seconds since the start."""
        return time.monotonic() - self.started

    def starved(self) -> float:
        """Seconds the machine kept this process waiting since the start, at least: the
        longest any one thread of it waited for a CPU while runnable. Not the sum: two
        threads may wait at once (one woken while the other, out of the interpreter, is
        still queued), and a sum counted such a wait twice (up to 0.05 s more than
        the wall-clock time of a whole call, measured at load 5). A thread that began
        meanwhile counts from 0 (a reused id too); one that ended takes its waits with
        it. So this under-states the machine's share, never over-states it: no wait of
        the code's own is hidden."""
        now, then = waits(), self.waits
        longest = 0
        for task, ns in now.items():
            before = then.get(task, 0)
            longest = max(longest, ns - before if ns >= before else ns)
        return longest / 1e9

    def elapsed(self) -> float:
        """Seconds since the start that were this process's own, not other processes'."""
        return self.wall() - self.starved()

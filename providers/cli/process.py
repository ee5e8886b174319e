"""Run a command-line agent as a supervised subprocess: prompt in, output out, nothing left.

:func:`run_process` starts the child in a new session (so it leads its own
process group), writes the prompt to its stdin, reads stdout and stderr
concurrently, and enforces an overall ``timeout`` and an ``idle_timeout`` (no
output on either stream for that long). When a limit is hit, or the awaiting
task is cancelled, the whole process group gets SIGTERM, then SIGKILL after
``kill_grace`` seconds, and the child is always awaited (no zombie).

When the leader exits normally the group is swept with SIGKILL too: a coding
agent's background helpers must not outlive the call. (The group id is the
leader's pid; the kernel does not reuse it while any member is alive, so the
sweep cannot hit an unrelated process while it matters.)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestrator.errors import NotInstalled, ProviderTimeout

__all__ = ["CLIOutput", "run_process"]

_READ_CHUNK = 65_536
STDERR_TAIL_BYTES = 65_536
# After the leader exits, how long its pipes may stay open (held by descendants)
# before the group is killed so the readers see EOF.
_DRAIN_GRACE = 1.0


@dataclass(frozen=True, slots=True)
class CLIOutput:
    """What one finished run of a command-line agent produced.

    ``stdout`` holds at most ``max_output_bytes`` (``stdout_truncated`` says
    when more was written; ``stdout_bytes`` is the full count). ``stderr`` is
    only the last 64 KiB: it is for diagnostics, not for answers.
    """

    returncode: int
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stdout_bytes: int = 0
    duration: float = 0.0


class _Capture:
    """Keeps the first ``limit`` bytes and counts the rest (which are read and dropped)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]


class _Tail:
    """Keeps the last ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]


class _Activity:
    __slots__ = ("last",)

    def __init__(self, now: float) -> None:
        self.last = now


async def _pump(stream: asyncio.StreamReader, sink: _Capture | _Tail, act: _Activity) -> None:
    loop = asyncio.get_running_loop()
    while chunk := await stream.read(_READ_CHUNK):
        act.last = loop.time()
        sink.add(chunk)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    # A child that exits without reading its stdin is not an error of ours.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()
        await stdin.wait_closed()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _kill_group(proc: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM the group, SIGKILL whatever is left after ``grace``, then reap the leader."""
    if proc.returncode is None:
        _signal_group(proc.pid, signal.SIGTERM)
        # asyncio.timeout, not wait_for: 3.11's wait_for drops a cancellation of the caller
        # that arrives in the iteration the child exits.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await proc.wait()
    _signal_group(proc.pid, signal.SIGKILL)
    await proc.wait()


async def _supervise(
    waiter: asyncio.Future[int],
    act: _Activity,
    started: float,
    timeout: float | None,
    idle_timeout: float | None,
) -> str | None:
    """Wait for the leader to exit; return "timeout"/"idle" when a limit is hit first."""
    loop = asyncio.get_running_loop()
    deadline = started + timeout if timeout is not None else math.inf
    while True:
        now = loop.time()
        idle_at = act.last + idle_timeout if idle_timeout is not None else math.inf
        if now >= deadline:
            return "timeout"
        if now >= idle_at:
            return "idle"
        wake = min(deadline, idle_at)
        done, _ = await asyncio.wait({waiter}, timeout=None if wake == math.inf else wake - now)
        if waiter in done:
            return None


async def _drain(proc: asyncio.subprocess.Process, pumps: list[asyncio.Task[None]]) -> None:
    """After a normal exit: sweep the group, let the readers reach EOF."""
    _signal_group(proc.pid, signal.SIGKILL)
    _, pending = await asyncio.wait(pumps, timeout=_DRAIN_GRACE)
    if pending:
        # Something outside the group (it left the session) still holds the pipes.
        for task in pending:
            task.cancel()


async def run_process(
    argv: Sequence[str],
    *,
    stdin: bytes,
    provider: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 600.0,
    idle_timeout: float | None = None,
    max_output_bytes: int = 4_000_000,
    kill_grace: float = 2.0,
) -> CLIOutput:
    """Run ``argv`` with ``stdin``, enforce the limits, return its output.

    Raises ``ProviderTimeout`` (after killing the process group) when
    ``timeout`` or ``idle_timeout`` is hit, ``NotInstalled`` when the
    executable cannot be started. Cancellation kills the group, reaps the
    child and re-raises.
    """
    loop = asyncio.get_running_loop()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise NotInstalled(
            f"cannot execute {argv[0]!r} ({type(exc).__name__}); install it or pass its full path",
            provider=provider,
        ) from None
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    started = loop.time()
    act = _Activity(started)
    out, err = _Capture(max_output_bytes), _Tail(STDERR_TAIL_BYTES)
    pumps = [
        asyncio.create_task(_pump(proc.stdout, out, act)),
        asyncio.create_task(_pump(proc.stderr, err, act)),
    ]
    feeder = asyncio.create_task(_feed(proc.stdin, stdin))
    waiter = asyncio.ensure_future(proc.wait())
    try:
        expired = await _supervise(waiter, act, started, timeout, idle_timeout)
        if expired is not None:
            await _kill_group(proc, kill_grace)
            raise _timeout_error(expired, provider, timeout, idle_timeout, loop.time() - started)
        await _drain(proc, pumps)
    except BaseException:
        cleanup = asyncio.ensure_future(_kill_group(proc, kill_grace))
        # Cancelled while cleaning up: the shielded cleanup still runs to the end, and the
        # caller's cancellation propagates (it outranks a ProviderTimeout on its way out).
        await asyncio.shield(cleanup)
        raise
    finally:
        for task in (*pumps, feeder, waiter):
            task.cancel()
        await asyncio.gather(*pumps, feeder, waiter, return_exceptions=True)
    return CLIOutput(
        returncode=proc.returncode if proc.returncode is not None else -1,
        stdout=bytes(out.data).decode("utf-8", errors="replace"),
        stderr=bytes(err.data).decode("utf-8", errors="replace"),
        stdout_truncated=out.total > out.limit,
        stdout_bytes=out.total,
        duration=loop.time() - started,
    )


def _timeout_error(
    kind: str,
    provider: str,
    timeout: float | None,
    idle_timeout: float | None,
    elapsed: float,
) -> ProviderTimeout:
    if kind == "idle":
        what = f"no output for {idle_timeout:g}s (idle_timeout={idle_timeout:g})"
    else:
        what = f"still running after {timeout:g}s (timeout={timeout:g})"
    return ProviderTimeout(
        f"{what}; process group killed after {elapsed:.1f}s. Raise the limit if the agent "
        "needs longer",
        provider=provider,
    )

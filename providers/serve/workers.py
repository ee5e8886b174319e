"""``--workers N``: N worker processes on one port, replaced when they die, drained on SIGTERM.

The supervisor binds the port first with ``SO_REUSEPORT`` (so ``--port 0`` picks
one port for all) without listening on it; each worker binds the same port, loads
the chain, then listens and tells the supervisor, and the kernel spreads new
connections over the listening workers. The URL is announced when the first worker
is accepting (announced at once, the first ~1.3 s of connects were refused). A worker that
exits while the supervisor is not stopping is replaced. SIGTERM (or SIGINT) is
passed to every worker, which drains (see :mod:`providers.serve.server`); workers
still running after the grace period are killed. Health (circuits, cooldowns,
the retry budget) is shared between workers only through a shared store such as
the chain file's Redis health store; ``health: true`` keeps it per worker.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from typing import Any

from providers.serve.auth import GatewayKeys
from providers.serve.server import listen_socket, run_worker
from providers.serve.settings import GatewaySettings

__all__ = ["run_workers"]

#: A worker that dies sooner than this after starting counts towards giving up.
_EARLY = 2.0
#: Give up after this many early deaths in a row (a broken chain file, a port in use).
_MAX_EARLY = 5
_KILL_AFTER = 5.0
#: prctl(2) option: a signal the kernel sends this process when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class _Job:
    chain: str
    keys_files: tuple[str | None, str | None]  # the gateway's, the metrics'
    settings: GatewaySettings
    supervisor: int  # its pid


def _die_with(supervisor: int) -> None:
    """Drain (SIGTERM) when the supervisor dies, even by SIGKILL: an orphan worker would keep
    the port and spend provider keys with nobody to stop it. Linux only (prctl); elsewhere
    the supervisor's own SIGTERM handling is all there is."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != supervisor:  # it died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _worker(job: _Job, ready: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor sends SIGTERM
    _die_with(job.supervisor)
    keys = GatewayKeys.load(key_file=job.keys_files[0], metrics_file=job.keys_files[1])
    # Bound now, listening once the chain is loaded: until then the kernel gives this
    # worker no connections, so none waits behind a worker that is still starting.
    sock = listen_socket(job.settings.host, job.settings.port, reuse_port=True, listen=False)
    run_worker(job.chain, keys, job.settings, sock, lambda: ready.send(os.getpid()))


class _Supervisor:
    def __init__(self, job: _Job, announce: Callable[[], None] | None) -> None:
        self._job = job
        self._announce = announce
        self._ctx = multiprocessing.get_context("spawn")
        self._ready, self._ready_w = self._ctx.Pipe(duplex=False)  # workers send their pid
        self._procs: dict[Any, tuple[Any, float]] = {}  # sentinel -> (process, started)
        self._stopping = False
        self._early = 0

    def _start(self) -> None:
        proc = self._ctx.Process(target=_worker, args=(self._job, self._ready_w), daemon=False)
        proc.start()
        self._procs[proc.sentinel] = (proc, time.monotonic())

    def _stop(self, signum: int, frame: object) -> None:
        self._stopping = True
        for proc, _ in self._procs.values():
            if proc.is_alive() and proc.pid is not None:
                os.kill(proc.pid, signal.SIGTERM)

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)
        for _ in range(self._job.settings.workers):
            self._start()
        while self._procs and not self._stopping:
            for sentinel in wait([*self._procs, self._ready], timeout=0.5):
                if sentinel is self._ready:
                    self._accepting()
                elif self._reap(sentinel) and not self._stopping:
                    self._start()
            if self._early >= _MAX_EARLY:
                print("failover serve: workers keep dying at start; giving up", file=sys.stderr)
                self._stop(signal.SIGTERM, None)
                return 1
        return self._drain()

    def _accepting(self) -> None:
        """A worker is accepting: the first one announces the gateway's URL."""
        self._ready.recv()
        if self._announce is not None:
            self._announce()
            self._announce = None

    def _reap(self, sentinel: Any) -> bool:
        """Forget a dead worker; True when it should be replaced."""
        proc, started = self._procs.pop(sentinel)
        proc.join()
        if self._stopping:
            return False
        early = time.monotonic() - started < _EARLY
        self._early = self._early + 1 if early else 0
        print(
            f"failover serve: worker {proc.pid} exited with {proc.exitcode}; replacing it",
            file=sys.stderr,
            flush=True,
        )
        return True

    def _drain(self) -> int:
        deadline = time.monotonic() + self._job.settings.grace + _KILL_AFTER
        for proc, _ in list(self._procs.values()):
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()
        return 0


def run_workers(
    chain: str,
    keys_files: tuple[str | None, str | None],
    settings: GatewaySettings,
    announce: Callable[[int], None] | None = None,
) -> int:
    """Run the supervisor until SIGTERM/SIGINT; the exit code (0 after a clean drain).
    ``announce(port)`` is called once, when the first worker is accepting connections."""
    reserve = listen_socket(settings.host, settings.port, reuse_port=True, listen=False)
    try:
        port = reserve.getsockname()[1]
        job = _Job(chain, keys_files, replace(settings, port=port), os.getpid())
        return _Supervisor(job, None if announce is None else lambda: announce(port)).run()
    finally:
        reserve.close()

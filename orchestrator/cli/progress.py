"""``failover run -v``: each retry, fallback, skip, hedge and the outcome, live on stderr.

The lines come from the engine's own structlog events (:mod:`orchestrator.events`),
not from a second reporting path: while :class:`Progress` is active, structlog
routes every event to it, and it prints one line per event it knows. Events
carry names, numbers and error types only, so no prompt text and no secret can
reach a line; fields are picked one by one, never dumped. On a terminal the
lines are coloured by ``rich`` (when installed), elsewhere they are plain.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, TextIO

import structlog

from orchestrator import events
from orchestrator.cli.tables import rich_available
from orchestrator.summary import untried_note

__all__ = ["Progress", "describe_event"]

Fields = MutableMapping[str, Any]


def _ms(seconds: Any) -> str:
    """``120 ms`` below a second, ``1.50 s`` from one."""
    if not isinstance(seconds, int | float):
        return "?"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


#: Errors whose type alone says less than a few words do (deadlines inside a call).
_SAID = {
    "FirstTokenTimeout": "no first token in time",
    "StreamStalled": "stream stalled",
}
#: Why a child was skipped without a request, by the attempt's reason.
_SKIPPED = {
    "circuit_open": "circuit open",
    "context_window": "its context window cannot hold the request",
    "unsupported": "it cannot take this request (tools)",
}


def _why(e: Fields) -> str:
    """``ServerError (transient)``, ``RateLimited (rate_limited)``: the error's type, and
    its reason where the type has one, else its kind; a deadline says what it saw
    (``no first token in time (FirstTokenTimeout)``)."""
    said = _SAID.get(str(e.get("error_type")))
    if said is not None:
        return f"{said} ({e.get('error_type')})"
    reason = e.get("reason")
    label = reason if reason not in (None, "error") else e.get("error_kind")
    return f"{e.get('error_type')} ({label})"


def _usd(cost: Any) -> str:
    return f"${cost:.6f}" if isinstance(cost, int | float) else "$?"


def _cost(e: Fields) -> str:
    """``, $0.000420`` for a priced attempt, a warning for a billed one with no price."""
    if e.get("cost_usd") is not None:
        return f", {_usd(e.get('cost_usd'))}"
    return ", cost unknown (no price)" if e.get("unpriced") else ""


def _failed(e: Fields) -> str:
    if e.get("attempt") == 0:  # skipped without a request: an open circuit, a small window...
        reason = e.get("reason")
        return f"skipped {e.get('child')}: {_SKIPPED.get(str(reason), str(reason))}"
    took = _ms(e.get("duration"))
    return f"{e.get('child')} try {e.get('attempt')} failed after {took}: {_why(e)}{_cost(e)}"


def _retry(e: Fields) -> str:
    return f"{e.get('child')} retry {_next(e.get('attempt'))} in {_ms(e.get('delay'))}"


def _next(attempt: Any) -> str:
    return str(attempt + 1) if isinstance(attempt, int) else "?"


def _answered(e: Fields) -> str:
    took = _ms(e.get("latency"))
    line = f"answered by {e.get('handled_by')} after {e.get('attempts')} attempt(s) in {took}"
    unpriced, cost = e.get("unpriced_attempts"), e.get("cost_usd")
    if unpriced:  # the total would silently leave them out
        total = f"at least {_usd(cost)}" if cost is not None else "cost unknown"
        return f"{line}, {total} ({unpriced} attempt(s) with no price)"
    return f"{line}, {_usd(cost)}" if cost is not None else line


def _hedge_lost(e: Fields) -> str:
    took = _ms(e.get("duration"))
    who = f"{e.get('child')} try {e.get('attempt')}"
    return f"{who} cancelled after {took}: the hedge to {e.get('winner')} answered first"


def _terminal(e: Fields) -> str:
    where = f"stopped at {e.get('child')}: {e.get('error_type')}"
    if e.get("reason") != "mid_stream":
        return f"{where} is terminal (no retry, no fallback)"
    if e.get("tool_call"):
        return f"{where} after a tool call had started streaming (a tool call cannot be resumed)"
    if e.get("error_type") == "Rejected":
        return f"{where}: the accept check refused a reply already streamed to the caller"
    if e.get("mid_stream") != "raise":
        return f"{where} after text had already gone out to the caller (it cannot be unsent)"
    return (
        f"{where} after text had already gone out to the caller, so it was not retried "
        "or handed over (mid_stream='raise'; mid_stream='continue' resumes from that text "
        "on the next attempt)"
    )


def _run_failed(e: Fields) -> str:
    untried = e.get("untried")
    if e.get("deadline") and isinstance(untried, list) and untried:
        tried = f"{e.get('attempts')} attempt(s) failed; "
        return tried + untried_note([str(name) for name in untried])
    return f"every provider failed ({e.get('attempts')} attempt(s))"


def _circuit(e: Fields) -> str:
    return f"circuit {e.get('provider')}: {e.get('state')} ({e.get('reason')})"


_LINES: dict[str, tuple[str, Callable[[Fields], str]]] = {
    "attempt_failed": ("red", _failed),
    "retry_scheduled": ("yellow", _retry),
    "attempt_succeeded": (
        "green",
        lambda e: (
            f"{e.get('child')} try {e.get('attempt')} ok in {_ms(e.get('duration'))}{_cost(e)}"
        ),
    ),
    "fallback": (
        "yellow",
        lambda e: f"fallback {e.get('child')} -> {e.get('to')} after {_why(e)}",
    ),
    "terminal_error": ("bold red", _terminal),
    "hedge_started": (
        "yellow",
        lambda e: (
            f"hedge: {e.get('child')} has no content after {_ms(e.get('waited'))}, "
            f"starting {e.get('to')} in parallel"
        ),
    ),
    "hedge_skipped": ("yellow", lambda e: f"no hedge to {e.get('to')}: {e.get('why')}"),
    "hedge_lost": ("yellow", _hedge_lost),
    "run_succeeded": ("bold green", _answered),
    "run_failed": ("bold red", _run_failed),
    "run_stopped": ("yellow", lambda e: f"stopped by a hook ({e.get('reason')})"),
    "hook_failed": ("red", lambda e: f"hook {e.get('hook')} raised {e.get('error_type')}"),
    "circuit_opened": ("red", _circuit),
    "circuit_half_open": ("yellow", _circuit),
    "circuit_closed": ("green", _circuit),
    "health_store_degraded": (
        "red",
        lambda e: f"health store unreachable ({e.get('error_type')}): using local state",
    ),
    "health_store_recovered": ("green", lambda e: "health store reachable again"),
}


def describe_event(event: Fields) -> tuple[str, str] | None:
    """(style, line) for an engine event, or None for one ``-v`` does not show."""
    known = _LINES.get(str(event.get("event")))
    if known is None:
        return None
    style, line = known
    agent, step = event.get("agent"), event.get("step")
    # In a workflow the step comes first: parallel steps may share one agent.
    label = (f"[{step}] " if step else "") + (f"{agent}: " if agent else "")
    return style, label + line(event)


class Progress:
    """Prints the engine's events as lines on ``file`` while :meth:`active`.

    ``rich`` None: coloured when ``file`` is a terminal and ``rich`` is installed.
    """

    def __init__(
        self,
        file: TextIO | None = None,
        *,
        rich: bool | None = None,
        now: Callable[[], float] = time.monotonic,
        every: float = 5.0,
    ) -> None:
        self.file = file if file is not None else sys.stderr
        use_rich = self.file.isatty() if rich is None else rich
        self.console: Any = None
        if use_rich and rich_available():
            from rich.console import Console

            self.console = Console(file=self.file, highlight=False, markup=False)
        self.now, self.every = now, every
        self.started = self.last = now()
        self.gone = False  # the file was closed under us: print nothing more
        #: The provider being waited on, followed from the events (retries, fallbacks,
        #: hedges): what a quiet wait names (:meth:`tick`).
        self.current: str | None = None

    def waiting_on(self, child: str) -> None:
        """The provider tried first (the plan line names it before any event can)."""
        self.current = child

    def tick(self) -> None:
        """After ``every`` seconds without a line, say who is being waited on: a provider that
        hangs never leaves the terminal blank until its timeout."""
        if self.current is not None and self.now() - self.last >= self.every:
            self.line(f"still waiting on {self.current} ({self.now() - self.started:.2f} s)")

    async def heartbeat(self) -> None:
        """:meth:`tick` every second, until cancelled."""
        while True:
            await asyncio.sleep(1.0)
            self.tick()

    def line(self, text: str, style: str | None = None) -> None:
        """Print one line, stamped with the seconds since the command started."""
        if self.gone:
            return
        self.last = self.now()
        stamped = f"[{self.last - self.started:6.2f}s] {text}"
        try:
            if self.console is not None:
                self.console.print(stamped, style=style)
            else:
                print(stamped, file=self.file, flush=True)
        except (OSError, ValueError):  # stderr closed (`2>&1 | head`): the run goes on
            self.gone = True

    def _receive(self, logger: Any, method: str, event: Fields) -> Fields:
        if event.get("logger") == events.LOGGER_NAME:
            self._follow(event)
            shown = describe_event(event)
            if shown is not None:
                self.line(shown[1], shown[0])
        raise structlog.DropEvent  # nothing else reaches any output

    def _follow(self, event: Fields) -> None:
        """Keep :attr:`current` on the provider the run now waits on."""
        name = event.get("event")
        if name in ("fallback", "hedge_started"):
            self.current = str(event.get("to"))
        elif name == "retry_scheduled":
            self.current = str(event.get("child"))

    @contextmanager
    def active(self) -> Iterator[Progress]:
        """Route structlog to this printer and turn the engine's events on; restores both."""
        was_configured = structlog.is_configured()
        configured = structlog.get_config()["processors"]
        saved = list(configured)
        # Mutate the list in place, as structlog.testing.capture_logs does, so loggers
        # already bound (and cached) see the change too.
        processors = configured if isinstance(configured, list) else []
        processors[:] = [self._receive]
        structlog.configure(processors=processors)
        try:
            with events.enabled(True):
                yield self
        finally:
            processors[:] = saved
            structlog.configure(processors=processors if configured is processors else saved)
            if not was_configured:
                structlog.reset_defaults()

"""How a run's text reaches the caller: all at once (``run``) or chunk by chunk (``stream``).

The run is handed one delivery and asks it the few questions where the two
differ: how to call a child, which text is the reply, and whether a failure
may still be retried or handed over once text has left.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from orchestrator.engine.deadlines import PROGRESS, Seen, Watched, assemble
from orchestrator.engine.racer import Racer
from orchestrator.errors import PrefillUnsupported, Rejected
from orchestrator.types import Message, Request, Response, ToolCallDelta

if TYPE_CHECKING:
    from orchestrator.engine.run import Run

__all__ = [
    "BUFFERED",
    "CONTINUE_ASK",
    "PREFIX_CHARS",
    "Buffered",
    "Delivery",
    "Sink",
    "Streamed",
    "continued",
    "takes_prefill",
]

#: Request metadata key: how many streamed chars the hand-over request already carries
#: as its trailing assistant message (so the hook's redaction of them is kept).
PREFIX_CHARS = "stream_prefix_chars"


class Buffered:
    """The reply is delivered whole, with the Result: nothing leaves before the run ends."""

    __slots__ = ()

    #: Whether the consumer left before the run ended (a stream only: see :class:`Streamed`).
    left = False

    def call(self, child: Any, request: Request, run: Run) -> Awaitable[Response]:
        """One call of ``child`` (its ``complete``): its reply's arrival is its first token."""
        out: Awaitable[Response] = child.complete(request)
        return out

    def for_hook(self, request: Request) -> Request:
        """The hand-over request as ``before_fallback`` sees it."""
        return request

    def text(self, response: Response) -> str:
        """The reply's text, as the Result holds it."""
        return response.text

    def committed(self, error: BaseException) -> bool:
        """Whether text already left, so ``error`` can be neither retried nor handed over."""
        return False

    def push(self, text: str) -> None:
        """A text the engine itself produced (Stop, best_effort): the Result carries it."""


#: Buffered delivery holds no state: one instance serves every run.
BUFFERED = Buffered()


class Streamed:
    """Chunks reach ``sink`` as they arrive; ``mode`` says what a failure after the first does.

    ``"raise"``: the failure ends the run. ``"continue"``: the next attempt (or
    child) is asked to continue from the text already delivered, sent as the
    assistant's prefix (or, to a provider whose ``accepts_prefill`` is false, that
    turn and a user turn asking to continue it), so the consumer never sees text twice. Only text is
    continued: tool-call deltas never reach ``sink`` (the Result carries the
    assembled calls), and a failure after text once a tool call had started is
    committed, since no provider can resume a call half made.
    """

    __slots__ = (
        "delivered",
        "left",
        "mode",
        "on_chunk",
        "progress",
        "refused_prefill",
        "sink",
        "source",
        "tool_started",
    )

    def __init__(self, sink: Sink, mode: Literal["raise", "continue"]) -> None:
        self.sink, self.mode = sink, mode
        self.delivered: list[str] = []
        #: The consumer left before the run ended: the call it cut is recorded as cancelled.
        self.left = False
        #: Told of the next attempt's first chunk (telemetry: time to first chunk), then unset.
        self.on_chunk: Callable[[], None] | None = None
        self.tool_started = False  # the current attempt streamed a tool-call delta
        #: The provider whose text reached the consumer first (a gateway's headers name it).
        self.source: str | None = None
        #: Children that refused a prefill this run: continued by a user turn from then on.
        self.refused_prefill: set[str] = set()
        #: The consumer also takes :data:`PROGRESS` for each protocol event without text (a
        #: relay keeps its own client's stream in step with the provider's).
        self.progress = False

    def call(self, child: Any, request: Request, run: Run) -> Awaitable[Response]:
        """One streamed call of ``child``, continuing from what was delivered if so asked;
        its first content's time goes to ``run.log.first_at`` (what ``latency`` ranks by)."""
        if self.delivered and self.mode == "continue":
            if takes_prefill(child) and child.name not in self.refused_prefill:
                return self._prefilled(child, request, run)
            request = self._with_prefix(request, prefill=False)
        return self._stream(child, request, run)

    async def _prefilled(self, child: Any, request: Request, run: Run) -> Response:
        """The continuation as a prefill; a model that refuses one after all (a new Claude,
        a server nobody could know) is asked again at once, in this attempt, by a user turn."""
        try:
            return await self._stream(child, self._with_prefix(request, prefill=True), run)
        except PrefillUnsupported:
            self.refused_prefill.add(child.name)
        return await self._stream(child, self._with_prefix(request, prefill=False), run)

    def for_hook(self, request: Request) -> Request:
        """With ``continue``, the streamed text leaves for the next provider too: show it to
        ``before_fallback`` as the trailing assistant message, so it can be redacted."""
        if not (self.delivered and self.mode == "continue"):
            return request
        prefix = "".join(self.delivered)
        return request.replace(
            messages=[*request.messages, Message("assistant", prefix)],
            metadata={**request.metadata, PREFIX_CHARS: len(prefix)},
        )

    def text(self, response: Response) -> str:
        """What the consumer received (the whole reply when nothing was streamed)."""
        return "".join(self.delivered) if self.delivered else response.text

    def committed(self, error: BaseException) -> bool:
        """Text already reached the consumer and cannot be unsent: with ``raise`` any
        failure ends the run; a refused complete reply is never a prefix to continue from."""
        return bool(self.delivered) and (
            self.mode == "raise" or self.tool_started or isinstance(error, Rejected)
        )

    def push(self, text: str) -> None:
        """A text the engine itself produced (Stop, best_effort) reaches the consumer."""
        if text:
            self.delivered.append(text)
            self.sink.put_nowait(text)

    def _with_prefix(self, request: Request, prefill: bool) -> Request:
        return continued(request, "".join(self.delivered), prefill=prefill)

    def _first_chunk(self, run: Run) -> None:
        log = run.log
        if log.first_at is None:  # per run (a hedge's lane has its own): lanes never mix
            log.first_at = run.agent.clock.now()
        if self.on_chunk is not None:
            self.on_chunk()
            self.on_chunk = None

    def _stream(self, child: Any, request: Request, run: Run) -> Awaitable[Response]:
        """One streamed call of ``child``, each item handed on as it comes (:meth:`_hand_on`)."""
        if isinstance(child, Watched | Racer):  # the engine's views: one loop per call, no layer
            self.tool_started = False
            return child.assembled(request, self._hand_on(run, child.name))
        return self._streamed(child, request, run)

    async def _streamed(self, child: Any, request: Request, run: Run) -> Response:
        stream = getattr(child, "stream", None)
        if stream is None:
            response: Response = await child.complete(request)
            if response.text and not self.delivered:
                self.source = child.name
            self.push(response.text)
            return response
        self.tool_started = False
        return await assemble(stream(request), child.name, self._hand_on(run, child.name))

    def _hand_on(self, run: Run, name: str) -> Seen:
        """What a streamed call of ``name`` does with each item but its final Response:
        text goes to the consumer (:data:`PROGRESS` too, if it takes it), a tool-call
        delta marks the call as having started a tool call."""

        def seen(item: object) -> None:
            if isinstance(item, str):  # the common case first: one check per chunk
                if item:
                    if run.log.first_at is None or self.on_chunk is not None:
                        self._first_chunk(run)
                    if not self.delivered:
                        self.source = name
                    self.delivered.append(item)
                    self.sink.put_nowait(item)
                elif self.progress and item is PROGRESS:
                    self.sink.put_nowait(item)
            elif isinstance(item, ToolCallDelta):
                self.tool_started = True
                if run.log.first_at is None or self.on_chunk is not None:
                    self._first_chunk(run)

        return seen


Delivery = Buffered | Streamed


class Sink(Protocol):
    """Where a streamed run's chunks go (the consumer's :class:`~.streaming.Chunks`)."""

    def put_nowait(self, item: Any) -> None: ...


#: The user turn that asks a provider taking no prefill to continue a cut answer.
CONTINUE_ASK = (
    "Your answer above was cut off. Continue it exactly from where it stops: reply with "
    "only the text that comes next, without repeating any of it or adding anything before it."
)


def continued(request: Request, text: str, *, prefill: bool) -> Request:
    """``request`` continuing ``text`` (a cut answer): as the assistant's prefix (a
    prefill), or for a provider that takes none, that turn then a user turn asking
    to continue it exactly (:data:`CONTINUE_ASK`). A resumed journal step uses it too."""
    seen = request.metadata.get(PREFIX_CHARS)
    msgs = list(request.messages)
    if isinstance(seen, int) and msgs and msgs[-1].role == "assistant":
        # before_fallback saw (and may have redacted) the prefix up to ``seen`` chars:
        # keep its version and add only what was streamed since.
        msgs[-1] = Message("assistant", msgs[-1].content + text[seen:])
    else:
        msgs.append(Message("assistant", text))
    if not prefill:
        msgs.append(Message("user", CONTINUE_ASK))
    return request.replace(messages=msgs)


def takes_prefill(child: Any) -> bool:
    """Whether ``child`` (a provider, or a view of one: deadlines, a hedge lane) continues
    a trailing assistant message; a provider that does not say is assumed to."""
    for _ in range(8):  # views wrap views; bounded
        said = getattr(child, "accepts_prefill", None)
        if isinstance(said, bool):
            return said
        inner = getattr(child, "wrapped", None)
        if inner is None or inner is child:
            break
        child = inner
    return True

"""`Fault`: what the simulated server does with one request on one route.

A fault is an immutable description ("answer 503", "hang", "stream two chunks
then stop"); each route renders it in its own wire format. Build faults with
the factory functions (``Fault.ok()``, ``Fault.status(503)``...) or from a
JSON-friendly spec with :meth:`Fault.from_spec` (the script-file format).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.units import seconds
from providers.simulator.wires.base import ScriptedCall, Tokens

__all__ = ["ERROR_KINDS", "Fault"]

# Kinds rendered as an HTTP error reply in the route's own error format.
_ERROR_FACTORIES = (
    "status",
    "rate_limited",
    "overloaded",
    "server_error",
    "auth",
    "quota",
    "model_not_found",
    "bad_request",
    "context_too_long",
)
ERROR_KINDS = frozenset(_ERROR_FACTORIES)
_CUT_MODES = ("end", "abort", "hang")


@dataclass(frozen=True, slots=True)
class Fault:
    """One scripted behaviour of the simulated server; build it with a factory.

    Use the factories (``Fault.ok``, ``Fault.status``, ``Fault.hang``...), not
    the constructor: they validate their arguments and pick the right fields.
    A ``flaky`` fault owns a generator seeded once, so reusing the same
    instance continues its sequence (two servers given two ``Fault.flaky(...,
    seed=1)`` calls see the same sequence).
    """

    kind: str
    text: str | None = None
    chunks: int = 3
    usage: Tokens | None = None
    interval: float = 0.0
    status_code: int | None = None
    body: str | Mapping[str, Any] | None = None
    headers: Mapping[str, str] | None = None
    retry_after: float | None = None
    retry_after_ms: int | None = None
    http_date: bool = False
    seconds: float = 0.0
    then: Fault | None = None
    otherwise: Fault | None = None
    rate: float = 0.0
    seed: int = 0
    after: int = 2
    how: str = "end"
    prompt_blocked: bool = False
    # -- hostile replies (oversized, endless) --
    size: int = 0
    gzip: bool = False
    keepalive: bool = False
    tool_calls: tuple[ScriptedCall, ...] = ()
    _rng: random.Random | None = field(default=None, repr=False, compare=False)

    # -- successful replies -------------------------------------------------

    @staticmethod
    def ok(
        text: str | None = None,
        *,
        chunks: int = 3,
        usage: Sequence[int] | None = None,
        interval: float = 0.0,
        tool_calls: Iterable[ScriptedCall | Mapping[str, Any]] = (),
    ) -> Fault:
        """A normal reply. ``text=None`` derives it from the prompt
        (``"sim-<route>: <first 40 chars of prompt>"``, or a sample of the JSON
        schema when JSON output was asked); ``chunks`` is the number of text
        deltas when streaming; ``usage=(input, output)`` overrides the token
        estimate (``(input, output, cache_read, cache_write)``: how many of the input
        tokens the prompt cache read and wrote, each wire in its vendor's fields);
        ``interval`` is the pause in seconds between stream events.
        ``tool_calls=[{"name": ..., "arguments": {...}}]`` makes the model call
        tools (text then defaults to ""; see :class:`ScriptedCall`)."""
        if chunks < 1:
            raise ValueError(f"Fault.ok: chunks={chunks!r} must be at least 1")
        _check_seconds("Fault.ok", "interval", interval)
        calls = tuple(ScriptedCall.of(c) for c in tool_calls)
        return Fault(
            "ok", text=text, chunks=chunks, usage=_usage(usage), interval=interval, tool_calls=calls
        )

    @staticmethod
    def content_filter(*, prompt_blocked: bool = False) -> Fault:
        """A 200 reply refused by the vendor's safety system: OpenAI
        ``finish_reason: "content_filter"`` (Responses: an ``incomplete``
        response, ``incomplete_details.reason: "content_filter"``; streamed,
        it ends with ``response.incomplete``), Anthropic ``stop_reason: "refusal"``,
        Gemini ``finishReason: "SAFETY"`` (or, with ``prompt_blocked=True``,
        no candidates and ``promptFeedback.blockReason: "SAFETY"``)."""
        return Fault("content_filter", prompt_blocked=prompt_blocked)

    # -- HTTP errors ----------------------------------------------------------

    @staticmethod
    def status(
        code: int,
        body: str | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """Answer with HTTP ``code``. ``body=None`` renders the vendor's own
        error body for that code; a dict is sent as JSON, a str as is."""
        if not 100 <= code <= 599:
            raise ValueError(f"Fault.status: code={code!r} is not an HTTP status (100..599)")
        return Fault("status", status_code=code, body=body, headers=dict(headers or {}))

    @staticmethod
    def rate_limited(
        retry_after: float | None = 1.0,
        *,
        retry_after_ms: int | None = None,
        http_date: bool = False,
    ) -> Fault:
        """429 with the vendor's rate-limit body. ``retry_after`` seconds go in a
        ``Retry-After`` header (an integer when whole, else a decimal; as an
        HTTP date rounded up to the second when ``http_date``; no header when
        None); ``retry_after_ms`` adds OpenAI's ``retry-after-ms`` header."""
        if retry_after is not None:
            _check_seconds("Fault.rate_limited", "retry_after", retry_after)
        if retry_after_ms is not None and retry_after_ms < 0:
            raise ValueError(f"Fault.rate_limited: retry_after_ms={retry_after_ms!r} must be >= 0")
        return Fault(
            "rate_limited",
            status_code=429,
            retry_after=retry_after,
            retry_after_ms=retry_after_ms,
            http_date=http_date,
        )

    @staticmethod
    def overloaded() -> Fault:
        """Anthropic's 529 ``overloaded_error``; 503 "overloaded" on the other routes."""
        return Fault("overloaded")

    @staticmethod
    def server_error(code: int = 500) -> Fault:
        """A 5xx (default 500) with the vendor's server-error body."""
        if not 500 <= code <= 599:
            raise ValueError(f"Fault.server_error: code={code!r} must be in 500..599")
        return Fault("server_error", status_code=code)

    @staticmethod
    def auth(code: int = 401) -> Fault:
        """401 (invalid key) or 403 (permission) with the vendor's body."""
        if code not in (401, 403):
            raise ValueError(f"Fault.auth: code={code!r} must be 401 or 403")
        return Fault("auth", status_code=code)

    @staticmethod
    def quota() -> Fault:
        """Quota or billing exhausted: OpenAI 429 ``insufficient_quota``, Anthropic
        400 "credit balance is too low", Gemini 429 RESOURCE_EXHAUSTED quota."""
        return Fault("quota")

    @staticmethod
    def model_not_found() -> Fault:
        """404: the requested model does not exist, in the vendor's words."""
        return Fault("model_not_found", status_code=404)

    @staticmethod
    def bad_request() -> Fault:
        """400: a malformed request, in the vendor's words."""
        return Fault("bad_request", status_code=400)

    @staticmethod
    def context_too_long() -> Fault:
        """400: the prompt exceeds the model's context window (OpenAI
        ``context_length_exceeded``, Anthropic "prompt is too long: N tokens > M
        maximum", Gemini "The input token count (N) exceeds the maximum ...")."""
        return Fault("context_too_long", status_code=400)

    @staticmethod
    def no_prefill(then: Fault | None = None) -> Fault:
        """A model that refuses an assistant prefill, as Claude 4.6 and later do: a request
        ending in an assistant message gets a 400 (Anthropic's words on that route, a bad
        request elsewhere); any other does ``then`` (default ``Fault.ok()``)."""
        return Fault("no_prefill", status_code=400, then=then or Fault.ok())

    # -- time and chance --------------------------------------------------------

    @staticmethod
    def hang() -> Fault:
        """Accept the request and never answer until the client goes away or the
        server stops (then the connection is dropped)."""
        return Fault("hang")

    @staticmethod
    def delay(seconds: float, then: Fault | None = None) -> Fault:
        """Wait ``seconds`` before doing ``then`` (default ``Fault.ok()``)."""
        _check_seconds("Fault.delay", "seconds", seconds)
        return Fault("delay", seconds=seconds, then=then or Fault.ok())

    @staticmethod
    def first_token(after: float, *, keepalive: float = 0.0, then: Fault | None = None) -> Fault:
        """Send the reply's headers at once, then nothing for ``after`` seconds (or, with
        ``keepalive`` > 0, an SSE ``: keep-alive`` comment every ``keepalive`` seconds),
        then the events of ``then`` (default ``Fault.ok()``; paced by its ``interval``).
        A provider that is slow to its first token, not down. Not streamed, or when
        ``then`` is not a reply: wait ``after`` seconds, then do ``then``."""
        _check_seconds("Fault.first_token", "after", after)
        _check_seconds("Fault.first_token", "keepalive", keepalive)
        return Fault("first_token", seconds=after, interval=keepalive, then=then or Fault.ok())

    @staticmethod
    def stall(after: int = 3, *, keepalive: float = 0.0) -> Fault:
        """Stream ``after`` text chunks, then nothing more until the client goes away (with
        ``keepalive`` > 0, an SSE ``: keep-alive`` comment every ``keepalive`` seconds: a
        connection kept alive by a stream that no longer moves). ``cut_stream(after,
        how="hang")`` plus the keep-alives."""
        if after < 0:
            raise ValueError(f"Fault.stall: after={after!r} must be >= 0")
        _check_seconds("Fault.stall", "keepalive", keepalive)
        return Fault("cut_stream", after=after, how="hang", interval=keepalive)

    @staticmethod
    def latency(
        fast: float = 0.02, slow: float = 2.0, *, rate: float = 0.05, seed: int = 0
    ) -> Fault:
        """A latency distribution: the first token after ``fast`` seconds, or with
        probability ``rate`` after ``slow`` seconds (:meth:`first_token` both; the draws
        are deterministic for a ``seed``, as :meth:`flaky`'s are)."""
        return Fault.flaky(rate, seed, Fault.first_token(slow), otherwise=Fault.first_token(fast))

    @staticmethod
    def flaky(
        rate: float,
        seed: int = 0,
        fault: Fault | None = None,
        *,
        otherwise: Fault | None = None,
    ) -> Fault:
        """With probability ``rate`` do ``fault`` (default ``Fault.server_error()``),
        else ``otherwise`` (default ``Fault.ok()``); the draws are deterministic
        for a ``seed``."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"Fault.flaky: rate={rate!r} must be between 0.0 and 1.0")
        return Fault(
            "flaky",
            rate=rate,
            seed=seed,
            then=fault or Fault.server_error(),
            otherwise=otherwise or Fault.ok(),
            _rng=random.Random(seed),
        )

    def pick(self) -> Fault:
        """The branch a flaky fault takes for the next request (itself otherwise)."""
        if self.kind != "flaky" or self._rng is None:
            return self
        branch = self.then if self._rng.random() < self.rate else self.otherwise
        assert branch is not None
        return branch.pick()

    # -- broken replies ---------------------------------------------------------

    @staticmethod
    def invalid_json() -> Fault:
        """200 whose body (or one stream event) is not valid JSON."""
        return Fault("invalid_json")

    @staticmethod
    def missing_field() -> Fault:
        """200 JSON without the text field (OpenAI ``message``, Responses
        ``output``, Anthropic ``content``, Gemini ``content``, HTTP ``text``);
        streamed events likewise."""
        return Fault("missing_field")

    @staticmethod
    def cut_stream(
        after: int = 2,
        *,
        text: str | None = None,
        how: str = "end",
        tool_calls: Iterable[ScriptedCall | Mapping[str, Any]] = (),
    ) -> Fault:
        """Send ``after`` text chunks, then stop without the terminator (no
        ``[DONE]``/finish_reason, no ``response.completed``, no ``message_stop``,
        no ``finishReason``).
        ``how``: ``"end"`` ends the HTTP response cleanly, ``"abort"`` drops the
        connection, ``"hang"`` stalls until the client goes away. A non-stream
        request gets half of its JSON body, then the connection drops. With
        ``tool_calls``, the stream stops inside the first call (its start and
        half of its arguments sent) where the wire streams calls in pieces."""
        if after < 0:
            raise ValueError(f"Fault.cut_stream: after={after!r} must be >= 0")
        if how not in _CUT_MODES:
            raise ValueError(f"Fault.cut_stream: how={how!r} must be one of {_CUT_MODES}")
        calls = tuple(ScriptedCall.of(c) for c in tool_calls)
        return Fault("cut_stream", after=after, text=text, how=how, tool_calls=calls)

    @staticmethod
    def stream_error(
        error: Fault | None = None, *, after: int = 1, text: str | None = None
    ) -> Fault:
        """Stream ``after`` text chunks after HTTP 200, then ``error`` (an error fault,
        default ``Fault.overloaded()``) as the vendor's in-stream error event: Bedrock an
        ``exception`` frame (``:exception-type: throttlingException``...), Anthropic an
        ``error`` event, the others an SSE ``data:`` line of the error body. Not streamed,
        ``error`` is answered as it would be before a stream."""
        error = error or Fault.overloaded()
        if error.kind not in ERROR_KINDS:
            raise ValueError(f"Fault.stream_error: error={error.kind!r} must be an error fault")
        if after < 0:
            raise ValueError(f"Fault.stream_error: after={after!r} must be >= 0")
        return Fault("stream_error", after=after, text=text, then=error)

    # -- hostile replies: too large, compressed bombs, no end ----------------------

    @staticmethod
    def oversized(size: int, *, gzip: bool = False) -> Fault:
        """A well-formed 200 reply whose text is ``size`` characters ("x"): one JSON
        body, or streamed, one text delta (a single SSE line of about ``size``
        bytes). ``gzip=True`` sends it gzip-compressed (``Content-Encoding: gzip``):
        a reply of 256 MB is about 250 KB on the wire, a "gzip bomb"."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"Fault.oversized: size={size!r} must be an int >= 1 (characters)")
        return Fault("oversized", size=size, gzip=gzip)

    @staticmethod
    def endless(interval: float = 0.0, *, keepalive: bool = False) -> Fault:
        """A 200 reply that never ends, until the client goes away: streamed, text
        deltas (or, with ``keepalive``, only ``: keep-alive`` SSE comments) every
        ``interval`` seconds (0: as fast as the client reads); not streamed, a
        JSON body that never closes (with ``keepalive``, one space at a time)."""
        _check_seconds("Fault.endless", "interval", interval)
        return Fault("endless", interval=interval, keepalive=keepalive)

    # -- the script-file format -------------------------------------------------

    @staticmethod
    def from_spec(spec: Mapping[str, Any] | str) -> Fault:
        """Build a fault from its JSON form, ``{"<factory>": <arg>, **kwargs}`` (the script-file
        format: :func:`providers.simulator.script.fault_from_spec`)."""
        from providers.simulator.script import fault_from_spec  # script.py imports this module

        return fault_from_spec(spec)


def _check_seconds(where: str, name: str, value: float) -> None:
    seconds(value, f"{where}: {name}", allow_zero=True)  # kept as given: 2 is sent as "2"


def _usage(usage: Sequence[int] | None) -> Tokens | None:
    if usage is None:
        return None
    if (
        len(usage) not in (2, 4)
        or any(not isinstance(n, int) or n < 0 for n in usage)
        or sum(usage[2:]) > usage[0]
    ):
        raise ValueError(
            f"Fault.ok: usage={usage!r} must be (input_tokens, output_tokens) or (input_tokens, "
            "output_tokens, cache_read, cache_write), ints >= 0, the cache's part of the input"
        )
    return Tokens(*usage)

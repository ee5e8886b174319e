"""What every vendor HTTP provider shares: settings, the key, one POST, one stream, the cost.

Vendor modules (``_openai``, ``_anthropic``, ``_gemini``) subclass
:class:`VendorProvider` and supply the payload, the reply parsing and the
error mapping; this module owns the boundary: every failure leaves here as a
class of :mod:`orchestrator.errors`, with the library's exception described
(type and masked message, :func:`~providers.http.errors.redacted`) as
``__cause__``, never chained itself, and no message holds the key (the one
actually sent, given or read from the environment), a credential of the URL or
of a credential header, or the prompt.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Mapping
from datetime import timedelta
from typing import Any, ClassVar, TypedDict

from orchestrator.capacity import Budget, Limits, checked
from orchestrator.errors import (
    AuthenticationFailed,
    InvalidOutput,
    ProviderError,
    StreamInterrupted,
)
from orchestrator.keywords import KeywordChecked
from orchestrator.policy import RetryPolicy, retry_policy_or_none
from orchestrator.secrets import Secret, check_endpoint, header_secrets, redact_url, url_secrets
from orchestrator.telemetry import trace_headers
from orchestrator.types import Response, ToolCall, Usage
from orchestrator.units import seconds, seconds_or_none
from providers.http.body import (
    DEFAULT_MAX_RESPONSE_BYTES,
    asking_gzip,
    check_max_bytes,
)
from providers.http.caller import HTTPCaller, error_body
from providers.http.catalogue import FamilyPriced, model_facts
from providers.http.cost import cost_of, validate_price
from providers.http.documents import load_json, load_json_async, off_loop
from providers.http.endpoint import base_url_from_env, join_url
from providers.http.errors import not_found_at
from providers.http.prefill import accepts_prefill as prefill_for
from providers.http.safe_json import MAX_JSON_DEPTH, json_body, parse_json
from providers.http.shape import (
    BAD_SHAPE,
    JSON_OBJECT,
    Missing,
    ReplyReader,
    dig,
    schema_name,
    tokens,
    whole_event,
)
from providers.http.sse import SSEDecoder, SSEEvent

__all__ = [
    "BAD_SHAPE",
    "MAX_JSON_DEPTH",
    "Missing",
    "VendorProvider",
    "VendorSettings",
    "dig",
    "join_url",
    "load_json",
    "load_json_async",
    "off_loop",
    "parse_json",
    "schema_name",
    "tokens",
]


class VendorSettings(TypedDict, total=False):
    """The keyword arguments every vendor provider takes besides ``model`` and
    ``base_url`` (see :class:`VendorProvider` for their defaults and meaning)."""

    api_key: str | Secret | None
    name: str | None
    timeout: float | timedelta
    price: tuple[float, float] | None
    context_window: int | None
    catalogue: bool | None
    client: Any
    transport: str | None
    limits: Limits | None
    budget: Budget | None
    allow_insecure_http: bool
    extra_headers: Mapping[str, str] | None
    max_response_bytes: int
    retry_policy: RetryPolicy | None
    first_token_timeout: float | timedelta | None
    idle_timeout: float | timedelta | None
    accepts_prefill: bool | None


class VendorProvider(KeywordChecked, HTTPCaller, ReplyReader, FamilyPriced):
    """Base of the vendor providers: validated settings and the HTTP boundary.

    ``timeout`` (seconds) bounds a whole attempt, from connecting to the last
    byte, for ``complete`` and ``stream`` alike (``ProviderTimeout``).
    ``max_response_bytes`` (default 32 MiB) caps the reply after decompression,
    a whole stream included (``ResponseTooLarge``, which falls over at once).
    ``price`` (USD per million input and output tokens) and ``context_window``
    (tokens) come from the model catalogue when not given
    (:mod:`providers.http.catalogue`; ``catalogue=`` says where it applies).
    ``retry_policy`` retries this provider by its own :class:`RetryPolicy` instead of
    the agent's. ``transport="reqwest"`` sends with pyreqwest (the ``[fast]`` extra).
    ``first_token_timeout`` / ``idle_timeout`` (seconds, default none) bound the
    wait for the first content and each gap after it; a chain then streams this
    provider even for ``run`` and falls over on ``FirstTokenTimeout`` /
    ``StreamStalled`` (the engine keeps the watch: ``orchestrator.engine.deadlines``).
    ``accepts_prefill`` says whether a mid-stream rescue may continue the delivered text
    as an assistant prefill (default by vendor and model: :mod:`providers.http.prefill`).
    ``limits`` / ``budget``: this provider's quota and spend (:mod:`orchestrator.capacity`).
    """

    family: ClassVar[str] = ""
    #: Whether ``context_window`` holds the reply too (so ``max_tokens`` counts against it).
    window_counts_output: ClassVar[bool] = True
    env_vars: ClassVar[tuple[str, ...]] = ()
    #: Every protocol event of a stream is progress (``orchestrator.engine.deadlines``).
    reports_progress: ClassVar[bool] = True
    #: Read, in order, when built without ``base_url=`` (:mod:`providers.http.endpoint`).
    base_url_vars: ClassVar[tuple[str, ...]] = ()
    default_base_url: ClassVar[str] = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | Secret | None = None,
        name: str | None = None,
        timeout: float | timedelta = 60.0,
        price: tuple[float, float] | None = None,
        context_window: int | None = None,
        catalogue: bool | None = None,
        client: Any = None,
        transport: str | None = None,
        allow_insecure_http: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        retry_policy: RetryPolicy | None = None,
        first_token_timeout: float | timedelta | None = None,
        idle_timeout: float | timedelta | None = None,
        accepts_prefill: bool | None = None,
        limits: Limits | None = None,
        budget: Budget | None = None,
    ) -> None:
        cls = type(self).__name__
        if not isinstance(model, str) or not model:
            raise ValueError(f"{cls}.model: {model!r} must be a non-empty model name")
        self.model = model
        self.base_url = check_endpoint(
            base_url_from_env(
                base_url,
                self.base_url_vars,
                self.default_base_url,
                allow_insecure_http=allow_insecure_http,
            ),
            field=f"{cls}.base_url",
            allow_insecure_http=allow_insecure_http,
            allow_user_info=False,
        )
        self.name = name or f"{self.family}:{model}"
        self.timeout = seconds(timeout, f"{cls}.timeout")
        self.first_token_timeout = seconds_or_none(
            first_token_timeout, f"{cls}.first_token_timeout"
        )
        self.idle_timeout = seconds_or_none(idle_timeout, f"{cls}.idle_timeout")
        self.max_response_bytes = check_max_bytes(
            max_response_bytes, field=f"{cls}.max_response_bytes"
        )
        facts = model_facts(
            self.family,
            model,
            self.base_url,
            price=validate_price(price, field=f"{cls}.price"),
            context_window=context_window,
            catalogue=catalogue,
            owner=cls,
        )
        self.price, self.rates, self.context_window = facts.price, facts.rates, facts.context_window
        self.retry_policy = retry_policy_or_none(retry_policy, cls)
        self.accepts_prefill = prefill_for(accepts_prefill, self.family, model, cls)
        self.limits, self.budget = checked(limits, budget, cls)
        if api_key is not None and not isinstance(api_key, str | Secret):
            raise TypeError(f"{cls}.api_key: expected str, got {type(api_key).__name__}")
        self._key = Secret(api_key) if isinstance(api_key, str) else api_key
        self._use_client(client, transport)
        self._extra_headers = dict(extra_headers or {})
        self._headers: tuple[Secret, dict[str, str]] | None = None
        self._display_url = redact_url(self.base_url)
        # Credentials besides the key, masked in every message: the URL's
        # credential query values, and credential extra headers (Authorization, *key*...).
        self._fixed_secrets = url_secrets(self.base_url) + header_secrets(self._extra_headers)

    def __repr__(self) -> str:
        cls = type(self).__name__
        return f"{cls}(model={self.model!r}, name={self.name!r}, base_url={self._display_url!r})"

    @property
    def gen_ai_provider_name(self) -> str:
        """``gen_ai.provider.name`` on this provider's spans (:mod:`orchestrator.telemetry`)."""
        return _GEN_AI_PROVIDER_NAMES.get(self.family, self.family)

    def secrets(self) -> tuple[Secret, ...]:
        """What messages must mask: the key last sent (given or from the environment),
        the key given, and the URL's and extra headers' credentials."""
        sent = self._headers[0] if self._headers is not None else None
        keys = tuple(k for k in (sent, self._key) if k)
        return keys + self._fixed_secrets

    # -- hooks for the vendor modules ----------------------------------------

    def auth_headers(self, key: Secret) -> dict[str, str]:
        """The headers carrying ``key`` (and any fixed vendor header)."""
        raise NotImplementedError

    def map_error(self, status: int, headers: Mapping[str, str], body: Any) -> ProviderError:
        """The taxonomy error for a non-2xx reply."""
        raise NotImplementedError

    # -- shared machinery ---------------------------------------------------------

    def api_key(self) -> Secret:
        """The key given, else the first env var set; ``AuthenticationFailed`` when neither."""
        if self._key:
            return self._key
        for var in self.env_vars:
            value = os.environ.get(var)
            if value:
                return Secret(value)
        names = " or ".join(self.env_vars)
        raise AuthenticationFailed(
            f"no API key: pass api_key= to {type(self).__name__} or set {names}",
            provider=self.name,
        )

    def request_headers(self) -> dict[str, str]:
        """Content type, auth and extra headers; rebuilt only when the key changes."""
        key = self.api_key()
        cached = self._headers
        if cached is not None and cached[0] == key:
            return cached[1]
        headers = dict(asking_gzip({"content-type": "application/json", **self._extra_headers}))
        headers.update(self.auth_headers(key))
        self._headers = (key, headers)
        return headers

    def response(
        self,
        text: str,
        usage: Usage | None,
        model: Any,
        finish_reason: Any,
        tool_calls: tuple[ToolCall, ...] = (),
    ) -> Response:
        """The final Response, with the cost when ``price`` is set (``model`` and
        ``finish_reason`` as the reply gave them: kept only when strings)."""
        return Response(
            text=text,
            usage=usage,
            model=model if isinstance(model, str) and model else self.model,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            cost_usd=cost_of(usage, self.rates),
            tool_calls=tool_calls,
        )

    async def post_json(self, url: str, payload: Mapping[str, Any], *, plain: bool = False) -> Any:
        """POST ``payload`` and return the parsed 2xx JSON reply; every failure mapped.
        ``plain``: the vendor vouches for ``payload`` as :func:`json_body` takes it."""
        headers = self.request_headers()
        deadline = asyncio.get_running_loop().time() + self.timeout  # reading and parsing
        body = json_body(payload, plain=plain)
        reply = await self.post_reply(url, headers, body, self.secrets)
        if not 200 <= reply.status < 300:
            raise not_found_at(
                self.map_error(reply.status, reply.headers, error_body(reply.body)), url
            )
        if not off_loop(reply.body):  # most replies: parsed here, with no coroutine for it
            return load_json(reply.body, provider=self.name)
        return await load_json_async(
            reply.body, provider=self.name, deadline=deadline, timeout=self.timeout
        )

    async def post_events(
        self, url: str, payload: Mapping[str, Any], *, plain: bool = False
    ) -> AsyncGenerator[list[SSEEvent], None]:
        """The server-sent events of a POST of ``payload``, those of each chunk in one
        list, as they arrive (the POST is sent when they are first asked for); every
        failure mapped. Awaited first, so that a provider can get what its request
        needs (a token) before it is built.

        A transport failure after the reply started is ``StreamInterrupted``, and
        so is a body that ends inside an event whose data is not whole JSON.
        ``timeout`` bounds the whole stream (``ProviderTimeout``), and
        ``max_response_bytes`` the whole body and so each line and event
        (``ResponseTooLarge``). ``plain`` as :meth:`post_json` takes it.
        """
        headers = trace_headers(self.request_headers())
        body = json_body(payload, plain=plain)
        return self.post_stream(url, headers, body, self._events, self.map_error, self.secrets)

    def _events(self, max_bytes: int) -> _VendorEvents:
        return _VendorEvents(self.name, max_bytes)

    def event_json(self, event: SSEEvent) -> Any:
        """The parsed data of a stream event (``InvalidOutput`` when it is not JSON), parsed
        here, on the event loop: for an event :func:`off_loop` says no to (most are a few
        hundred bytes); else :meth:`event_json_off_loop`."""
        return load_json(event.data, provider=self.name, what="stream event")

    async def event_json_off_loop(self, event: SSEEvent) -> Any:
        """:meth:`event_json` for an event :func:`off_loop` says yes to: parsed in a worker
        thread (:func:`load_json_async`), so the event loop runs on meanwhile."""
        return await load_json_async(event.data, provider=self.name, what="stream event")

    def stream_event(self, event: SSEEvent) -> Mapping[str, Any]:
        """:meth:`event_json` for an event that must be a JSON object (:meth:`event_object`)."""
        return self.event_object(load_json(event.data, provider=self.name, what="stream event"))

    async def stream_event_off_loop(self, event: SSEEvent) -> Mapping[str, Any]:
        """:meth:`stream_event` for an event :func:`off_loop` says yes to."""
        return self.event_object(await self.event_json_off_loop(event))

    def event_object(self, data: Any) -> Mapping[str, Any]:
        """A stream event's parsed ``data`` as its JSON object (``InvalidOutput`` when it is
        not one); an in-stream ``{"error": {"code": ...}}`` is raised as :meth:`map_error`
        maps that code (500 when not given or not an HTTP error status)."""
        if not isinstance(data, JSON_OBJECT):
            raise InvalidOutput("stream event is not a JSON object", provider=self.name)
        if "error" in data:
            err = data.get("error")
            code = err.get("code") if isinstance(err, Mapping) else None
            status = code if isinstance(code, int) and 400 <= code <= 599 else 500
            raise self.map_error(status, {}, data)
        return data

    def unfinished(self, parts: list[str], marker: str) -> StreamInterrupted:
        """The error for a stream that ended after ``parts`` without its end ``marker``."""
        return StreamInterrupted(
            f"stream ended after {len(parts)} chunks without {marker}", provider=self.name
        )

    def empty_stream(self, what: str) -> InvalidOutput:
        """The error for a stream that ended well but carried no ``what``."""
        return InvalidOutput(f"stream carried no {what}", provider=self.name)


class _VendorEvents(SSEDecoder):
    """A vendor stream's SSE decoder: an event the body ended inside (no blank line
    after it) is ``StreamInterrupted`` unless its data is whole (JSON or ``[DONE]``)."""

    __slots__ = ("_provider",)

    def __init__(self, provider: str, max_bytes: int) -> None:
        super().__init__(max_bytes=max_bytes)
        self._provider = provider

    def close(self) -> list[SSEEvent]:
        events = super().close()
        if events and not whole_event(events[-1].data):
            raise StreamInterrupted(
                "stream ended inside an event (no blank line after its data)",
                provider=self._provider,
            )
        return events


#: OpenTelemetry GenAI ``gen_ai.provider.name`` values, where they differ from ``family``.
_GEN_AI_PROVIDER_NAMES = {"gemini": "gcp.gemini", "azure": "azure.ai.openai"}

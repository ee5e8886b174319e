"""``HTTPFallback``: hand a request over to any HTTP endpoint of your own.

POSTs ``{"prompt", "messages", "system", "reason", "attempts"}`` as JSON and
reads ``{"text": ...}`` back. ``reason`` and ``attempts`` describe the hand-over
(taken from ``request.metadata["handover"]``, which the engine fills in); no
other metadata and no secret is sent. Use it as the last child of a chain: a
human queue, an internal service, a cached answer.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import ValidationInfo, field_validator

from orchestrator.config.spec import (
    BuildContext,
    Flag,
    PositiveFloat,
    PositiveInt,
    Price,
    ProviderSpec,
)
from orchestrator.errors import (
    AuthenticationFailed,
    GuardrailTriggered,
    InvalidOutput,
    ProviderError,
)
from orchestrator.keywords import KeywordChecked
from orchestrator.policy import RetryPolicy, retry_policy_or_none
from orchestrator.secrets import (
    Secret,
    check_endpoint,
    has_url_credentials,
    header_secrets,
    redact_url,
    split_user_info,
    url_secrets,
)
from orchestrator.types import Request, Response, ToolCall, Usage
from orchestrator.units import seconds, seconds_or_none
from providers.http.base import BAD_SHAPE, Missing, load_json_async, tokens
from providers.http.body import ACCEPT_ENCODING, DEFAULT_MAX_RESPONSE_BYTES, check_max_bytes
from providers.http.caller import HTTPCaller, error_body
from providers.http.cost import bill, cost_of, validate_price
from providers.http.errors import (
    Redacted,
    error_fields,
    map_openai_error,
    redacted,
    short,
)
from providers.http.handover import handover_payload
from providers.http.safe_json import json_body
from providers.http.spec import Transport, check_url
from providers.http.tools import MAX_TOOL_CALLS, tool_call

__all__ = ["HTTPFallback", "HTTPSpec"]

HeadersArg = (
    Mapping[str, str]
    | Callable[[], Mapping[str, str]]
    | Callable[[], Awaitable[Mapping[str, str]]]
    | None
)


def _has_authorization(headers: Mapping[str, str]) -> bool:
    return any(str(name).lower() == "authorization" for name in headers)


class HTTPFallback(KeywordChecked, HTTPCaller):
    """POST the request to ``url`` and use the ``text`` of the JSON reply.

    ``headers`` is a dict or a sync/async callable returning one (called on
    every request, for fresh tokens). ``read_text(json) -> str`` reads another
    reply shape. A non-2xx reply raises the taxonomy error for its status,
    naming the status and the URL; a reply without a string ``text`` is
    ``InvalidOutput``; one over ``max_response_bytes`` (default 32 MiB, after
    decompression) is ``ResponseTooLarge``. ``timeout`` bounds the whole call.
    ``transport="reqwest"`` sends with pyreqwest (the ``[fast]`` extra).
    Credentials (``headers=``, or user info / a token query parameter in
    ``url``) travel only over https or to loopback unless
    ``allow_insecure_http=True``; their values are masked in every message.
    User info (``https://user:password@host/...``) is sent as a Basic
    ``Authorization`` header, so it cannot be combined with another one.
    ``supports_tools=True`` declares that the endpoint takes ``tools`` and
    ``tool_choice`` and may answer ``{"tool_calls": [{"id", "name",
    "arguments": {...}}]}``; without it a request with tools skips this
    provider without a request (``ToolsUnsupported``).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: HeadersArg = None,
        read_text: Callable[[Any], str] | None = None,
        name: str | None = None,
        timeout: float | timedelta = 60.0,
        price: tuple[float, float] | None = None,
        client: Any = None,
        transport: str | None = None,
        allow_insecure_http: bool = False,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        retry_policy: RetryPolicy | None = None,
        first_token_timeout: float | timedelta | None = None,
        idle_timeout: float | timedelta | None = None,
        supports_tools: bool = False,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"HTTPFallback.url: expected str, got {type(url).__name__}")
        checked = check_endpoint(
            url,
            field="HTTPFallback.url",
            allow_insecure_http=allow_insecure_http
            or (headers is None and not has_url_credentials(url)),
        )
        if headers is not None and not (isinstance(headers, Mapping) or callable(headers)):
            raise TypeError(
                "HTTPFallback.headers: expected a dict or a callable returning one, "
                f"got {type(headers).__name__}"
            )
        # User info in the URL is sent as a Basic Authorization header instead.
        self.url, self._basic = split_user_info(checked)
        if self._basic and isinstance(headers, Mapping) and _has_authorization(headers):
            raise ValueError(
                f"HTTPFallback: url={redact_url(checked)!r} carries user info and headers= "
                "an Authorization header; give the credential once"
            )
        self._headers = headers
        self._read_text = read_text
        self._display = redact_url(self.url)
        self._fixed_secrets = url_secrets(checked) + header_secrets(
            {
                "authorization": self._basic or "",
                **(headers if isinstance(headers, Mapping) else {}),
            }
        )
        parts = urlsplit(self.url)
        host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        self.name = name or f"http:{host}"
        self.timeout = seconds(timeout, "HTTPFallback.timeout")
        # Read by the engine (its stream is the whole reply at once: one bound on it).
        self.first_token_timeout = seconds_or_none(
            first_token_timeout, "HTTPFallback.first_token_timeout"
        )
        self.idle_timeout = seconds_or_none(idle_timeout, "HTTPFallback.idle_timeout")
        self.max_response_bytes = check_max_bytes(
            max_response_bytes, field="HTTPFallback.max_response_bytes"
        )
        self.price = validate_price(price, field="HTTPFallback.price")
        self.retry_policy = retry_policy_or_none(retry_policy, "HTTPFallback")
        self.supports_tools = bool(supports_tools)
        self._use_client(client, transport)

    def __repr__(self) -> str:
        return f"HTTPFallback(url={self._display!r}, name={self.name!r})"

    async def _request_headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept-encoding": ACCEPT_ENCODING}
        if self._basic:
            headers["authorization"] = self._basic
        source = self._headers
        if source is None:
            return headers
        failure: AuthenticationFailed | None = None
        try:
            value: Any = source if isinstance(source, Mapping) else source()
            if inspect.isawaitable(value):
                value = await value
            if not isinstance(value, Mapping):
                raise TypeError(f"expected a dict of headers, got {type(value).__name__}")
            headers.update({str(k): str(v) for k, v in value.items()})
        except Exception as exc:
            # Named, not chained nor quoted: a token source's error may hold the credential
            # it used, in a form no mask knows (aiohttp's ClientResponseError repr holds the
            # request headers).
            failure = AuthenticationFailed(
                f"headers callable failed ({type(exc).__name__}); fix the token source",
                provider=self.name,
            )
            failure.__cause__ = Redacted(
                f"{type(exc).__name__} (message withheld: it may quote a credential)"
            )
        if failure is not None:
            raise failure  # not in the except block, where exc would be the context
        if self._basic and callable(source) and _has_authorization(value):
            raise AuthenticationFailed(
                "the headers callable returned an Authorization header and the url carries "
                "user info; give the credential once",
                provider=self.name,
            )
        return headers

    def _secrets(self, sent: Mapping[str, str]) -> tuple[Secret, ...]:
        """The URL's credentials and the credential headers' values actually sent."""
        if isinstance(self._headers, Mapping):
            return self._fixed_secrets
        return header_secrets(sent) + self._fixed_secrets

    def _error(
        self, status: int, headers: Mapping[str, str], body: bytes, secrets: tuple[Secret, ...]
    ) -> ProviderError:
        # The OpenAI-style {"error": {"message", "type", "code"}} body is the common
        # convention; its hints (quota, context length) refine the status.
        parsed = error_body(body)
        err = map_openai_error(status, headers, parsed, provider=self.name, key=secrets)
        vendor = short(error_fields(parsed)[0], secrets)
        if 300 <= status <= 399:
            vendor = "a redirect, not followed so that credentials stay on url; check url"
        err.message = f"POST {self._display} answered {status}" + (f": {vendor}" if vendor else "")
        err.args = (err.message,)
        return err

    def _parse(self, data: Any) -> Response:
        if isinstance(data, Mapping) and data.get("finish_reason") == "content_filter":
            raise GuardrailTriggered(
                f"{self._display} withheld the reply (finish_reason=content_filter)",
                provider=self.name,
            )
        text = self._text(data)
        usage = data.get("usage") if isinstance(data, Mapping) else None
        failure: InvalidOutput | None = None
        try:
            use = (
                Usage(tokens(usage.get("input_tokens")), tokens(usage.get("output_tokens")))
                if isinstance(usage, Mapping)
                else None
            )
        except BAD_SHAPE as exc:
            failure = self._invalid(
                f"the reply's usage is not token counts ({type(exc).__name__}; "
                f"from {self._display}): give integer input_tokens/output_tokens",
                exc,
            )
        if failure is not None:
            raise failure  # not in the except block, where exc would be the context
        model = data.get("model") if isinstance(data, Mapping) else None
        try:
            calls = self._tool_calls(data) if self.supports_tools else ()
        except InvalidOutput as error:
            bill(error, use, self.price)  # the reply said what it used: it was billed
            raise
        return Response(
            text=text,
            usage=use,
            model=model if isinstance(model, str) else None,
            cost_usd=cost_of(use, self.price),
            tool_calls=calls,
        )

    def _tool_calls(self, data: Any) -> tuple[ToolCall, ...]:
        """The reply's ``tool_calls`` (``InvalidOutput`` when they are malformed)."""
        raw = data.get("tool_calls") if isinstance(data, Mapping) else None
        failure: InvalidOutput | None = None
        try:
            if raw is not None and (not isinstance(raw, list) or len(raw) > MAX_TOOL_CALLS):
                raise Missing(f"tool_calls is not a list of at most {MAX_TOOL_CALLS} calls")
            return tuple(
                tool_call(c.get("id"), c.get("name"), c.get("arguments")) for c in raw or ()
            )
        except BAD_SHAPE as exc:
            failure = self._invalid(f"the reply's tool_calls are malformed: {exc}", exc)
        raise failure  # not in the except block, where exc would be the context

    def _text(self, data: Any) -> str:
        """The reply's text: ``read_text(data)``, or its ``text`` string."""
        failure: InvalidOutput | None = None
        try:
            text = (
                self._read_text(data)
                if self._read_text
                else (data.get("text") if isinstance(data, Mapping) else None)
            )
        except Exception as exc:
            failure = self._invalid(
                f"read_text raised {type(exc).__name__} on the reply from {self._display}", exc
            )
        if failure is not None:
            raise failure  # not in the except block, where exc would be the context
        if not isinstance(text, str):
            what = "read_text(reply)" if self._read_text else 'the reply\'s "text"'
            raise InvalidOutput(
                f"{what} is {type(text).__name__}, expected a string (from {self._display})",
                provider=self.name,
            )
        return text

    def _invalid(self, message: str, exc: Exception) -> InvalidOutput:
        """``InvalidOutput`` with ``exc`` described as its cause, not chained (what
        ``read_text`` or a conversion raises may quote the reply)."""
        err = InvalidOutput(message, provider=self.name)
        err.__cause__ = redacted(exc, self._fixed_secrets)
        return err

    async def complete(self, request: Request) -> Response:
        """POST the request; every failure raised as an ``orchestrator.errors`` class."""
        headers = await self._request_headers()
        body = json_body(handover_payload(request))
        deadline = asyncio.get_running_loop().time() + self.timeout  # reading and parsing
        reply = await self.post_reply(self.url, headers, body, lambda: self._secrets(headers))
        if not 200 <= reply.status < 300:
            raise self._error(reply.status, reply.headers, reply.body, self._secrets(headers))
        data = await load_json_async(
            reply.body, provider=self.name, deadline=deadline, timeout=self.timeout
        )
        return self._parse(data)

    async def stream(self, request: Request) -> AsyncIterator[str | Response]:
        """The whole reply as one chunk, then the Response (the endpoint does not stream)."""
        response = await self.complete(request)
        if response.text:
            yield response.text
        yield response


# -- the chain file's ``type: http`` -----------------------------------------------


class HTTPSpec(ProviderSpec):
    """``type: http`` in a chain file: an :class:`HTTPFallback`.

    Unlike ``HTTPFallback(url)`` in code, a file's plain ``http://`` URL to
    another machine needs ``allow_insecure_http: true`` even without headers.
    """

    order = 40
    type: Literal["http"]
    allow_insecure_http: Flag = False
    url: str
    headers: dict[str, str] | None = None
    timeout: PositiveFloat | None = None
    first_token_timeout: PositiveFloat | None = None
    idle_timeout: PositiveFloat | None = None
    max_response_bytes: PositiveInt | None = None
    price: Price | None = None
    supports_tools: Flag | None = None
    transport: Transport | None = None

    @field_validator("url")
    @classmethod
    def _endpoint(cls, url: str, info: ValidationInfo) -> str:
        return check_url(url, info, allow_user_info=True)

    def build(self, ctx: BuildContext) -> HTTPFallback:
        own = {
            "headers",
            "timeout",
            "first_token_timeout",
            "idle_timeout",
            "max_response_bytes",
            "price",
            "supports_tools",
            "transport",
        }
        return HTTPFallback(
            self.url,
            name=ctx.name,
            allow_insecure_http=self.allow_insecure_http,
            **self.model_dump(include=own, exclude_none=True),
        )

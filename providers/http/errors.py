"""Translate HTTP failures into :mod:`orchestrator.errors`: pure functions, one per wire format.

Each ``map_*_error(status, headers, body, provider=...)`` takes the HTTP status,
the reply headers and the parsed JSON body (``None`` when it was not JSON) and
returns the error instance to raise; nothing here does I/O. The vendor's own
message is kept (cut to 200 characters, key-shaped strings masked) because it
tells the user what to fix; the request text never is.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from orchestrator.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    ContextWindowExceeded,
    GuardrailTriggered,
    InvalidRequest,
    ModelNotFound,
    Overloaded,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    ServerError,
    StreamInterrupted,
    UnusableError,
)
from orchestrator.secrets import Secret, redact_urls, scrub

__all__ = [
    "error_fields",
    "header",
    "map_anthropic_error",
    "map_gemini_error",
    "map_openai_error",
    "map_status",
    "map_transport_error",
    "parse_retry_after",
    "Redacted",
    "redacted",
    "retry_hint",
    "short",
]

MESSAGE_LIMIT = 200

Secrets = Secret | Iterable[Secret] | None
"""What the mappers mask: one key, several secrets (key, URL and header credentials), or none."""


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Header ``name`` (lower case) from any mapping, matching case-insensitively."""
    value = headers.get(name)
    if value is None:
        for key, v in headers.items():
            if key.lower() == name:
                return v
    return value


def short(text: str, *secrets: Secrets) -> str:
    """``text`` with secrets masked, on one line, cut to about 200 characters."""
    text = " ".join(scrub(text, *secrets).split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


class Redacted(Exception):
    """What a project error chains as ``__cause__`` in place of a library's exception:
    the type name and a masked, cut message, and nothing else.

    Never chain the library's exception itself: aiohttp's ``ClientResponseError``
    holds the request headers (the key), ``JSONDecodeError.doc`` the whole body,
    and either could reach a log through ``repr``, pickle or a traceback. Raise the
    project error *outside* the ``except`` block, or ``__context__`` keeps the original.
    """


def redacted(exc: BaseException, *secrets: Secrets) -> Redacted:
    """``exc`` described as a :class:`Redacted` (URLs cut, ``secrets`` masked, one line)."""
    return Redacted(short(redact_urls(f"{type(exc).__name__}: {exc}"), *secrets))


def _finite(text: str | None) -> float | None:
    """``text`` as a finite float, else ``None`` ("nan" and "1e999" are no usable hint)."""
    if text is None:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date).

    ``None`` when neither header is present or parseable; never negative.
    ``now`` (epoch seconds) is for tests; it defaults to ``time.time()``.
    """
    ms = _finite(header(headers, "retry-after-ms"))
    if ms is not None:
        return max(0.0, ms / 1000.0)
    value = header(headers, "retry-after")
    if value is None:
        return None
    value = value.strip()
    delay = _finite(value)
    if delay is not None:
        return max(0.0, delay)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _status_reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "unexpected status"


def map_status(
    status: int,
    headers: Mapping[str, str],
    message: str | None,
    *,
    provider: str,
    retry_after: float | None = None,
) -> ProviderError:
    """The error for ``status`` alone, when the body says nothing more specific.

    408 and 5xx are transient (529 ``Overloaded``), 429 ``RateLimited`` with the
    parsed Retry-After, 401/403 auth, 402 quota, 404 model, 413 context window,
    other 4xx ``InvalidRequest``; 1xx/3xx mean a wrong ``base_url``.
    """
    text = message or _status_reason(status)
    if 300 <= status <= 399:
        return UnusableError(
            f"{text}: base_url answered a redirect ({status}), which is not followed so that "
            "credentials stay on base_url; check base_url (scheme, host, path)",
            provider=provider,
            status=status,
        )
    if status == 429:
        wait = parse_retry_after(headers)
        wait = retry_after if wait is None else wait
        return RateLimited(text, provider=provider, status=status, retry_after=wait)
    if status == 529:
        return Overloaded(text, provider=provider, status=status)
    if status == 408 or 500 <= status <= 599:
        return ServerError(text, provider=provider, status=status)
    if status in (401, 403):
        return AuthenticationFailed(text, provider=provider, status=status)
    if status == 402:
        return QuotaExhausted(text, provider=provider, status=status)
    if status == 404:
        return ModelNotFound(text, provider=provider, status=status)
    if status == 413:
        return ContextWindowExceeded(text, provider=provider, status=status)
    if 400 <= status <= 499:
        return InvalidRequest(text, provider=provider, status=status)
    return UnusableError(
        f"{text}: unexpected HTTP status; check base_url", provider=provider, status=status
    )


def error_fields(body: Any) -> tuple[str, str, str]:
    """(message, type, code) of ``{"error": {...}}``, ``{"error": "..."}`` or ``{"message"}``."""
    if not isinstance(body, Mapping):
        return "", "", ""
    err = body.get("error", body)
    if isinstance(err, str):
        return err, "", ""
    if not isinstance(err, Mapping):
        return "", "", ""
    message = err.get("message") or err.get("detail") or ""
    etype = err.get("type") or err.get("status") or ""
    code = err.get("code") or ""
    return str(message), str(etype), str(code)


_OPENAI_QUOTA = {"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}
_OPENAI_QUOTA_TEXT = re.compile(
    r"exceeded your current quota|check your plan and billing details", re.IGNORECASE
)
_OPENAI_GUARDRAIL = {"content_filter", "content_policy_violation"}
_CONTEXT_TEXT = re.compile(
    r"maximum context length|context[_ ]length|context window|prompt is too long|"
    r"exceed context limit|input token count.{0,80}exceeds|exceeds the maximum number of tokens|"
    r"too many tokens|token limit",
    re.IGNORECASE,
)


_UNIT = r"(?:ms|milliseconds?|h|hours?|m|mins?|minutes?|s|secs?|seconds?)(?![a-z])"
_TRY_AGAIN = re.compile(
    rf"(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*{_UNIT}\s*)+)", re.IGNORECASE
)
_DURATION_PART = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNIT})", re.IGNORECASE)


def _unit_seconds(unit: str) -> float:
    u = unit.lower()
    if u.startswith(("ms", "milli")):
        return 0.001
    if u.startswith("h"):
        return 3600.0
    return 60.0 if u.startswith("m") else 1.0


def retry_hint(message: str) -> float | None:
    """Seconds from "Please try again in 20s" / "in 1.5s" / "in 300ms" / "in 1m30s" /
    "retry after 5 seconds" (or None)."""
    match = _TRY_AGAIN.search(message)
    if match is None:
        return None
    parts = _DURATION_PART.findall(match.group(1))
    total = sum(float(n) * _unit_seconds(u) for n, u in parts)
    return total if math.isfinite(total) else None  # an overflow is no hint


def map_openai_error(
    status: int,
    headers: Mapping[str, str],
    body: Any,
    *,
    provider: str,
    key: Secrets = None,
) -> ProviderError:
    """An OpenAI-compatible error reply (``{"error": {message, type, param, code}}``).

    Quota is decided from ``code``/``type`` (``insufficient_quota``,
    ``billing_*``): a per-minute 429 (``rate_limit_exceeded``) also mentions
    billing in its text and is ``RateLimited``, waiting for the Retry-After
    header or else the message's "try again in 20s". Only a 429 with no code
    and no wait hint falls back to OpenAI's quota wording ("exceeded your
    current quota", "check your plan and billing details").
    """
    raw, etype, code = error_fields(body)
    message = short(raw, key) or None
    kind = {etype, code}
    if kind & _OPENAI_QUOTA or any(k.startswith("billing_") for k in kind):
        return QuotaExhausted(message or "quota exhausted", provider=provider, status=status)
    if status == 429 or code == "rate_limit_exceeded":
        wait = parse_retry_after(headers)
        hint = retry_hint(raw)
        if not code and wait is None and hint is None and _OPENAI_QUOTA_TEXT.search(raw):
            # No code to go by (some compatible servers): OpenAI's own quota wording.
            return QuotaExhausted(message or "quota exhausted", provider=provider, status=status)
        return RateLimited(
            message or "rate limited",
            provider=provider,
            status=status,
            retry_after=hint if wait is None else wait,
        )
    if "context_length_exceeded" in kind or (status in (400, 413) and _CONTEXT_TEXT.search(raw)):
        return ContextWindowExceeded(
            message or "context too long", provider=provider, status=status
        )
    if kind & _OPENAI_GUARDRAIL:
        return GuardrailTriggered(message or "content filtered", provider=provider, status=status)
    if code == "model_not_found":
        return ModelNotFound(message or "model not found", provider=provider, status=status)
    if code == "invalid_api_key":
        return AuthenticationFailed(message or "invalid API key", provider=provider, status=status)
    return map_status(status, headers, message, provider=provider)


_ANTHROPIC_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def map_anthropic_error(
    status: int | None,
    headers: Mapping[str, str],
    body: Any,
    *,
    provider: str,
    key: Secrets = None,
) -> ProviderError:
    """An Anthropic error (``{"type": "error", "error": {type, message}}``).

    ``status=None`` for an ``error`` event inside a stream: the error type
    then stands for the status it is documented with (overloaded_error = 529).
    """
    raw, etype, _ = error_fields(body)
    message = short(raw, key) or None
    low = raw.lower()
    code = status if status is not None else _ANTHROPIC_STATUS.get(etype, 500)
    if "credit balance" in low or etype == "billing_error":
        return QuotaExhausted(message or "billing error", provider=provider, status=status)
    if etype == "overloaded_error" or code == 529:
        return Overloaded(message or "overloaded", provider=provider, status=status)
    if etype == "request_too_large" or (code in (400, 413) and _CONTEXT_TEXT.search(raw)):
        return ContextWindowExceeded(message or "prompt too long", provider=provider, status=status)
    err = map_status(code, headers, message, provider=provider)
    err.status = status
    return err


def _gemini_details(body: Any) -> tuple[list[str], float | None, list[str]]:
    """(quota ids, RetryInfo delay in seconds, ErrorInfo reasons) from ``error.details``."""
    quota_ids: list[str] = []
    reasons: list[str] = []
    delay: float | None = None
    err = body.get("error") if isinstance(body, Mapping) else None
    details = err.get("details") if isinstance(err, Mapping) else None
    for item in details if isinstance(details, list) else []:
        if not isinstance(item, Mapping):
            continue
        kind = str(item.get("@type", ""))
        if kind.endswith("QuotaFailure"):
            violations = item.get("violations")
            for v in violations if isinstance(violations, list) else []:
                if isinstance(v, Mapping):
                    quota_ids.append(str(v.get("quotaId", "")))
        elif kind.endswith("RetryInfo"):
            match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s\s*", str(item.get("retryDelay", "")))
            if match:
                delay = _finite(match.group(1))  # "9" * 400 is inf: no hint
        elif kind.endswith("ErrorInfo"):
            reasons.append(str(item.get("reason", "")))
    return quota_ids, delay, reasons


def map_gemini_error(
    status: int,
    headers: Mapping[str, str],
    body: Any,
    *,
    provider: str,
    key: Secrets = None,
) -> ProviderError:
    """A Gemini error (``{"error": {code, message, status, details}}``).

    A 429 is ``QuotaExhausted`` when a per-day quota is named, or when it talks
    of quota/billing with no retry delay; otherwise ``RateLimited`` with the
    ``Retry-After`` header or the ``RetryInfo.retryDelay`` detail.
    """
    raw, grpc_status, _ = error_fields(body)
    message = short(raw, key) or None
    low = raw.lower()
    quota_ids, delay, reasons = _gemini_details(body)
    if "API_KEY_INVALID" in reasons or "api key not valid" in low or "api key expired" in low:
        return AuthenticationFailed(message or "invalid API key", provider=provider, status=status)
    if _CONTEXT_TEXT.search(raw) and status in (400, 413):
        return ContextWindowExceeded(message or "input too long", provider=provider, status=status)
    if status == 429 or grpc_status == "RESOURCE_EXHAUSTED":
        waits = parse_retry_after(headers)
        per_day = any("perday" in q.lower() for q in quota_ids)
        billing = "quota" in low and ("billing" in low or "plan" in low)
        no_wait = delay is None and waits is None
        if per_day or "credits are depleted" in low or (billing and no_wait):
            return QuotaExhausted(message or "quota exhausted", provider=provider, status=status)
        return RateLimited(
            message or "rate limited",
            provider=provider,
            status=status,
            retry_after=waits if waits is not None else delay,
        )
    if grpc_status == "FAILED_PRECONDITION":
        # "User location is not supported", "enable billing": not this request's fault, another
        # region or vendor can serve it.
        return UnusableError(message or "precondition failed", provider=provider, status=status)
    return map_status(status, headers, message, provider=provider)


def map_transport_error(
    timed_out: bool,
    detail: str,
    *,
    provider: str,
    timeout: float,
    streaming: bool = False,
) -> ProviderError:
    """A failure below HTTP: ``ProviderTimeout`` past ``timeout``, ``StreamInterrupted``
    when a stream broke after it started, else ``ConnectionFailed``."""
    if timed_out:
        where = "for the whole stream" if streaming else "for the reply"
        return ProviderTimeout(
            f"waited {timeout:g}s {where} (timeout={timeout:g}); "
            "raise timeout= if the model is slow",
            provider=provider,
        )
    if streaming:
        return StreamInterrupted(f"stream broke: {detail}", provider=provider)
    return ConnectionFailed(detail, provider=provider)

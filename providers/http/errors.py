"""The readers of each vendor's error replies, on top of the one status table.

What a status or a vendor error code means by itself is :mod:`providers.http.status`
(its names are re-exported here); this module reads each vendor's error body with it.
Each ``map_*_error(status, headers, body, provider=...)`` takes the HTTP status,
the reply headers and the parsed JSON body (``None`` when it was not JSON) and
returns the error instance to raise; nothing here does I/O. The vendor's own
message is kept (cut to 200 characters, key-shaped strings masked) because it
tells the user what to fix; the request text never is. The three vendor readers
stay here, next to each other, rather than in their vendor modules: ``HTTPFallback``
reads OpenAI-shaped errors too, and no vendor module may import another's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from orchestrator.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    ContextWindowExceeded,
    GuardrailTriggered,
    ModelNotFound,
    Overloaded,
    PrefillUnsupported,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    StreamInterrupted,
    UnusableError,
)
from orchestrator.secrets import redact_url
from providers.http.prefill import PREFILL_REFUSED
from providers.http.redact import Redacted, Secrets, redacted, short
from providers.http.retry_after import finite_seconds, header, parse_retry_after, retry_hint
from providers.http.status import (
    CONTEXT_WINDOW,
    ERROR_CODES,
    STATUS_CLASSES,
    code_class,
    map_status,
    status_class,
)

__all__ = [
    "CONTEXT_WINDOW",
    "ERROR_CODES",
    "STATUS_CLASSES",
    "code_class",
    "error_fields",
    "header",
    "map_anthropic_error",
    "map_gemini_error",
    "map_openai_error",
    "map_status",
    "map_transport_error",
    "map_vertex_error",
    "not_found_at",
    "parse_retry_after",
    "Redacted",
    "redacted",
    "retry_hint",
    "short",
    "status_class",
]


_DEFAULT_TEXT: Mapping[type[ProviderError], str] = MappingProxyType(
    {
        QuotaExhausted: "quota exhausted",
        ContextWindowExceeded: "context too long",
        GuardrailTriggered: "content filtered",
        ModelNotFound: "model not found",
        AuthenticationFailed: "invalid API key",
        Overloaded: "overloaded",
        UnusableError: "precondition failed",
    }
)


def _decided(
    cls: type[ProviderError], message: str | None, *, provider: str, status: int | None
) -> ProviderError:
    return cls(message or _DEFAULT_TEXT.get(cls, cls.__name__), provider=provider, status=status)


def not_found_at(error: ProviderError, url: str) -> ProviderError:
    """``error``, and when it is a 404 ``ModelNotFound``, its message names the URL that
    answered (scheme, host, port and path: never the query) and says what to check.

    A ``base_url`` without its ``/v1`` 404s exactly like a missing model; users hunted
    the model name for what was a path mistake.
    """
    if isinstance(error, ModelNotFound) and error.status == 404:
        # The hint first: summaries (str(FallbackError)) keep only a message's start.
        error.message = (
            f"check base_url or the model name: POST {redact_url(url)} answered 404"
            f" ({error.message})"
        )
        error.args = (error.message,)
    return error


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


_OPENAI_QUOTA_TEXT = re.compile(
    r"exceeded your current quota|check your plan and billing details", re.IGNORECASE
)


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
    decided = code_class(code, etype)
    if decided is QuotaExhausted:
        return _decided(decided, message, provider=provider, status=status)
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
    if decided is None and status in (400, 413) and CONTEXT_WINDOW.search(raw):
        decided = ContextWindowExceeded
    if decided is not None:
        return _decided(decided, message, provider=provider, status=status)
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
    code = status if status is not None else _ANTHROPIC_STATUS.get(etype, 500)
    decided = code_class(etype)
    if "credit balance" in raw.lower():
        decided = QuotaExhausted
    elif decided is None and code in (400, 413) and CONTEXT_WINDOW.search(raw):
        decided = ContextWindowExceeded
    elif code == 400 and PREFILL_REFUSED.search(raw):
        decided = PrefillUnsupported
    if decided is not None:
        return _decided(decided, message, provider=provider, status=status)
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
                delay = finite_seconds(match.group(1))  # "9" * 400 is inf: no hint
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
    decided = code_class(*reasons, grpc_status)
    if "api key not valid" in low or "api key expired" in low:
        decided = AuthenticationFailed
    elif decided is None and status in (400, 413) and CONTEXT_WINDOW.search(raw):
        decided = ContextWindowExceeded
    elif decided is None and (status == 429 or grpc_status == "RESOURCE_EXHAUSTED"):
        waits = parse_retry_after(headers)
        per_day = any("perday" in q.lower() for q in quota_ids)
        billing = "quota" in low and ("billing" in low or "plan" in low)
        no_wait = delay is None and waits is None
        if not (per_day or "credits are depleted" in low or (billing and no_wait)):
            return RateLimited(
                message or "rate limited",
                provider=provider,
                status=status,
                retry_after=waits if waits is not None else delay,
            )
        decided = QuotaExhausted
    if decided is not None:
        return _decided(decided, message, provider=provider, status=status)
    return map_status(status, headers, message, provider=provider)


#: Vertex AI's "this model is not offered here" (a 400 or 403 in some locations): another
#: location or platform can serve the request, so it is the model missing, not the request.
_NOT_IN_LOCATION = re.compile(
    r"not (?:available|supported|servable|enabled|found)\b.{0,120}\b(?:region|location)"
    r"|(?:region|location)\b.{0,120}\bnot (?:available|supported|servable|enabled)",
    re.IGNORECASE | re.DOTALL,
)


def map_vertex_error(
    status: int,
    headers: Mapping[str, str],
    body: Any,
    *,
    publisher: str,
    provider: str,
    key: Secrets = None,
) -> ProviderError:
    """A Vertex AI error: Google's own (``{"error": {code, message, status}}``: quota,
    permission, a model missing in the location) read as Gemini's, an Anthropic model's
    own (``{"type": "error", ...}``, passed through by ``rawPredict``) as Anthropic's.

    A model not offered in this location (404, or a 400/403 saying so) is
    ``ModelNotFound``: unusable here, so the chain falls over at once.
    """
    raw, grpc_status, _ = error_fields(body)
    if status in (400, 403) and _NOT_IN_LOCATION.search(raw[:2000]):
        return ModelNotFound(short(raw, key) or "model not found", provider=provider, status=status)
    if publisher == "anthropic" and not grpc_status.isupper():
        return map_anthropic_error(status, headers, body, provider=provider, key=key)
    return map_gemini_error(status, headers, body, provider=provider, key=key)


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

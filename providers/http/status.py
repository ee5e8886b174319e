"""The one status table: what an HTTP error status, or a vendor's error code, means.

What an HTTP error status means (:data:`STATUS_CLASSES`, :func:`status_class`,
:func:`map_status`), which vendor error types and codes decide the class by themselves
(:data:`ERROR_CODES`) and how a too-long prompt is worded (:data:`CONTEXT_WINDOW`) are
written here once; the HTTP providers' error readers (:mod:`providers.http.errors`)
and the coding-agent CLI classifier both read them, so the same reply means the same
whichever way it reaches us.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from orchestrator.errors import (
    AuthenticationFailed,
    ContextWindowExceeded,
    GuardrailTriggered,
    InvalidRequest,
    ModelNotFound,
    Overloaded,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    ServerError,
    UnusableError,
)
from providers.http.retry_after import parse_retry_after

if TYPE_CHECKING:  # in annotations only
    from orchestrator.errors import ProviderError

__all__ = [
    "CONTEXT_WINDOW",
    "ERROR_CODES",
    "STATUS_CLASSES",
    "code_class",
    "map_status",
    "status_class",
]

#: What an HTTP error status means when nothing more specific is known. Not listed:
#: another 5xx is a ``ServerError``; another 4xx (405, 410, 418, 451, ...) says nothing
#: about the request, only that this endpoint will not serve it, so it is an
#: ``UnusableError``: not retried (the vendors' SDKs do not retry it either), handed over.
STATUS_CLASSES: Mapping[int, type[ProviderError]] = MappingProxyType(
    {
        400: InvalidRequest,  # the request is malformed: every provider would refuse it
        401: AuthenticationFailed,
        402: QuotaExhausted,
        403: AuthenticationFailed,
        404: ModelNotFound,
        408: ServerError,
        409: ServerError,  # a conflict or lock that passes; OpenAI's, Anthropic's SDKs retry it
        413: ContextWindowExceeded,
        422: InvalidRequest,
        429: RateLimited,
        529: Overloaded,
    }
)

#: Vendor error types and codes that decide the class whatever the status says
#: (OpenAI ``code``/``type``, Anthropic ``error.type``, Gemini status and ErrorInfo reason).
#: Any other ``billing_*`` code is a ``QuotaExhausted`` too.
ERROR_CODES: Mapping[str, type[ProviderError]] = MappingProxyType(
    {
        "insufficient_quota": QuotaExhausted,
        "billing_error": QuotaExhausted,
        "context_length_exceeded": ContextWindowExceeded,
        "request_too_large": ContextWindowExceeded,
        "content_filter": GuardrailTriggered,
        "content_policy_violation": GuardrailTriggered,
        "model_not_found": ModelNotFound,
        "DeploymentNotFound": ModelNotFound,  # Azure OpenAI: no such deployment in this resource
        "OperationNotSupported": UnusableError,  # Azure: this deployment cannot chat; another can
        "invalid_api_key": AuthenticationFailed,
        "API_KEY_INVALID": AuthenticationFailed,
        "overloaded_error": Overloaded,
        # "User location is not supported", "enable billing": not this request's fault,
        # another region or vendor can serve it.
        "FAILED_PRECONDITION": UnusableError,
        # Amazon Bedrock's exception types (ThrottlingException is a 429: RateLimited).
        "ServiceUnavailableException": ServerError,
        "ModelNotReadyException": ServerError,  # loading: AWS's own SDKs retry it
        "InternalServerException": ServerError,
        "ModelErrorException": ServerError,  # the model failed this once (424)
        "ModelTimeoutException": ProviderTimeout,
        "ServiceQuotaExceededException": QuotaExhausted,
        "AccessDeniedException": AuthenticationFailed,  # includes "model not enabled"
        "UnrecognizedClientException": AuthenticationFailed,
        "InvalidSignatureException": AuthenticationFailed,
        "ExpiredTokenException": AuthenticationFailed,
        "ResourceNotFoundException": ModelNotFound,
    }
)

#: How the vendors word "the prompt is too long for this model".
CONTEXT_WINDOW = re.compile(
    r"maximum context|context[_ ]length|context window|prompt is too long|exceed context limit"
    r"|input token count.{0,80}exceeds|exceeds the maximum number of tokens|too many tokens"
    r"|token limit|reduce the length of (?:the|your) (?:messages|prompt)"
    r"|input is too long|too many input tokens",
    re.IGNORECASE | re.DOTALL,
)


def status_class(status: int) -> type[ProviderError]:
    """The class an HTTP error ``status`` (400-599) means by itself: the table above."""
    cls = STATUS_CLASSES.get(status)
    if cls is not None:
        return cls
    return ServerError if 500 <= status <= 599 else UnusableError


def code_class(*codes: str) -> type[ProviderError] | None:
    """The class the first decisive vendor error type or code among ``codes`` means."""
    for code in codes:
        cls = ERROR_CODES.get(code)
        if cls is None and code.startswith("billing_"):
            cls = QuotaExhausted
        if cls is not None:
            return cls
    return None


def _status_reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "overloaded" if status == 529 else "unexpected status"


def map_status(
    status: int,
    headers: Mapping[str, str],
    message: str | None,
    *,
    provider: str,
    retry_after: float | None = None,
) -> ProviderError:
    """The error for ``status`` alone, when the body says nothing more specific.

    4xx and 5xx read :func:`status_class`; a 429 is ``RateLimited`` with the parsed
    Retry-After; 1xx/3xx mean a wrong ``base_url``.
    """
    text = message or _status_reason(status)
    if 300 <= status <= 399:
        return UnusableError(
            f"{text}: base_url answered a redirect ({status}), which is not followed so that "
            "credentials stay on base_url; check base_url (scheme, host, path)",
            provider=provider,
            status=status,
        )
    if not 400 <= status <= 599:
        return UnusableError(
            f"{text}: unexpected HTTP status; check base_url", provider=provider, status=status
        )
    cls = status_class(status)
    if cls is RateLimited:
        wait = parse_retry_after(headers)
        wait = retry_after if wait is None else wait
        return RateLimited(text, provider=provider, status=status, retry_after=wait)
    return cls(text, provider=provider, status=status)

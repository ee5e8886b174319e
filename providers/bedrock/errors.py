"""Amazon Bedrock's error replies in the taxonomy: the exception type decides.

Bedrock names the exception in the ``x-amzn-ErrorType`` header
(``ThrottlingException:http://internal.amazon.com/...``), in the body's ``__type``
(``com.amazonaws...#ThrottlingException``), or, inside an event stream after HTTP
200, in the ``:exception-type`` header of an ``exception`` frame
(``throttlingException``). Each type's class is in the one table,
:data:`providers.http.status.ERROR_CODES`; what differs here is reading the type,
the throttling wait, and the validation messages that mean "this model cannot serve
it here" (another region or vendor can) rather than "the request is malformed".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orchestrator.errors import (
    ContextWindowExceeded,
    ModelNotFound,
    ProviderError,
    RateLimited,
)
from providers.http.errors import (
    CONTEXT_WINDOW,
    code_class,
    header,
    map_status,
    parse_retry_after,
    retry_hint,
    short,
)
from providers.http.redact import Secrets

__all__ = ["STREAM_STATUS", "error_type", "map_bedrock_error"]

#: The HTTP status each exception type is documented with: an ``exception`` frame
#: inside a stream carries none, and is classified as the same error before the stream.
STREAM_STATUS = {
    "ThrottlingException": 429,
    "ServiceUnavailableException": 503,
    "ModelNotReadyException": 429,
    "InternalServerException": 500,
    "ModelStreamErrorException": 424,
    "ModelErrorException": 424,
    "ModelTimeoutException": 408,
    "ValidationException": 400,
    "AccessDeniedException": 403,
    "ResourceNotFoundException": 404,
    "ServiceQuotaExceededException": 400,
}

#: A validation error about where the model runs, not about the request.
_NOT_HERE = re.compile(
    r"not available in this region|not enabled|model identifier is invalid"
    r"|on-demand throughput isn.t supported|doesn.t support the model"
    r"|isn.t supported in this region|end of its life",
    re.IGNORECASE,
)


def error_type(headers: Mapping[str, str], body: Any) -> str:
    """The exception type a reply names (``"ThrottlingException"``), or ``""``."""
    raw = header(headers, "x-amzn-errortype") or ""
    if not raw and isinstance(body, Mapping):
        raw = str(body.get("__type") or body.get("code") or "")
    return _normal(raw.partition(":")[0].rpartition("#")[2])


def _normal(name: str) -> str:
    name = name.strip()
    return name[:1].upper() + name[1:80]  # stream frames spell it throttlingException


def _message(body: Any) -> str:
    if not isinstance(body, Mapping):
        return ""
    return str(body.get("message") or body.get("Message") or "")


def map_bedrock_error(
    status: int | None,
    headers: Mapping[str, str],
    body: Any,
    *,
    provider: str,
    key: Secrets = None,
    etype: str | None = None,
) -> ProviderError:
    """A Bedrock error reply (``status``, headers, parsed JSON body) as its taxonomy class.

    ``status=None`` with ``etype`` for an ``exception`` frame inside a stream: the
    type then stands for the status it is documented with (:data:`STREAM_STATUS`).
    """
    etype = _normal(etype) if etype is not None else error_type(headers, body)
    raw = _message(body)
    message = short(raw, key) or etype or None
    code = status if status is not None else STREAM_STATUS.get(etype, 500)
    if etype == "ThrottlingException" or (code == 429 and etype != "ModelNotReadyException"):
        wait = parse_retry_after(headers)
        return RateLimited(
            message or "throttled",
            provider=provider,
            status=status,
            retry_after=retry_hint(raw) if wait is None else wait,
        )
    decided = code_class(etype)
    if decided is None and code in (400, 413) and CONTEXT_WINDOW.search(raw):
        decided = ContextWindowExceeded
    elif decided is None and code in (400, 404) and _NOT_HERE.search(raw):
        decided = ModelNotFound
    if decided is not None:
        return decided(message or etype, provider=provider, status=status)
    err = map_status(code, headers, message, provider=provider)
    err.status = status
    return err

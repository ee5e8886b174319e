"""One status/message table: an HTTP reply and a CLI's report of the same reply mean the same.

Every status 400-599 and every documented vendor error type goes through both paths (the
HTTP mappers and the CLI classifier) and must come out as the same taxonomy class.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from orchestrator import errors as E
from providers.cli.classify import Redactor, classify_exit
from providers.http.errors import (
    map_anthropic_error,
    map_gemini_error,
    map_openai_error,
    map_status,
)

Mapper = Callable[..., E.ProviderError]
Case = tuple[Mapper, int, Any, type[E.ProviderError]]


def cli(status: int, body: Any = None) -> E.ProviderError:
    """What a coding-agent CLI reports for the reply: its status and the vendor's body."""
    text = f"API Error: {status}" + (f" {json.dumps(body)}" if body is not None else "")
    err = classify_exit(1, text, "", provider="p", redact=Redactor())
    assert err is not None
    return err


@pytest.mark.parametrize("status", range(400, 600))
def test_every_status_means_the_same_over_http_and_from_a_cli(status: int) -> None:
    over_http = map_status(status, {}, None, provider="p")
    from_cli = cli(status)
    assert type(over_http) is type(from_cli), status
    assert from_cli.status == over_http.status == status


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (500, E.ServerError),
        (502, E.ServerError),
        (503, E.ServerError),
        (504, E.ServerError),
        (599, E.ServerError),
        (529, E.Overloaded),
        (429, E.RateLimited),
        (401, E.AuthenticationFailed),
        (403, E.AuthenticationFailed),
        (402, E.QuotaExhausted),
        (404, E.ModelNotFound),
        (413, E.ContextWindowExceeded),
        (400, E.InvalidRequest),
        (422, E.InvalidRequest),
        # A conflict or lock: OpenAI's and Anthropic's own SDKs retry 409 like 408 and 5xx.
        (409, E.ServerError),
        (408, E.ServerError),
        # A status that says nothing about the request: this endpoint cannot serve it,
        # the next provider may. Not retried (the SDKs do not), not a reason to stop.
        (405, E.UnusableError),
        (410, E.UnusableError),
        (418, E.UnusableError),
        (451, E.UnusableError),
        (499, E.UnusableError),
    ],
)
def test_the_decided_statuses(status: int, cls: type[E.ProviderError]) -> None:
    err = map_status(status, {}, None, provider="p")
    assert type(err) is cls
    assert err.status == status and err.provider == "p"
    assert str(err).startswith(f"[p] HTTP {status}:")
    assert type(cli(status)) is cls


def openai(
    status: int, etype: str, code: str | None, cls: type[E.ProviderError], message: str = "no"
) -> Case:
    body = {"error": {"message": message, "type": etype, "param": None, "code": code}}
    return (map_openai_error, status, body, cls)


def anthropic(status: int, etype: str, cls: type[E.ProviderError]) -> Case:
    body = {"type": "error", "error": {"type": etype, "message": f"it is {etype}"}}
    return (map_anthropic_error, status, body, cls)


def gemini(status: int, grpc: str, message: str, cls: type[E.ProviderError]) -> Case:
    return (
        map_gemini_error,
        status,
        {"error": {"code": status, "message": message, "status": grpc}},
        cls,
    )


INVALID = "invalid_request_error"
VENDOR_ERRORS: list[Case] = [
    # OpenAI: error types and codes (platform.openai.com/docs/guides/error-codes)
    openai(400, INVALID, None, E.InvalidRequest),
    openai(401, INVALID, "invalid_api_key", E.AuthenticationFailed),
    openai(
        403, "request_forbidden", "unsupported_country_region_territory", E.AuthenticationFailed
    ),
    openai(404, INVALID, "model_not_found", E.ModelNotFound),
    openai(400, INVALID, "context_length_exceeded", E.ContextWindowExceeded),
    openai(400, INVALID, "content_filter", E.GuardrailTriggered),
    openai(400, INVALID, "content_policy_violation", E.GuardrailTriggered),
    openai(429, "insufficient_quota", "insufficient_quota", E.QuotaExhausted),
    openai(400, INVALID, "billing_hard_limit_reached", E.QuotaExhausted),
    openai(429, "billing_not_active", "billing_not_active", E.QuotaExhausted),
    openai(429, "requests", "rate_limit_exceeded", E.RateLimited),
    openai(429, "tokens", "rate_limit_exceeded", E.RateLimited),
    openai(409, INVALID, None, E.ServerError),
    openai(500, "server_error", None, E.ServerError),
    openai(503, "server_error", None, E.ServerError, "The engine is currently overloaded"),
    # Anthropic: every documented error type at its documented status
    anthropic(400, INVALID, E.InvalidRequest),
    anthropic(401, "authentication_error", E.AuthenticationFailed),
    anthropic(402, "billing_error", E.QuotaExhausted),
    anthropic(403, "permission_error", E.AuthenticationFailed),
    anthropic(404, "not_found_error", E.ModelNotFound),
    anthropic(413, "request_too_large", E.ContextWindowExceeded),
    anthropic(429, "rate_limit_error", E.RateLimited),
    anthropic(500, "api_error", E.ServerError),
    anthropic(504, "timeout_error", E.ServerError),
    anthropic(529, "overloaded_error", E.Overloaded),
    # Gemini: the gRPC statuses the API answers with
    gemini(400, "INVALID_ARGUMENT", "Unknown name", E.InvalidRequest),
    gemini(400, "FAILED_PRECONDITION", "User location is not supported", E.UnusableError),
    gemini(400, "OUT_OF_RANGE", "Out of range", E.InvalidRequest),
    gemini(401, "UNAUTHENTICATED", "Request had invalid credentials", E.AuthenticationFailed),
    gemini(403, "PERMISSION_DENIED", "The caller does not have permission", E.AuthenticationFailed),
    gemini(404, "NOT_FOUND", "models/x is not found", E.ModelNotFound),
    gemini(409, "ABORTED", "Aborted", E.ServerError),
    gemini(409, "ALREADY_EXISTS", "Already exists", E.ServerError),
    gemini(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", E.RateLimited),
    gemini(499, "CANCELLED", "The operation was cancelled", E.UnusableError),
    gemini(500, "INTERNAL", "An internal error has occurred", E.ServerError),
    gemini(500, "UNKNOWN", "Unknown error", E.ServerError),
    gemini(501, "UNIMPLEMENTED", "Not implemented", E.ServerError),
    gemini(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", E.ServerError),
    gemini(504, "DEADLINE_EXCEEDED", "Deadline expired", E.ServerError),
]


@pytest.mark.parametrize(
    ("mapper", "status", "body", "cls"),
    VENDOR_ERRORS,
    ids=[f"{m.__name__[4:-6]}-{s}-{json.dumps(b)[:60]}" for m, s, b, _ in VENDOR_ERRORS],
)
def test_every_vendor_error_means_the_same_over_http_and_from_a_cli(
    mapper: Mapper, status: int, body: Any, cls: type[E.ProviderError]
) -> None:
    over_http = mapper(status, {}, body, provider="p")
    from_cli = cli(status, body)
    assert (type(over_http), type(from_cli)) == (cls, cls)

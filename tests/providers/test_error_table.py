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
        (529, E.Overloaded),
        (599, E.ServerError),
    ],
)
def test_the_decided_statuses(status: int, cls: type[E.ProviderError]) -> None:
    assert type(map_status(status, {}, None, provider="p")) is cls
    assert type(cli(status)) is cls


def openai(message: str, etype: str, code: str | None = None) -> Any:
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


def anthropic(etype: str, message: str) -> Any:
    return {"type": "error", "error": {"type": etype, "message": message}}


def gemini(code: int, status: str, message: str) -> Any:
    return {"error": {"code": code, "message": message, "status": status}}


VENDOR_ERRORS: list[tuple[Mapper, int, Any, type[E.ProviderError]]] = [
    # OpenAI: error types and codes (https://platform.openai.com/docs/guides/error-codes)
    (map_openai_error, 400, openai("Invalid value", "invalid_request_error"), E.InvalidRequest),
    (
        map_openai_error,
        401,
        openai("Incorrect API key", "invalid_request_error", "invalid_api_key"),
        E.AuthenticationFailed,
    ),
    (
        map_openai_error,
        403,
        openai("Country not supported", "request_forbidden", "unsupported_country_region_territory"),
        E.AuthenticationFailed,
    ),
    (
        map_openai_error,
        404,
        openai("The model does not exist", "invalid_request_error", "model_not_found"),
        E.ModelNotFound,
    ),
    (
        map_openai_error,
        400,
        openai("Too long", "invalid_request_error", "context_length_exceeded"),
        E.ContextWindowExceeded,
    ),
    (
        map_openai_error,
        400,
        openai("Filtered", "invalid_request_error", "content_filter"),
        E.GuardrailTriggered,
    ),
    (
        map_openai_error,
        400,
        openai("Refused", "invalid_request_error", "content_policy_violation"),
        E.GuardrailTriggered,
    ),
    (
        map_openai_error,
        429,
        openai("You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
        E.QuotaExhausted,
    ),
    (
        map_openai_error,
        400,
        openai("Billing hard limit reached", "invalid_request_error", "billing_hard_limit_reached"),
        E.QuotaExhausted,
    ),
    (
        map_openai_error,
        429,
        openai("Billing is not active", "billing_not_active", "billing_not_active"),
        E.QuotaExhausted,
    ),
    (map_openai_error, 429, openai("Slow down", "requests", "rate_limit_exceeded"), E.RateLimited),
    (map_openai_error, 429, openai("Slow down", "tokens", "rate_limit_exceeded"), E.RateLimited),
    (map_openai_error, 409, openai("Conflict", "invalid_request_error"), E.ServerError),
    (map_openai_error, 500, openai("The server had an error", "server_error"), E.ServerError),
    (
        map_openai_error,
        503,
        openai("The engine is currently overloaded", "server_error"),
        E.ServerError,
    ),
    # Anthropic: every documented error type at its documented status
    (map_anthropic_error, 400, anthropic("invalid_request_error", "bad"), E.InvalidRequest),
    (
        map_anthropic_error,
        401,
        anthropic("authentication_error", "invalid x-api-key"),
        E.AuthenticationFailed,
    ),
    (map_anthropic_error, 402, anthropic("billing_error", "billing"), E.QuotaExhausted),
    (map_anthropic_error, 403, anthropic("permission_error", "no"), E.AuthenticationFailed),
    (map_anthropic_error, 404, anthropic("not_found_error", "model: x"), E.ModelNotFound),
    (
        map_anthropic_error,
        413,
        anthropic("request_too_large", "Request exceeds the maximum size"),
        E.ContextWindowExceeded,
    ),
    (map_anthropic_error, 429, anthropic("rate_limit_error", "slow"), E.RateLimited),
    (map_anthropic_error, 500, anthropic("api_error", "Internal server error"), E.ServerError),
    (map_anthropic_error, 504, anthropic("timeout_error", "Request timed out"), E.ServerError),
    (map_anthropic_error, 529, anthropic("overloaded_error", "Overloaded"), E.Overloaded),
    # Gemini: the gRPC statuses the API answers with
    (map_gemini_error, 400, gemini(400, "INVALID_ARGUMENT", "Unknown name"), E.InvalidRequest),
    (
        map_gemini_error,
        400,
        gemini(400, "FAILED_PRECONDITION", "User location is not supported"),
        E.UnusableError,
    ),
    (map_gemini_error, 400, gemini(400, "OUT_OF_RANGE", "Out of range"), E.InvalidRequest),
    (
        map_gemini_error,
        401,
        gemini(401, "UNAUTHENTICATED", "Request had invalid credentials"),
        E.AuthenticationFailed,
    ),
    (
        map_gemini_error,
        403,
        gemini(403, "PERMISSION_DENIED", "The caller does not have permission"),
        E.AuthenticationFailed,
    ),
    (map_gemini_error, 404, gemini(404, "NOT_FOUND", "models/x is not found"), E.ModelNotFound),
    (map_gemini_error, 409, gemini(409, "ABORTED", "Aborted"), E.ServerError),
    (map_gemini_error, 409, gemini(409, "ALREADY_EXISTS", "Already exists"), E.ServerError),
    (
        map_gemini_error,
        429,
        gemini(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted"),
        E.RateLimited,
    ),
    (map_gemini_error, 499, gemini(499, "CANCELLED", "The operation was cancelled"), E.UnusableError),
    (map_gemini_error, 500, gemini(500, "INTERNAL", "An internal error has occurred"), E.ServerError),
    (map_gemini_error, 500, gemini(500, "UNKNOWN", "Unknown error"), E.ServerError),
    (map_gemini_error, 501, gemini(501, "UNIMPLEMENTED", "Not implemented"), E.ServerError),
    (
        map_gemini_error,
        503,
        gemini(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        E.ServerError,
    ),
    (map_gemini_error, 504, gemini(504, "DEADLINE_EXCEEDED", "Deadline expired"), E.ServerError),
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

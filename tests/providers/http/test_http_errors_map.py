"""The pure error mapping: (status, headers, body) -> the taxonomy class, per wire format."""

from __future__ import annotations

import email.utils
from typing import Any

import pytest

from orchestrator import errors as E
from orchestrator.secrets import Secret
from providers.http.errors import (
    header,
    map_anthropic_error,
    map_gemini_error,
    map_openai_error,
    map_status,
    map_transport_error,
    parse_retry_after,
    short,
)

NOW = 1_700_000_000.0


def openai_body(message: str, etype: str = "invalid_request_error", code: Any = None) -> Any:
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


def anthropic_body(etype: str, message: str) -> Any:
    return {"type": "error", "error": {"type": etype, "message": message}}


def gemini_body(code: int, status: str, message: str, details: Any = None) -> Any:
    err: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details is not None:
        err["details"] = details
    return {"error": err}


# -- Retry-After -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"Retry-After": " 0 "}, 0.0),
        ({"Retry-After": "-4"}, 0.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "junk", "retry-after": "9"}, 9.0),
        ({"Retry-After": email.utils.formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"Retry-After": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"Retry-After": "soon"}, None),
        # Not finite: no usable hint (NaN used to read as 0, "1e999" as forever).
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "1e999"}, None),
        ({"Retry-After": "inf"}, None),
        ({"retry-after-ms": "NaN", "retry-after": "9"}, 9.0),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_header_lookup_is_case_insensitive() -> None:
    assert header({"Retry-After": "2"}, "retry-after") == "2"
    assert header({"x": "1"}, "retry-after") is None


# -- by status alone -------------------------------------------------------------


# Every 4xx and 5xx status: test_error_table.test_the_decided_statuses (HTTP and CLI alike).


def test_a_redirect_status_is_unusable_here() -> None:
    err = map_status(302, {}, None, provider="p")
    assert type(err) is E.UnusableError
    assert err.status == 302 and err.provider == "p"
    assert str(err).startswith("[p] HTTP 302:")


def test_map_status_rate_limited_reads_retry_after() -> None:
    err = map_status(429, {"Retry-After": "7"}, "slow down", provider="p")
    assert isinstance(err, E.RateLimited) and err.retry_after == 7.0
    assert "slow down" in str(err)


# -- OpenAI ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (429, openai_body("Rate limit reached", "requests", "rate_limit_exceeded"), E.RateLimited),
        (
            429,
            openai_body(
                "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
            ),
            E.QuotaExhausted,
        ),
        (
            400,
            openai_body("Billing hard limit has been reached", code="billing_hard_limit_reached"),
            E.QuotaExhausted,
        ),
        (
            429,
            openai_body("check your plan and billing details", "requests", None),
            E.QuotaExhausted,
        ),
        (
            400,
            openai_body(
                "This model's maximum context length is 128000 tokens.",
                code="context_length_exceeded",
            ),
            E.ContextWindowExceeded,
        ),
        (400, openai_body("maximum context length is 8192 tokens"), E.ContextWindowExceeded),
        (400, openai_body("filtered", code="content_filter"), E.GuardrailTriggered),
        (400, openai_body("policy", code="content_policy_violation"), E.GuardrailTriggered),
        (404, openai_body("The model `x` does not exist", code="model_not_found"), E.ModelNotFound),
        (400, openai_body("no such model", code="model_not_found"), E.ModelNotFound),
        (
            401,
            openai_body("Incorrect API key provided", code="invalid_api_key"),
            E.AuthenticationFailed,
        ),
        (403, openai_body("region not supported", "invalid_request_error"), E.AuthenticationFailed),
        (400, openai_body("Invalid value for 'temperature'"), E.InvalidRequest),
        (500, openai_body("The server had an error", "server_error"), E.ServerError),
        (503, openai_body("The engine is currently overloaded", "server_error"), E.ServerError),
        (502, None, E.ServerError),
        (504, {"error": "gateway timeout"}, E.ServerError),
        (408, {"detail": "timeout"}, E.ServerError),
    ],
)
def test_map_openai_error(status: int, body: Any, cls: type[E.ProviderError]) -> None:
    err = map_openai_error(status, {}, body, provider="openai:m")
    assert type(err) is cls
    assert err.status == status


def test_openai_message_kept_and_key_masked() -> None:
    body = openai_body(
        "Incorrect API key provided: sk-abc123456789xyz. Find yours.", code="invalid_api_key"
    )
    err = map_openai_error(401, {}, body, provider="openai:m", key=Secret("sk-abc123456789xyz"))
    assert "Incorrect API key provided" in str(err)
    assert "sk-abc123456789xyz" not in str(err) and "***" in str(err)


def test_openai_rate_limit_uses_retry_after_ms() -> None:
    err = map_openai_error(
        429, {"retry-after-ms": "1500"}, openai_body("Rate limit", "requests"), provider="o"
    )
    assert isinstance(err, E.RateLimited) and err.retry_after == 1.5


def test_vendor_message_is_cut_to_about_200_chars() -> None:
    err = map_openai_error(400, {}, openai_body("x" * 5000), provider="o")
    assert len(err.message) <= 200 and err.message.endswith("...")


# -- Anthropic ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (529, anthropic_body("overloaded_error", "Overloaded"), E.Overloaded),
        (None, anthropic_body("overloaded_error", "Overloaded"), E.Overloaded),
        (429, anthropic_body("rate_limit_error", "Number of requests exceeded"), E.RateLimited),
        (None, anthropic_body("rate_limit_error", "slow"), E.RateLimited),
        (
            400,
            anthropic_body(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
            E.QuotaExhausted,
        ),
        (402, anthropic_body("billing_error", "billing problem"), E.QuotaExhausted),
        (
            400,
            anthropic_body(
                "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
            ),
            E.ContextWindowExceeded,
        ),
        (
            400,
            anthropic_body(
                "invalid_request_error", "input length and `max_tokens` exceed context limit"
            ),
            E.ContextWindowExceeded,
        ),
        (
            413,
            anthropic_body("request_too_large", "Request exceeds the maximum size"),
            E.ContextWindowExceeded,
        ),
        (401, anthropic_body("authentication_error", "invalid x-api-key"), E.AuthenticationFailed),
        (403, anthropic_body("permission_error", "no access"), E.AuthenticationFailed),
        (404, anthropic_body("not_found_error", "model: x"), E.ModelNotFound),
        (
            400,
            anthropic_body("invalid_request_error", "max_tokens: Field required"),
            E.InvalidRequest,
        ),
        (500, anthropic_body("api_error", "Internal server error"), E.ServerError),
        (None, anthropic_body("api_error", "Internal server error"), E.ServerError),
        (503, None, E.ServerError),
    ],
)
def test_map_anthropic_error(status: int | None, body: Any, cls: type[E.ProviderError]) -> None:
    err = map_anthropic_error(status, {}, body, provider="anthropic:m")
    assert type(err) is cls
    assert err.status == status


def test_anthropic_rate_limit_retry_after() -> None:
    err = map_anthropic_error(
        429, {"retry-after": "12"}, anthropic_body("rate_limit_error", "x"), provider="a"
    )
    assert isinstance(err, E.RateLimited) and err.retry_after == 12.0


# -- Gemini ------------------------------------------------------------------------

RETRY_INFO = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]
PER_DAY = [
    {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
    }
]
QUOTA_MSG = "You exceeded your current quota, please check your plan and billing details."


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (429, gemini_body(429, "RESOURCE_EXHAUSTED", "Resource exhausted."), E.RateLimited),
        (429, gemini_body(429, "RESOURCE_EXHAUSTED", QUOTA_MSG, RETRY_INFO), E.RateLimited),
        (429, gemini_body(429, "RESOURCE_EXHAUSTED", QUOTA_MSG, PER_DAY), E.QuotaExhausted),
        (429, gemini_body(429, "RESOURCE_EXHAUSTED", QUOTA_MSG), E.QuotaExhausted),
        (
            429,
            gemini_body(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted."),
            E.QuotaExhausted,
        ),
        (
            400,
            gemini_body(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            ),
            E.ContextWindowExceeded,
        ),
        (
            400,
            gemini_body(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
            E.AuthenticationFailed,
        ),
        (
            400,
            gemini_body(
                400,
                "INVALID_ARGUMENT",
                "bad key",
                [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "API_KEY_INVALID",
                    }
                ],
            ),
            E.AuthenticationFailed,
        ),
        (
            403,
            gemini_body(403, "PERMISSION_DENIED", "The caller does not have permission"),
            E.AuthenticationFailed,
        ),
        (404, gemini_body(404, "NOT_FOUND", "models/x is not found"), E.ModelNotFound),
        (
            400,
            gemini_body(400, "FAILED_PRECONDITION", "User location is not supported"),
            E.UnusableError,
        ),
        (400, gemini_body(400, "INVALID_ARGUMENT", 'Unknown name "prompt"'), E.InvalidRequest),
        (500, gemini_body(500, "INTERNAL", "An internal error has occurred."), E.ServerError),
        (503, gemini_body(503, "UNAVAILABLE", "The model is overloaded."), E.ServerError),
        (504, gemini_body(504, "DEADLINE_EXCEEDED", "Deadline expired"), E.ServerError),
    ],
)
def test_map_gemini_error(status: int, body: Any, cls: type[E.ProviderError]) -> None:
    err = map_gemini_error(status, {}, body, provider="gemini:m")
    assert type(err) is cls
    assert err.status == status


def test_gemini_retry_delay_detail_and_header() -> None:
    body = gemini_body(429, "RESOURCE_EXHAUSTED", QUOTA_MSG, RETRY_INFO)
    err = map_gemini_error(429, {}, body, provider="g")
    assert isinstance(err, E.RateLimited) and err.retry_after == 37.0
    err = map_gemini_error(429, {"Retry-After": "2"}, body, provider="g")
    assert isinstance(err, E.RateLimited) and err.retry_after == 2.0


# -- below HTTP ------------------------------------------------------------------


def test_map_transport_error() -> None:
    timeout = map_transport_error(True, "timed out", provider="p", timeout=2.5)
    assert isinstance(timeout, E.ProviderTimeout) and isinstance(timeout, TimeoutError)
    assert "2.5" in str(timeout)
    conn = map_transport_error(False, "ConnectionRefusedError", provider="p", timeout=1)
    assert type(conn) is E.ConnectionFailed
    cut = map_transport_error(False, "reset", provider="p", timeout=1, streaming=True)
    assert type(cut) is E.StreamInterrupted
    idle = map_transport_error(True, "", provider="p", timeout=1, streaming=True)
    assert type(idle) is E.ProviderTimeout


def test_short_masks_key_shaped_strings_and_flattens_lines() -> None:
    assert short("key sk-proj-ABCDEFGH1234 bad\n\nline") == "key *** bad line"
    assert short("AIzaSyA-abcdefghijk nope") == "*** nope"


# -- OpenAI: per-minute rate limits mention billing too ---------------------------------------

_RPM_MESSAGE = (
    "Rate limit reached for default-gpt-3.5-turbo in organization org-xxx on requests per min. "
    "Limit: 3 / min. Please try again in 20s. Contact us through our help center at "
    "help.openai.com if you continue to have issues. Please add a payment method to your "
    "account to increase your rate limit. Visit https://platform.openai.com/account/billing "
    "to add a payment method."
)


@pytest.mark.parametrize(
    ("headers", "message", "wait"),
    [
        ({"retry-after": "20"}, _RPM_MESSAGE, 20.0),
        ({}, _RPM_MESSAGE, 20.0),
        ({}, "Rate limit reached. Please try again in 1.5s. Visit .../account/billing", 1.5),
        ({}, "Rate limit reached on tokens per min. Please try again in 300ms.", 0.3),
        ({}, "Please try again in 1m30s. See billing.", 90.0),
        ({"retry-after-ms": "250"}, "Please try again in 20s.", 0.25),
        ({}, "Rate limit reached; billing plan upgrade available", None),
    ],
)
def test_openai_rate_limit_mentioning_billing_is_rate_limited(
    headers: dict[str, str], message: str, wait: float | None
) -> None:
    body = openai_body(message, "requests", "rate_limit_exceeded")
    err = map_openai_error(429, headers, body, provider="openai:m")
    assert type(err) is E.RateLimited
    assert err.retry_after == pytest.approx(wait) if wait is not None else err.retry_after is None


@pytest.mark.parametrize(
    "code", ["insufficient_quota", "billing_hard_limit_reached", "billing_not_active"]
)
def test_openai_quota_is_decided_by_code(code: str) -> None:
    body = openai_body("Please try again in 20s. You exceeded your quota.", "requests", code)
    assert type(map_openai_error(429, {"retry-after": "20"}, body, provider="p")) is (
        E.QuotaExhausted
    )


def test_openai_429_with_a_wait_and_no_code_is_rate_limited_even_with_quota_words() -> None:
    body = openai_body("check your plan and billing details", "requests", None)
    err = map_openai_error(429, {"retry-after": "3"}, body, provider="p")
    assert type(err) is E.RateLimited and err.retry_after == 3.0


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirect_status_means_check_base_url(status: int) -> None:
    err = map_status(status, {"location": "https://elsewhere.example/x"}, None, provider="p")
    assert type(err) is E.UnusableError and "check base_url" in str(err)
    assert "elsewhere" not in str(err)


def test_mappers_mask_every_given_secret() -> None:
    secrets = (Secret("gsk_first_secret_1"), Secret("second-secret-2"))
    body = openai_body("keys gsk_first_secret_1 and second-secret-2 rejected", code="bad")
    err = map_openai_error(401, {}, body, provider="p", key=secrets)
    assert "first_secret" not in str(err) and "second-secret" not in str(err)
    assert short("a gsk_first_secret_1 b", secrets) == "a *** b"

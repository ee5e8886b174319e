"""The mapping from CLI error text and statuses to the taxonomy, and redaction."""

from __future__ import annotations

import pytest

from orchestrator import errors
from providers.cli.classify import Redactor, classify_exit, error_for, find_status, retry_after_in


@pytest.mark.parametrize(
    ("status", "text", "expected"),
    [
        (401, "", errors.AuthenticationFailed),
        (403, "", errors.AuthenticationFailed),
        (429, "slow down", errors.RateLimited),
        (429, "You exceeded your current quota", errors.QuotaExhausted),
        (429, "insufficient_quota", errors.QuotaExhausted),
        (402, "", errors.QuotaExhausted),
        (529, "", errors.Overloaded),
        # The status decides, as over HTTP (a 503 "overloaded" body is a ServerError there;
        # only 529 and Anthropic's overloaded_error are Overloaded): this row asserted the
        # CLI path's drifted answer, Overloaded.
        (503, "The model is overloaded", errors.ServerError),
        (503, "", errors.ServerError),
        (500, "", errors.ServerError),
        (408, "", errors.ServerError),
        (404, "", errors.ModelNotFound),
        (413, "", errors.ContextWindowExceeded),
        (400, "prompt is too long: 300000 tokens > 200000 maximum", errors.ContextWindowExceeded),
        (400, "Your credit balance is too low", errors.QuotaExhausted),
        (400, "API key not valid", errors.AuthenticationFailed),
        (400, "bad field 'messages'", errors.InvalidRequest),
        (None, "Invalid API key · Please run /login", errors.AuthenticationFailed),
        (None, "context_length_exceeded", errors.ContextWindowExceeded),
        (None, "Claude AI usage limit reached", errors.QuotaExhausted),
        (None, "overloaded_error", errors.Overloaded),
        (None, "rate_limit_error: too many requests", errors.RateLimited),
        (None, "Internal server error", errors.ServerError),
        (None, "connect ECONNREFUSED 127.0.0.1:1", errors.ConnectionFailed),
        (None, "model_not_found", errors.ModelNotFound),
        # codex's own words for a Responses API refusal and a cut stream
        (
            None,
            "stream disconnected before completion: Incomplete response returned, "
            "reason: content_filter",
            errors.GuardrailTriggered,
        ),
        (None, "stream closed before response.completed", errors.StreamInterrupted),
        (
            None,
            "stream disconnected before completion: error sending request",
            errors.StreamInterrupted,
        ),
    ],
)
def test_error_for(status: int | None, text: str, expected: type[errors.ProviderError]) -> None:
    err = error_for(status, text, provider="p")
    assert type(err) is expected
    assert err.provider == "p"
    if status is not None:
        assert err.status == status


GEMINI_RPM = (
    '[API Error: {"error":{"code":429,"message":"You exceeded your current quota, please check '
    'your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":['
    '{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":'
    '"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},'
    '{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"13s"}]}}]'
)
OPENAI_RPM = (
    "unexpected status 429 Too Many Requests: Rate limit reached for gpt-4o in organization "
    "org-x on requests per min. Limit: 3 / min. Please try again in 20s. Visit "
    "https://platform.openai.com/account/billing to add a payment method."
)


@pytest.mark.parametrize(
    ("status", "text", "expected", "retry_after"),
    [
        # per-minute limits whose text mentions quota or billing: come back after the delay
        (429, GEMINI_RPM, errors.RateLimited, 13.0),
        (429, OPENAI_RPM, errors.RateLimited, 20.0),
        (None, OPENAI_RPM.split(": ", 1)[1], errors.RateLimited, 20.0),
        (429, "quota exceeded for PerMinute requests", errors.RateLimited, None),
        (429, "rate_limit_exceeded: quota; retry in 5s", errors.RateLimited, 5.0),
        # hard quotas stay QuotaExhausted, delay or not
        (429, GEMINI_RPM.replace("PerMinute", "PerDay"), errors.QuotaExhausted, None),
        (
            429,
            "insufficient_quota: exceeded your current quota; try again in 20s",
            errors.QuotaExhausted,
            None,
        ),
        (429, "You exceeded your current quota", errors.QuotaExhausted, None),
        (400, "Your credit balance is too low; retry in 5s", errors.QuotaExhausted, None),
        (429, "billing hard limit has been reached; try again in 1s", errors.QuotaExhausted, None),
        (None, "You exceeded your current quota, check billing", errors.QuotaExhausted, None),
        # a 400 quota message with a delay is not a rate limit unless it says so
        (400, "quota exceeded; try again in 5s", errors.QuotaExhausted, None),
    ],
)
def test_quota_versus_rate_limit(
    status: int | None, text: str, expected: type[errors.ProviderError], retry_after: float | None
) -> None:
    err = error_for(status, text, provider="p")
    assert type(err) is expected
    if isinstance(err, errors.RateLimited):
        assert err.retry_after == retry_after


def test_unrecognised_text_is_none() -> None:
    assert error_for(None, "something odd", provider="p") is None


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("API Error: 529 errors.Overloaded", 529),
        ("exceeded retry limit, last status: 429 Too Many Requests", 429),
        ("unexpected status 401 Unauthorized: nope", 401),
        ('{"error": {"code": 503, "message": "x"}}', 503),
        ("HTTP 502 Bad Gateway", 502),
        ("at file.js:401:12 exit code 1", None),  # line numbers are not statuses
        ("status 200", None),
    ],
)
def test_find_status(text: str, status: int | None) -> None:
    assert find_status(text) == status


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("Please try again in 2s.", 2.0),
        ("retry after 1.5 seconds", 1.5),
        ("try again in 250ms", 0.25),
        ('"retryDelay": "12s"', 12.0),
        ("try again later", None),
    ],
)
def test_retry_after_in(text: str, seconds: float | None) -> None:
    assert retry_after_in(text) == seconds


def test_classify_exit() -> None:
    redact = Redactor()
    assert classify_exit(0, "Invalid API key", "", provider="p", redact=redact) is None
    err = classify_exit(7, "segfault-ish\n", "", provider="p", redact=redact)
    assert type(err) is errors.TransientError
    assert "exited with status 7" in str(err) and "segfault-ish" in str(err)
    assert isinstance(
        classify_exit(1, "", "Error: 401 Unauthorized", provider="p", redact=redact),
        errors.AuthenticationFailed,
    )


def test_redactor_hides_secrets_and_prompt_lines() -> None:
    prompt = "first line is short\nthis second line is long enough to matter"
    redact = Redactor(["sk-abcdef123456", "short"], prompt)
    out = redact("key sk-abcdef123456 echo: this second line is long enough to matter; short")
    assert "sk-abcdef123456" not in out and "long enough to matter" not in out
    assert out == "key *** echo: <prompt>; short"  # values under 8 chars are left alone

"""Regressions found reviewing issue 8: a hostile error body can neither hold the
event loop nor escape the taxonomy, and a failing headers callable chains nothing."""

from __future__ import annotations

import pickle
import time
import traceback

import pytest

from orchestrator import errors as E
from orchestrator.types import Request
from providers.generic_http import HTTPFallback
from providers.http.errors import map_anthropic_error, map_gemini_error, map_openai_error
from tests.providers.http.causes import exception_chain

SECRET = "sk-live-SECRETfromTheTokenSource42"


@pytest.mark.parametrize(
    "mapper",
    [map_openai_error, map_anthropic_error, map_gemini_error],
    ids=["openai", "anthropic", "gemini"],
)
@pytest.mark.parametrize("status", [400, 500])
def test_context_wording_scan_is_linear(mapper: object, status: int) -> None:
    # "input token count" many times with no "exceeds": `.*exceeds` rescanned the rest of
    # the line from each occurrence (quadratic: 350 KiB took 19 s, 140 KiB 3 s on the event loop).
    body = {"error": {"message": "input token count " * 8_000}}
    start = time.perf_counter()
    err = mapper(status, {}, body, provider="p")  # type: ignore[operator]
    assert time.perf_counter() - start < 1.0
    assert isinstance(err, E.ProviderError)


def test_context_wording_still_recognised() -> None:
    body = {
        "error": {
            "code": 400,
            "message": "The input token count (1200000) exceeds the maximum number of tokens "
            "allowed (1048576).",
            "status": "INVALID_ARGUMENT",
        }
    }
    assert isinstance(map_gemini_error(400, {}, body, provider="g"), E.ContextWindowExceeded)
    body = {"error": {"message": "input token count 5 is too large; it exceeds 4"}}
    assert isinstance(map_openai_error(400, {}, body, provider="o"), E.ContextWindowExceeded)


@pytest.mark.parametrize("violations", [5, 1.5, True])
def test_gemini_quota_violations_of_the_wrong_type_are_ignored(violations: object) -> None:
    body = {
        "error": {
            "code": 429,
            "message": "q",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": violations}
            ],
        }
    }
    assert isinstance(map_gemini_error(429, {}, body, provider="g"), E.RateLimited)


class _TokenSourceError(Exception):
    pass


async def test_failing_headers_callable_chains_no_secret() -> None:
    async def headers() -> dict[str, str]:
        # A token source failing with the credential it used in its message (as aiohttp's
        # ClientResponseError repr shows the request headers).
        raise _TokenSourceError(f"token endpoint said 401 for {{'authorization': '{SECRET}'}}")

    provider = HTTPFallback("http://127.0.0.1:9/x", headers=headers)
    with pytest.raises(E.AuthenticationFailed) as info:
        await provider.complete(Request("hi"))
    for exc in exception_chain(info.value):
        assert not isinstance(exc, _TokenSourceError)
        texts = [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
        texts.append(pickle.dumps(exc).decode("latin-1"))
        assert not any(SECRET in text for text in texts), type(exc).__name__
    assert "_TokenSourceError" in str(info.value) or "_TokenSourceError" in str(
        info.value.__cause__
    )


def test_a_non_finite_wait_in_the_body_is_no_hint() -> None:
    # As for the Retry-After header: "9" * 400 seconds overflows to inf, which is no
    # hint (not "hold the circuit the longest allowed").
    huge = "9" * 400
    body = {
        "error": {
            "code": 429,
            "message": "slow down",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{huge}s"}
            ],
        }
    }
    err = map_gemini_error(429, {}, body, provider="g")
    assert isinstance(err, E.RateLimited) and err.retry_after is None
    body = {"error": {"message": f"Please try again in {huge}h", "code": "rate_limit_exceeded"}}
    err = map_openai_error(429, {}, body, provider="o")
    assert isinstance(err, E.RateLimited) and err.retry_after is None


def test_a_non_finite_wait_in_cli_output_is_no_hint() -> None:
    from providers.cli.classify import retry_after_in

    assert retry_after_in('{"retryDelay": "' + "9" * 400 + 's"}') is None
    assert retry_after_in('{"retryDelay": "12s"}') == 12.0

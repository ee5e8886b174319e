"""Map what a command-line agent printed (an HTTP status, an error message) to the taxonomy.

The CLIs wrap their API's errors in their own words. :func:`error_for` reads a
status when one is known (structured output first, then a status found in the
text) through the HTTP providers' own table (:mod:`providers.http.errors`): a
vendor error code in the text (``insufficient_quota``, ``overloaded_error``,
``FAILED_PRECONDITION``...) decides first, then the message refines a 400, 422
or 429 (quota or billing -> QuotaExhausted unless it is a short-window limit: a
quota message with a retry delay, a per-minute quota id or ``rate_limit_exceeded``
is still RateLimited, unless it names ``insufficient_quota``, a per-day quota,
the credit balance or a billing hard limit; "prompt is too long" ->
ContextWindowExceeded; a bad key, an unknown model), and the status decides the
rest. With no status, recognisable messages are matched alone.

Messages put into errors are clipped to their last ~300 characters and
redacted: no environment value and no prompt text may leak into an error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from orchestrator.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    ContextWindowExceeded,
    GuardrailTriggered,
    ModelNotFound,
    Overloaded,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    ServerError,
    StreamInterrupted,
    TransientError,
)
from providers.http.errors import CONTEXT_WINDOW, ERROR_CODES, code_class, status_class
from providers.http.retry_after import retry_hint

__all__ = ["Redactor", "classify_exit", "error_for", "find_status", "retry_after_in"]

TAIL_CHARS = 300

_GUARDRAIL = re.compile(
    r"reason:?\s*content_filter|content[_ ]filter(?:ed)?\b|content[- ]policy|usage polic(?:y|ies)"
    r"|blocked (?:due to|for) safety|safety (?:filter|reasons)|finish_?reason:?\s*safety",
    re.I,
)
_STREAM_CUT = re.compile(
    r"stream closed before response\.completed|stream disconnected before completion"
    r"|stream ended (?:before|without)|unexpected end of (?:the )?stream",
    re.I,
)
#: The table's vendor error codes, as words in a CLI's message (any ``billing_*`` too).
_CODES = re.compile(
    r"\b("
    + "|".join(sorted(map(re.escape, ERROR_CODES), key=len, reverse=True))
    + r"|billing_[a-z_]+)\b"
)
_QUOTA = re.compile(
    r"insufficient[_ ]quota|exceeded your current quota|quota exceeded|credit balance"
    r"|billing|usage limit|out of credits|payment required",
    re.I,
)
#: Quota messages that mean "no more until someone pays or the day/window ends".
_HARD_QUOTA = re.compile(
    r"insufficient[_ ]quota|(?-i:PerDay)|per day|credit balance|hard[_ ]limit|out of credits"
    r"|payment required|usage limit",
    re.I,
)
#: Quota messages that mean "too fast right now" (Gemini free-tier RPM, OpenAI RPM/TPM).
_SHORT_WINDOW = re.compile(
    r"(?-i:PerMinute)|per minute|per min\b|rate[_ ]limit[_ ]exceeded|rate limit reached"
    r"|requests per min|tokens per min",
    re.I,
)
_AUTH = re.compile(
    r"invalid api[ _-]?key|api key not valid|invalid x-api-key|incorrect api key|api_key_invalid"
    r"|authentication[_ ]error|authentication failed|unauthori[sz]ed|not logged in"
    r"|please (?:run )?/?log ?in|invalid bearer|oauth token has expired|permission[_ ]denied"
    r"|forbidden|invalid auth method",
    re.I,
)
_MODEL = re.compile(
    r"model[_ ]not[_ ]found|not_found_error|unknown model|model \S+ (?:does not exist|not found)"
    r"|model .{0,80}does not exist",
    re.I,
)
_OVERLOADED = re.compile(r"overloaded|high demand|over capacity|at capacity", re.I)
_RATE = re.compile(
    r"rate[_ -]?limit|too many requests|resource has been exhausted|resource_exhausted", re.I
)
_SERVER = re.compile(
    r"internal server error|bad gateway|service unavailable|gateway timeout|internal error", re.I
)
_CONNECTION = re.compile(
    r"econnrefused|econnreset|connection refused|connection reset|failed to connect"
    r"|could not connect|network error|fetch failed|name does not resolve|getaddrinfo"
    r"|enotfound|etimedout|stream disconnected",
    re.I,
)

_STATUS_PATTERNS = (
    re.compile(r"api error:?\s*(\d{3})\b", re.I),
    re.compile(r"last status:?\s*(\d{3})\b", re.I),
    re.compile(r"\b(?:status(?:[ _]code)?|http)[\"']?\s*[:=]?\s*(\d{3})\b", re.I),
    re.compile(r"[\"']code[\"']\s*:\s*(\d{3})\b"),
    re.compile(
        r"\b(\d{3})\s+(?:Unauthorized|Forbidden|Not Found|Too Many Requests|Bad Request"
        r"|Payload Too Large|Internal Server Error|Bad Gateway|Service Unavailable"
        r"|Gateway Timeout|Overloaded)\b",
        re.I,
    ),
)
# A structured field ("retryDelay": "12s", retry_after=3); prose is read by retry_hint.
_RETRY_FIELD = re.compile(
    r"[\"']?retry[_-]?(?:after|delay)[\"']?\s*[:=]\s*[\"']?(\d+(?:\.\d+)?)\s*(ms|s)?", re.I
)


def find_status(text: str) -> int | None:
    """The last HTTP error status (400-599) mentioned in ``text``, or None."""
    best: tuple[int, int] | None = None
    for pattern in _STATUS_PATTERNS:
        for m in pattern.finditer(text):
            code = int(m.group(1))
            if 400 <= code <= 599 and (best is None or m.start() > best[0]):
                best = (m.start(), code)
    return best[1] if best else None


def retry_after_in(text: str) -> float | None:
    """Seconds to wait when the message says so ("try again in 2s", "retryDelay": "12s")."""
    hint = retry_hint(text)  # the HTTP mapper's reading of "try again in 1m30s"
    if hint is not None:
        return hint
    matches = list(_RETRY_FIELD.finditer(text))
    if not matches:
        return None
    value, unit = matches[-1].group(1), matches[-1].group(2)
    seconds = float(value)
    if not math.isfinite(seconds):  # "retryDelay": "999...9s" overflows: no hint
        return None
    return seconds / 1000.0 if unit and unit.lower() == "ms" else seconds


def _quota_or_rate(
    text: str, provider: str, msg: str, status: int | None
) -> QuotaExhausted | RateLimited:
    """A quota/billing message: QuotaExhausted, unless it is a short-window rate limit.

    Vendors mention quota and billing in plain rate-limit messages (Gemini's
    free tier: "You exceeded your current quota, please check your plan and
    billing details" with a ``PerMinute`` quota id and a ``retryDelay``;
    OpenAI: "Rate limit reached ... try again in 20s ... visit billing").
    Those come back after the delay, so they are ``RateLimited``.
    """
    delay = retry_after_in(text)
    short = delay is not None or _SHORT_WINDOW.search(text) is not None
    if short and not _HARD_QUOTA.search(text) and (status == 429 or _RATE.search(text)):
        if status is None:
            return RateLimited(msg, provider=provider, retry_after=delay)
        return RateLimited(msg, provider=provider, status=status, retry_after=delay)
    return QuotaExhausted(msg, provider=provider, status=status)


def _code_in(text: str) -> type[ProviderError] | None:
    """The class the first vendor error code named in ``text`` decides, if any."""
    match = _CODES.search(text)
    return None if match is None else code_class(match.group(1))


def _refine_400(text: str) -> type[ProviderError] | None:
    """What a 400 or 422 is, when its message says more than "bad request"."""
    for pattern, cls in (
        (CONTEXT_WINDOW, ContextWindowExceeded),
        (_AUTH, AuthenticationFailed),  # Gemini: 400 API_KEY_INVALID
        (_MODEL, ModelNotFound),
    ):
        if pattern.search(text):
            return cls
    return None


def _from_status(status: int, text: str, provider: str, msg: str) -> ProviderError:
    decided = _code_in(text)
    if decided is None and status in (400, 429) and _QUOTA.search(text):
        return _quota_or_rate(text, provider, msg, status)
    if decided is None and status in (400, 422):
        decided = _refine_400(text)
    cls = status_class(status) if decided is None else decided
    if cls is RateLimited:
        return RateLimited(msg, provider=provider, status=status, retry_after=retry_after_in(text))
    return cls(msg, provider=provider, status=status)


_FIRST: tuple[tuple[re.Pattern[str], type[ProviderError]], ...] = (
    (_GUARDRAIL, GuardrailTriggered),
    (CONTEXT_WINDOW, ContextWindowExceeded),
)
_AFTER_QUOTA: tuple[tuple[re.Pattern[str], type[ProviderError]], ...] = (
    (_AUTH, AuthenticationFailed),
    (_MODEL, ModelNotFound),
    (_OVERLOADED, Overloaded),
)


def _from_text(text: str, provider: str, msg: str) -> ProviderError | None:
    decided = _code_in(text)
    if decided is not None:
        return decided(msg, provider=provider)
    for pattern, cls in _FIRST:
        if pattern.search(text):
            return cls(msg, provider=provider)
    if _QUOTA.search(text):
        return _quota_or_rate(text, provider, msg, None)
    for pattern, cls in _AFTER_QUOTA:
        if pattern.search(text):
            return cls(msg, provider=provider)
    if _RATE.search(text):
        return RateLimited(msg, provider=provider, retry_after=retry_after_in(text))
    if _SERVER.search(text):
        return ServerError(msg, provider=provider)
    if _STREAM_CUT.search(text):
        return StreamInterrupted(msg, provider=provider)
    if _CONNECTION.search(text):
        return ConnectionFailed(msg, provider=provider)
    return None


def error_for(
    status: int | None, text: str, *, provider: str, message: str | None = None
) -> ProviderError | None:
    """The taxonomy error for an API ``status`` and/or error ``text``; None if unrecognised.

    ``message`` (default: the clipped ``text``) becomes the error's message;
    pass it already redacted.
    """
    msg = clip(text) if message is None else message
    if status is not None and 400 <= status <= 599:
        return _from_status(status, text, provider, msg)
    return _from_text(text, provider, msg)


def classify_exit(
    returncode: int, stderr: str, stdout: str, *, provider: str, redact: Redactor
) -> ProviderError | None:
    """Default classification of a finished run: None for exit 0, else an error.

    Recognised messages (and a status found in them) map like HTTP errors;
    anything else is a ``TransientError`` naming the exit status and the last
    ~300 characters of stderr.
    """
    if returncode == 0:
        return None
    text = f"{stderr}\n{stdout[-2000:]}"
    tail = clip(redact(stderr.strip() or stdout.strip()))
    err = error_for(find_status(text), text, provider=provider, message=tail)
    if err is not None:
        return err
    return TransientError(
        f"exited with status {returncode}" + (f"; stderr ends: {tail}" if tail else ""),
        provider=provider,
    )


def clip(text: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text``, stripped, marked with "..." when cut."""
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


class Redactor:
    """Replaces secrets and prompt text in diagnostics with placeholders.

    Values shorter than 8 characters are not redacted (too many false hits);
    the prompt is redacted whole and line by line (lines of 20+ characters).
    """

    def __init__(self, secrets: Iterable[str] = (), prompt: str = "") -> None:
        subs: dict[str, str] = {}
        for line in prompt.splitlines():
            if len(line.strip()) >= 20:
                subs[line.strip()] = "<prompt>"
        if len(prompt.strip()) >= 8:
            subs[prompt.strip()] = "<prompt>"
        for value in secrets:
            if len(value) >= 8:
                subs[value] = "***"
        # Longest first, so a secret containing another is replaced whole.
        self._subs = sorted(subs.items(), key=lambda kv: -len(kv[0]))

    def __call__(self, text: str) -> str:
        for old, new in self._subs:
            if old in text:
                text = text.replace(old, new)
        return text

"""Secrets (API keys) that never print, and the rule for where a key may be sent.

A :class:`Secret` holds a key so that ``repr``, ``str`` and f-strings show
``'***'``: a provider's repr, an event or an exception message cannot leak it
by accident. :func:`check_endpoint` refuses, at construction, a base URL to
which a key would travel in clear text (:func:`endpoint_problem` is that rule,
which chain-file specs apply too). Credentials may also ride in a URL
(user info, ``?token=``) or in headers: :func:`redact_url`, :func:`url_secrets`
and :func:`header_secrets` find them so messages can mask them.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

__all__ = [
    "KEY_SHAPED",
    "Secret",
    "check_endpoint",
    "endpoint_problem",
    "has_url_credentials",
    "header_secrets",
    "is_credential_header",
    "is_loopback",
    "redact_url",
    "redact_urls",
    "scrub",
    "split_user_info",
    "url_secrets",
]

_MASK = "***"
# Key-shaped tokens vendors echo back in error messages ("Incorrect API key provided: sk-ab***yz").
_KEY_PATTERN = re.compile(r"\b(?:sk|sk-ant|AIza|key)[-_A-Za-z0-9*]{6,}")
#: Vendor key formats (OpenAI, Anthropic, Groq, xAI, Google, GitHub, Hugging Face, GitLab,
#: Slack, AWS): masked in messages here, refused where a chain file writes them literally.
KEY_SHAPED = re.compile(
    r"\b(?:sk-ant-[A-Za-z0-9_-]{6,}|sk-proj-[A-Za-z0-9_-]{6,}|sk-[A-Za-z0-9_-]{10,}"
    r"|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,}|AIza[0-9A-Za-z_-]{10,}"
    r"|gh[pousr]_[A-Za-z0-9]{10,}|github_pat_[A-Za-z0-9_]{10,}|hf_[A-Za-z0-9]{10,}"
    r"|glpat-[A-Za-z0-9_-]{10,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})"
)
# Credentials that are not key-shaped but say what they are: an HTTP auth scheme's token
# (``Bearer eyJ...``) or a value after a credential's name (``api_key=...``,
# ``"password": "..."``, ``x-api-key: ...``). Bounded alternations, no nesting: linear time.
_NAMED_CREDENTIAL = re.compile(
    r"(?i)(\b(?:bearer|basic)\s+|\b(?:x-)?(?:api[-_]?key|access[-_]?token|auth[-_]?token"
    r"|refresh[-_]?token|id[-_]?token|client[-_]?secret|secret|password|passwd|pwd)"
    r"[\"']?\s{0,3}[=:]\s{0,3}[\"']?)[^\s\"'&,;]{4,}"
)

# Characters a terminal acts on (ESC and the other C0/C1 controls, DEL) or that reorder
# what it shows (bidi overrides): a vendor's error text may hold them, and messages are
# printed. Line breaks and tabs stay (callers cut to a line).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Secret:
    """A string that prints as ``'***'``; :meth:`reveal` gives the value.

    Not a ``str`` subclass on purpose: ``"Bearer " + secret`` must be written
    as ``"Bearer " + secret.reveal()``, so every use of the value is explicit.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"Secret: expected str, got {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret value; only for building request headers."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{_MASK}')"

    def __str__(self) -> str:
        return _MASK

    def __format__(self, spec: str) -> str:
        return _MASK

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))


def scrub(text: str, *secrets: Secret | Iterable[Secret] | None) -> str:
    """``text`` with every given secret, anything key-shaped and any value a credential's
    name announces (``Bearer ...``, ``api_key=...``, ``password: ...``) replaced by ``***``;
    control characters (terminal escapes, bidi overrides) by ``?``: the text is for display.

    Each argument is a :class:`Secret`, None, or an iterable of secrets (as
    :func:`url_secrets` and :func:`header_secrets` return, longest first).
    """
    for item in secrets:
        if isinstance(item, Secret):
            if item:
                text = text.replace(item.reveal(), _MASK)
        elif item is not None:
            for secret in item:
                if secret:
                    text = text.replace(secret.reveal(), _MASK)
    text = _NAMED_CREDENTIAL.sub(lambda m: m.group(1) + _MASK, _CONTROL.sub("?", text))
    return KEY_SHAPED.sub(_MASK, _KEY_PATTERN.sub(_MASK, text))


# Query parameters that carry credentials (signed URLs, webhook tokens, API keys).
_CREDENTIAL_PARAM = re.compile(
    r"token|secret|passw|passwd|pwd|api[-_]?key|apikey|signature|credential|auth|session"
    r"|^(?:key|sig|code|x-amz-security-token)$|[-_.]key$|[-_.]sig$",
    re.IGNORECASE,
)
# Header names whose values are credentials.
_CREDENTIAL_HEADER = re.compile(r"key|token|secret|auth|cookie|passw|signature", re.IGNORECASE)
_MIN_SECRET = 4  # shorter values would mask ordinary words in messages
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def _secrets(values: Iterable[str]) -> tuple[Secret, ...]:
    """Distinct values of at least ``_MIN_SECRET`` characters as secrets, longest first."""
    kept = {v for v in values if len(v) >= _MIN_SECRET}
    return tuple(Secret(v) for v in sorted(kept, key=len, reverse=True))


def url_secrets(url: str) -> tuple[Secret, ...]:
    """The credentials a URL carries: user info and credential-like query values.

    Both the raw and the percent-decoded forms are returned, longest first, so a
    message quoting either is masked.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    values: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        values.append(userinfo)
        values.extend(p for p in userinfo.split(":", 1))
    for name, value in _query_pairs(parts.query):
        if _CREDENTIAL_PARAM.search(unquote_plus(name)):
            values.append(value)
    values.extend([unquote_plus(v) for v in values])
    return _secrets(values)


def _query_pairs(query: str) -> list[tuple[str, str]]:
    """The raw (still percent-encoded) ``name=value`` pairs of a query string."""
    pairs = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if name:
            pairs.append((name, value))
    return pairs


def has_url_credentials(url: str) -> bool:
    """True when ``url`` carries user info or a credential-like query parameter."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if "@" in parts.netloc:
        return True
    return any(_CREDENTIAL_PARAM.search(unquote_plus(n)) for n, _ in _query_pairs(parts.query))


def is_credential_header(name: str) -> bool:
    """True for headers whose value is a credential (Authorization, x-api-key, *token*...)."""
    return bool(_CREDENTIAL_HEADER.search(name))


def header_secrets(headers: Mapping[str, str]) -> tuple[Secret, ...]:
    """The values of credential headers, and the token after a scheme ("Bearer t" gives t too)."""
    values: list[str] = []
    for name, value in headers.items():
        if is_credential_header(name) and isinstance(value, str):
            values.append(value)
            scheme, _, token = value.partition(" ")
            if token and scheme.isalpha():
                values.append(token.strip())
    return _secrets(values)


def split_user_info(url: str) -> tuple[str, str | None]:
    """``url`` without ``user:password@``, and the ``Basic`` Authorization value it
    stood for (None when there was none). Sending the credential as a header works
    the same on every client (aiohttp refuses user info next to an Authorization header).
    """
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    pair = f"{unquote(user)}:{unquote(password)}".encode()
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return bare, "Basic " + base64.b64encode(pair).decode("ascii")


def redact_url(url: str) -> str:
    """``scheme://host:port/path`` of ``url``: no user info, query or fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if not parts.netloc:  # not scheme://host...: cut query, fragment and "user:pw@"
        return url.split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def redact_urls(text: str) -> str:
    """``text`` with every URL in it cut down by :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_problem(
    url: str,
    *,
    allow_insecure_http: bool,
    allow_user_info: bool = True,
    opt_in: str = "pass allow_insecure_http=True",
) -> str | None:
    """What keeps ``url`` from being an endpoint (words to follow the URL), or None.

    Credentials only travel over https, or plain http to loopback; any other
    ``http://`` URL is refused unless ``allow_insecure_http``. ``allow_user_info=False``
    refuses ``user:password@`` in the URL. ``opt_in`` says how the caller's user
    allows plain http (a chain file says ``set allow_insecure_http: true ...``).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "is not a valid URL; give e.g. 'https://api.example.com/v1'"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http(s) URL; give e.g. 'https://api.example.com/v1'"
    if not allow_user_info and "@" in parts.netloc:
        return (
            "carries user info (user:password@ in the URL): pass the key as api_key=, "
            "or a credential header with extra_headers=, not in the URL"
        )
    if parts.scheme == "http" and not allow_insecure_http and not is_loopback(parts.hostname):
        return (
            "is a plain http:// URL to another machine, which would send credentials in clear "
            f"text; use an https:// URL, or {opt_in} if the network is trusted"
        )
    return None


def check_endpoint(
    url: str, *, field: str, allow_insecure_http: bool, allow_user_info: bool = True
) -> str:
    """Validate ``url`` (named ``field`` in errors) and return it without a trailing slash.

    ``ValueError`` naming what :func:`endpoint_problem` finds, with the URL shown
    without user info or query (see :func:`redact_url`).
    """
    problem = endpoint_problem(
        url, allow_insecure_http=allow_insecure_http, allow_user_info=allow_user_info
    )
    if problem is not None:
        raise ValueError(f"{field}={redact_url(url)!r} {problem}")
    return url.rstrip("/")

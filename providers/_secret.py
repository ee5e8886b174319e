"""Secrets (API keys) that never print, and the rule for where a key may be sent.

A :class:`Secret` holds a key so that ``repr``, ``str`` and f-strings show
``'***'``: a provider's repr, an event or an exception message cannot leak it
by accident. :func:`check_endpoint` refuses, at construction, a base URL to
which a key would travel in clear text.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

__all__ = ["Secret", "check_endpoint", "is_loopback", "scrub"]

_MASK = "***"
# Key-shaped tokens vendors echo back in error messages ("Incorrect API key provided: sk-ab***yz").
_KEY_PATTERN = re.compile(r"\b(?:sk|sk-ant|AIza|key)[-_A-Za-z0-9*]{6,}")


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


def scrub(text: str, *secrets: Secret | None) -> str:
    """``text`` with every given secret, and anything key-shaped, replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret.reveal(), _MASK)
    return _KEY_PATTERN.sub(_MASK, text)


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint(url: str, *, field: str, allow_insecure_http: bool) -> str:
    """Validate ``url`` (named ``field`` in errors) and return it without a trailing slash.

    Credentials only travel over https, or plain http to loopback; any other
    ``http://`` URL raises ``ValueError`` unless ``allow_insecure_http=True``.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{field}={url!r} is not an http(s) URL; give e.g. 'https://api.example.com/v1'"
        )
    if parts.scheme == "http" and not allow_insecure_http and not is_loopback(parts.hostname):
        raise ValueError(
            f"{field}={url!r} would send credentials in clear text to {parts.hostname}: "
            "use an https:// URL, or pass allow_insecure_http=True if this network is trusted"
        )
    return url.rstrip("/")

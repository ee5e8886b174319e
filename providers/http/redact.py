"""What of a vendor's words and a library's exception may go into our errors: masked and cut."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.secrets import Secret, redact_urls, scrub

__all__ = ["MESSAGE_LIMIT", "Redacted", "Secrets", "redacted", "short"]

MESSAGE_LIMIT = 200

Secrets = Secret | Iterable[Secret] | None
"""What the mappers mask: one key, several secrets (key, URL and header credentials), or none."""


def short(text: str, *secrets: Secrets) -> str:
    """``text`` with secrets masked, on one line, cut to about 200 characters."""
    text = " ".join(scrub(text, *secrets).split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


class Redacted(Exception):
    """What a project error chains as ``__cause__`` in place of a library's exception:
    the type name and a masked, cut message, and nothing else.

    Never chain the library's exception itself: aiohttp's ``ClientResponseError``
    holds the request headers (the key), ``JSONDecodeError.doc`` the whole body,
    and either could reach a log through ``repr``, pickle or a traceback. Raise the
    project error *outside* the ``except`` block, or ``__context__`` keeps the original.
    """


def redacted(exc: BaseException, *secrets: Secrets) -> Redacted:
    """``exc`` described as a :class:`Redacted` (URLs cut, ``secrets`` masked, one line)."""
    return Redacted(short(redact_urls(f"{type(exc).__name__}: {exc}"), *secrets))

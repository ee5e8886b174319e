"""Keep environment values out of chain-file errors, and check endpoint URLs before use.

A value that came from ``${VAR}`` may hold a credential (``GATEWAY_URL`` with
``?api_key=...``), so no error may print it: :func:`show_value` names the
variable instead ("the value of ${GATEWAY_URL}"), and :meth:`EnvValues.scrub`
removes such values (and their URL parts) from messages written by
constructors. :func:`endpoint_problem` checks a provider's ``base_url`` /
``url`` itself, so the problem is reported at that field's own line, in the
file's words rather than the constructor's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from orchestrator.config.problems import Path, Problem
from orchestrator.config.source import Source
from orchestrator.secrets import is_loopback

__all__ = ["EnvValues", "constructor_problem", "endpoint_problem", "show_value"]

#: Fields whose literal values are never printed either (they may hold credentials).
SECRET_FIELDS = ("api_key", "headers", "env")
#: Constructor parameter names that are spelled differently in the chain file.
_PARAM_TO_KEY = {"extra_headers": "headers"}
_LEAD = re.compile(
    r"\s*(?:[A-Z]\w*\.)?(?P<field>[a-z_]\w*)\s*(?:=\s*(?P<value>'(?:[^'\\]|\\.)*'"
    r"|\"(?:[^\"\\]|\\.)*\"|\S+)|:)\s*"
)
_ENDPOINT_FIELDS = {"openai", "anthropic", "gemini", "http"}


def show_value(path: Path, value: Any, env_paths: Mapping[Path, tuple[str, ...]]) -> str:
    """How an error shows the value at ``path``: never an environment value or a secret."""
    for n in range(len(path), 0, -1):
        names = env_paths.get(path[:n])
        if names:
            return "the value of " + ", ".join(f"${{{v}}}" for v in names)
    if any(p in SECRET_FIELDS for p in path if isinstance(p, str)):
        return "(hidden)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _lookup(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def _url_parts(value: str) -> list[str]:
    """The pieces of a URL that could identify or authorise (host, user, password, query)."""
    if "://" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
        pieces = [parts.netloc, parts.username, parts.password, parts.hostname, parts.query]
    except ValueError:
        return []
    pieces += [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    return [p for p in pieces if p and len(p) >= 3]


@dataclass(frozen=True)
class EnvValues:
    """The expanded data and which field paths took a value from the environment."""

    data: Mapping[str, Any]
    paths: Mapping[Path, tuple[str, ...]]

    def show(self, path: Path, value: Any) -> str:
        return show_value(path, value, self.paths)

    def scrub(self, message: str, under: Path) -> str:
        """``message`` without any environment value used at or below ``under``."""
        whole: dict[str, str] = {}
        pieces: set[str] = set()
        for path, names in self.paths.items():
            if path[: len(under)] != under:
                continue
            value = _lookup(self.data, path)
            if not isinstance(value, str) or not value:
                continue
            label = "the value of " + ", ".join(f"${{{n}}}" for n in names)
            for variant in {value, value.strip(), value.rstrip("/")}:
                whole[repr(variant)] = label
                if len(variant) >= 4:
                    whole[variant] = label
            pieces.update(_url_parts(value))
        for old in sorted(whole, key=len, reverse=True):
            message = message.replace(old, whole[old])
        for old in sorted(pieces, key=len, reverse=True):
            message = message.replace(old, "***")
        return message


def constructor_problem(
    src: Source, where: Path, exc: BaseException, keys: Any, env: EnvValues
) -> Problem:
    """A constructor's ``ValueError``/``TypeError`` at ``where``, located and scrubbed.

    Messages that start with ``Class.field=value`` or ``Class.field:`` (the
    providers' convention) are reported at that field when the file sets it,
    with the value shown the way the rest of the errors show values.
    """
    message = str(exc)
    path = where
    m = _LEAD.match(message)
    if m is not None and isinstance(keys, Mapping):
        key = _PARAM_TO_KEY.get(m.group("field"), m.group("field"))
        if key in keys:
            path = (*where, key)
            if m.group("value") is not None:
                shown = env.show(path, _lookup(env.data, path))
                message = f"{shown} {message[m.end() :]}".rstrip()
            else:
                message = message[m.end() :]
    return src.problem(path, env.scrub(message, where))


def endpoint_problem(src: Source, name: str, spec: Any, env: EnvValues) -> Problem | None:
    """A problem with provider ``name``'s ``base_url``/``url``, or None when it may be used.

    Credentials only travel over https, or plain http to this machine, unless
    the provider sets ``allow_insecure_http: true``.
    """
    if spec.type not in _ENDPOINT_FIELDS:
        return None
    key = "url" if spec.type == "http" else "base_url"
    url = getattr(spec, key, None)
    if url is None:
        return None
    path: Path = ("providers", name, key)
    shown = env.show(path, url)
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        return src.problem(
            path, f"{shown} is not an http(s) URL; give e.g. 'https://api.example.com/v1'"
        )
    if parts.scheme == "http" and not spec.allow_insecure_http and not is_loopback(host):
        return src.problem(
            path,
            f"{shown} is a plain http:// URL to another machine, which would send credentials "
            "in clear text; use an https:// URL, or set allow_insecure_http: true on this "
            "provider if the network is trusted",
        )
    return None

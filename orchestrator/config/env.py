"""Secrets in a chain file: refuse literal keys, expand ``${VAR}`` from the environment.

The file is meant to be committed, so a key written into it is refused with
a message showing how to reference an environment variable instead. The
check runs on the text as written (before expansion); expansion then
replaces ``${VAR}`` and ``${VAR:-default}`` (``$${`` is a literal ``${``).
Values that came from the environment are remembered by field path so error
messages can name the variable instead of printing the value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from orchestrator.config import registry
from orchestrator.config.problems import ConfigError, Path, Problem
from orchestrator.config.source import Source
from orchestrator.config.spec import EnvStr
from orchestrator.secrets import KEY_SHAPED as _KEY_SHAPED

__all__ = ["check_secrets", "expand_env"]

_REF = re.compile(r"\$\$\{|\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
#: An authorization scheme followed by a literal credential (in a header value).
_BEARER = re.compile(r"\b(?:Bearer|Basic|Token)\s+\S", re.IGNORECASE)
#: ``Bearer <token>`` elsewhere (an env value, an argument): a token-like word with a digit.
_BEARER_TOKEN = re.compile(r"\bBearer\s+(?=[^\s]*\d)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
#: Query parameters that carry credentials in a URL (compared without ``-``/``_``, lower case).
_URL_SECRET_PARAMS = frozenset(
    {
        "token",
        "key",
        "apikey",
        "accesstoken",
        "authtoken",
        "sig",
        "signature",
        "password",
        "passwd",
        "pwd",
        "secret",
        "clientsecret",
    }
)
#: Header names that suggest a credential; a token-like literal value in them is refused.
_SECRETISH_HEADER = re.compile(r"auth|token|key|secret|passw|signature|cookie|session", re.I)
_TOKEN_LIKE = re.compile(r"(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[A-Za-z0-9._~+/=:-]{8,}")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_MARK = "\ue000"  # stands for a ${VAR} reference while a URL is parsed
_SECRET_NAME = re.compile(r"(?:^|[_-])(?:api[_-]?key|key|token|secret|password|passwd)$", re.I)
_CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)


def _literal_part(text: str) -> str:
    """``text`` with every ``${...}`` reference removed (what is written literally)."""
    return _REF.sub(" ", text)


def _defaults(text: str) -> list[str]:
    return [
        m.group(1).split(":-", 1)[1]
        for m in _REF.finditer(text)
        if m.group(1) and ":-" in m.group(1)
    ]


def _url_has_literal_secret(text: str) -> bool:
    """A literal password (``https://user:pw@host``) or credential query parameter in ``text``.

    ``${VAR}`` references stand in as a marker, so ``https://u:${PW}@h`` and
    ``?token=${TOKEN}`` are fine; ``${URL:-https://u:pw@h}`` is checked too.
    """
    marked = _REF.sub(lambda m: "$" if m.group(1) is None else _MARK, text)
    for candidate in (marked, *_defaults(text)):
        for url in _URL.findall(candidate):
            try:
                parts = urlsplit(url)
                password = parts.password
            except ValueError:
                continue
            if password and password.replace(_MARK, ""):
                return True
            for key, value in parse_qsl(parts.query, keep_blank_values=True):
                name = key.lower().replace("-", "").replace("_", "")
                if name in _URL_SECRET_PARAMS and value.replace(_MARK, "").strip():
                    return True
    return False


def _is_single_ref(text: str) -> bool:
    m = _REF.fullmatch(text.strip())
    return m is not None and m.group(1) is not None


def check_secrets(src: Source) -> None:
    """Refuse literal keys anywhere in the file (``ConfigError`` listing each one)."""
    problems: list[Problem] = []
    _walk_secrets(src, src.data, (), problems)
    if problems:
        raise ConfigError(problems)


def _key_env(kind: Any) -> str | None:
    """The variable provider type ``kind`` reads its key from (None when unknown)."""
    try:
        spec = registry.load(kind) if isinstance(kind, str) else None
    except Exception:  # the type's own error is reported by validation
        return None
    return None if spec is None else spec.key_env


def _suggest(src: Source, path: Path) -> str:
    if len(path) >= 2 and path[0] == "providers":
        providers = src.data.get("providers")
        spec = providers.get(path[1]) if isinstance(providers, Mapping) else None
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        stem = re.sub(r"[^A-Za-z0-9_]", "_", str(path[1])).upper()
        if path[-1] == "api_key":
            return _key_env(kind) or f"{stem}_API_KEY"
        if len(path) == 3 and path[-1] in ("url", "base_url"):
            return f"{stem}_{str(path[-1]).upper()}"
        if len(path) >= 3 and path[-2] == "headers":
            return f"{stem}_TOKEN"
    last = str(path[-1]).upper().replace("-", "_")
    return last if _NAME.match(last) else "MY_SECRET"


def _refuse(src: Source, path: Path, how: str) -> Problem:
    return src.problem(
        path,
        "a literal secret is not allowed in the chain file (it would be committed and "
        f"shared); keep it in the environment and write {how}",
    )


def _walk_secrets(src: Source, node: Any, path: Path, out: list[Problem]) -> None:
    if isinstance(node, Mapping):
        for key, value in node.items():
            _walk_secrets(src, value, (*path, key), out)
        return
    if isinstance(node, list):
        for i, value in enumerate(node):
            _walk_secrets(src, value, (*path, i), out)
        return
    if not isinstance(node, str) or not path:
        return
    name = str(path[-1])
    in_headers = len(path) >= 2 and path[-2] == "headers"
    literal = _literal_part(node)
    leaked = [literal, *_defaults(node)]
    named = [m.group(1).partition(":-")[0] for m in _REF.finditer(node) if m.group(1)]
    var = named[0] if len(named) == 1 and _NAME.match(named[0]) else _suggest(src, path)
    defaults = [d for d in _defaults(node) if d.strip()]
    if name == "api_key" and len(path) == 3 and path[0] == "providers":
        # A default is a key written into the file: ${KEY:-} (empty) is the only one allowed.
        if not _is_single_ref(node) or defaults:
            out.append(_refuse(src, path, f"api_key: ${{{var}}}"))
        return
    if in_headers and name.lower() in _CREDENTIAL_HEADERS:
        stripped = re.sub(r"^\s*(Bearer|Basic|Token)\s+", "", literal, flags=re.I).strip()
        if stripped or defaults:
            prefix = "Bearer " if name.lower() == "authorization" else ""
            out.append(_refuse(src, path, f'{name}: "{prefix}${{{var}}}"'))
        return
    secretish_header = (
        in_headers
        and _SECRETISH_HEADER.search(name) is not None
        and _TOKEN_LIKE.search(literal) is not None
    )
    if (
        any(_KEY_SHAPED.search(t) for t in leaked)
        or (in_headers and _BEARER.search(literal))
        or secretish_header
        or (path[0] == "providers" and any(_BEARER_TOKEN.search(t) for t in leaked))
        or ((path[0] == "providers" or name == "redis_url") and _url_has_literal_secret(node))
    ):
        out.append(_refuse(src, path, f'{name}: "${{{var}}}"'))
        return
    if _SECRET_NAME.search(name) and literal.strip() and path[0] == "providers":
        out.append(_refuse(src, path, f"{name}: ${{{var}}}"))


def _credential(path: Path) -> bool:
    """Whether ``path`` is a provider's key or header value."""
    return len(path) > 2 and path[0] == "providers" and (path[-1] == "api_key" or "headers" in path)


def expand_env(
    src: Source, environ: Mapping[str, str] | None = None, *, need_keys: bool = True
) -> tuple[dict[str, Any], dict[Path, tuple[str, ...]]]:
    """The data with every ``${VAR}`` expanded, and the paths whose value used a variable.

    ``need_keys=False``, for a command that calls no provider (``failover health``),
    lets a provider's credential (``api_key``, a header) name an unset variable."""
    env = os.environ if environ is None else environ
    used: dict[Path, tuple[str, ...]] = {}
    problems: list[Problem] = []
    data = _expand(src, src.data, (), env, used, problems, need_keys)
    if problems:
        raise ConfigError(problems)
    return data, used


def _expand(
    src: Source,
    node: Any,
    path: Path,
    env: Mapping[str, str],
    used: dict[Path, tuple[str, ...]],
    problems: list[Problem],
    need_keys: bool = True,
) -> Any:
    if isinstance(node, Mapping):
        return {
            k: _expand(src, v, (*path, k), env, used, problems, need_keys) for k, v in node.items()
        }
    if isinstance(node, list):
        return [
            _expand(src, v, (*path, i), env, used, problems, need_keys) for i, v in enumerate(node)
        ]
    if not isinstance(node, str) or "$" not in node:
        return node
    names: list[str] = []

    def replace(m: re.Match[str]) -> str:
        if m.group(1) is None:  # "$${" escapes a literal "${"
            return "${"
        inner = m.group(1)
        name, has_default, default = inner.partition(":-")
        if not _NAME.match(name):
            problems.append(
                src.problem(
                    path,
                    f"${{{inner}}} is not a variable reference; write ${{NAME}} or "
                    "${NAME:-default} with NAME made of letters, digits and _",
                )
            )
            return ""
        names.append(name)
        value = env.get(name)
        if has_default and not value:
            return default
        if value is None and not need_keys and _credential(path):
            return ""  # never sent: the command calls no provider
        if value is None:
            problems.append(
                src.problem(
                    path,
                    f"environment variable {name} is not set; export {name}=... "
                    f"or give a default: ${{{name}:-value}}",
                )
            )
            return ""
        return value

    out = _REF.sub(replace, node)
    if "${" in _REF.sub("", node):
        problems.append(
            src.problem(path, "unterminated '${'; write ${NAME} (or $${ for a literal)")
        )
    if names:
        used[path] = tuple(names)
        return EnvStr(out)
    return out

"""Unknown keyword names, answered with the names meant: for constructors and the chain file.

:func:`did_you_mean` is the one suggestion rule (close names by :mod:`difflib`),
used by the chain file's "unknown key" problems and by :class:`KeywordChecked`,
the base of every provider and of ``FallbackAgent``: ``OpenAIChat("m", model_name=...)`` is a
``TypeError`` that suggests ``model``, and a keyword that belongs to
``FallbackAgent`` (``attempt_timeout``, ``max_retries``) says so, with the
provider's own keyword for it. Other values given where something else was meant
are answered here too: a model name where a provider goes
(:func:`provider_for_model`), a dict where a ``ToolCall`` goes (:func:`not_a_tool_call`).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import Any, Self

__all__ = [
    "KeywordChecked",
    "accepted_keywords",
    "did_you_mean",
    "not_a_tool_call",
    "provider_for_model",
    "unexpected_keywords",
]

#: FallbackAgent's retry settings: a provider takes them as one ``retry_policy=``.
_POLICY_KEYWORDS = frozenset(
    {"max_retries", "retry_strategy", "retry_delay", "max_delay", "jitter", "policy"}
)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'model'?)"`` for the closest of ``choices``, or ``""``."""
    near = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


#: The vendor class a model name most likely wants, by its start (else any OpenAI-compatible
#: endpoint). Names only: the core never imports the providers.
_VENDORS = (
    (("claude",), "AnthropicMessages"),
    (("gemini",), "GeminiGenerate"),
    (("gpt", "o1", "o3", "o4", "chatgpt"), "OpenAIChat"),
)


def provider_for_model(model: str) -> str:
    """``from providers import OpenAIChat; OpenAIChat('gpt-4o')``: the provider to write for
    a bare model name given where a provider was expected."""
    shown = model[:80]
    lowered = shown.lower()
    cls = next((c for starts, c in _VENDORS if lowered.startswith(starts)), "OpenAIChat")
    return f"from providers import {cls}; {cls}({shown!r})"


def not_a_tool_call(value: object) -> str:
    """What to write instead of ``value`` where a ``ToolCall`` was expected (a dict, most
    often: an OpenAI-style one is named as such)."""
    got = f"expected ToolCall, got {type(value).__name__}"
    how = "write ToolCall(id, name, arguments), e.g. ToolCall('call_1', 'lookup', {'q': 'x'})"
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        how += (
            "; from an OpenAI-style dict: ToolCall(c['id'], c['function']['name'], "
            "json.loads(c['function']['arguments']))"
        )
    return f"{got}: {how} (from orchestrator import ToolCall)"


@lru_cache(maxsize=256)
def accepted_keywords(cls: type) -> frozenset[str]:
    """Every keyword ``cls(...)`` takes: its ``__init__``'s named parameters, and, while
    an ``__init__`` passes ``**kwargs`` on, those of the next one up the MRO."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]  # not self
        names.update(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return frozenset(names)


def unexpected_keywords(owner: str, given: Iterable[str], accepted: Collection[str]) -> str | None:
    """The message for the first of ``given`` not in ``accepted`` (``None`` when all are)."""
    for word in given:
        if word in accepted:
            continue
        head = f"{owner}() got an unexpected keyword argument {word!r}"
        hint = _agent_hint(word, accepted)
        if hint is not None:
            return f"{head}: {hint}"
        return f"{head}{did_you_mean(word, accepted)}; it takes: {', '.join(sorted(accepted))}"
    return None


def _agent_hint(word: str, accepted: Collection[str]) -> str | None:
    """What to write instead of a FallbackAgent keyword given to a provider, or instead of
    the chain file's ``providers:`` given to FallbackAgent."""
    from orchestrator.engine.agent import FallbackAgent

    if word in ("providers", "agents") and "children" in accepted:
        return (
            "the providers (or nested agents) are the first argument: "
            "FallbackAgent([first, second, ...], ...)"
        )
    if word not in accepted_keywords(FallbackAgent):
        return None
    where = f"{word}= belongs to FallbackAgent(...)"
    if word == "attempt_timeout" and "timeout" in accepted:
        return f"the provider's own keyword is timeout= (seconds per attempt); {where}"
    if word == "first_token_timeout" and "idle_timeout" in accepted:
        return f"the provider's own keyword is idle_timeout= (seconds without output); {where}"
    if word in _POLICY_KEYWORDS and "retry_policy" in accepted:
        return f"{where}; for this provider alone pass retry_policy=RetryPolicy(...)"
    return f"{where}, not to a provider"


class KeywordChecked:
    """Base of the providers: an unknown constructor keyword is a ``TypeError`` that says
    which was meant (close names; the provider's own keyword for a FallbackAgent one).

    Checked in ``__new__``, before Python matches the arguments to ``__init__``; type
    checkers still read ``__init__``.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if kwargs:
            accepted = accepted_keywords(cls)  # type: ignore[arg-type]  # a class is hashable
            message = unexpected_keywords(cls.__name__, kwargs, accepted)
            if message is not None:
                raise TypeError(message)
        return super().__new__(cls)

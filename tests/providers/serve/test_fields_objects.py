"""Every list of objects in a client's body is read by one helper: a non-object item is a
400 naming its place, the same in the OpenAI, Anthropic and Responses wires."""

from __future__ import annotations

from typing import Any

import pytest

from providers.serve import fields
from providers.serve.anthropic_wire import parse_request
from providers.serve.failures import BadRequest
from providers.serve.openai_wire import OpenAIWire
from providers.serve.responses_wire import ResponsesWire


def test_objects_yields_each_place_and_object() -> None:
    items: list[Any] = [{"a": 1}, {"b": 2}]
    assert list(fields.objects(items, "messages")) == [
        ("messages[0]", {"a": 1}),
        ("messages[1]", {"b": 2}),
    ]


def test_objects_refuses_the_first_item_that_is_not_an_object() -> None:
    with pytest.raises(BadRequest, match=r"^tools\[1\]: expected an object$"):
        list(fields.objects([{}, "secret prompt text", 3], "tools"))


_USER = {"role": "user", "content": "hi"}
_CALL = {"id": "c1", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("parse", "body", "place"),
    [
        (OpenAIWire().parse, {"model": "m", "messages": [_USER, "x"]}, "messages[1]"),
        (
            OpenAIWire().parse,
            {"model": "m", "messages": [{"role": "assistant", "tool_calls": [_CALL, 7]}]},
            "messages[0].tool_calls[1]",
        ),
        (
            lambda d: parse_request(d),
            {"model": "m", "max_tokens": 5, "messages": [["x"]]},
            "messages[0]",
        ),
        (
            lambda d: parse_request(d),
            {"model": "m", "max_tokens": 5, "messages": [_USER], "tools": [None]},
            "tools[0]",
        ),
        (ResponsesWire().parse, {"model": "m", "input": [_USER, _USER, 1]}, "input[2]"),
    ],
)
def test_each_wire_names_the_item_that_is_not_an_object(
    parse: Any, body: dict[str, Any], place: str
) -> None:
    with pytest.raises(BadRequest) as caught:
        parse(body)
    # The OpenAI wire prefixes a message's own errors with the message's place.
    assert str(caught.value).endswith(f"{place}: expected an object")

"""A tool schema's ``$ref`` resolves inside the schema or nowhere: nothing is ever fetched."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from orchestrator import Request, Tool, ToolCall
from orchestrator.errors import InvalidRequest
from orchestrator.tools import tool_call_error

#: Audit events a fetch cannot happen without: a name lookup, a connection.
_NETWORK = frozenset({"socket.getaddrinfo", "socket.connect", "socket.connect_ex"})
_seen: list[tuple[str, tuple[Any, ...]]] = []
_watching: list[bool] = []


def _guard(event: str, args: tuple[Any, ...]) -> None:
    if _watching and event in _NETWORK:
        _seen.append((event, args))
        raise RuntimeError(f"a tool schema opened a socket ({event})")  # and none leaves


@contextmanager
def _no_socket() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """The network audit events raised inside the block (each also stopped)."""
    if not getattr(sys, "_failover_tool_guard", False):  # an audit hook cannot be removed
        sys.addaudithook(_guard)
        sys._failover_tool_guard = True  # type: ignore[attr-defined]
    _seen.clear()
    _watching.append(True)
    try:
        with warnings.catch_warnings():  # jsonschema warns after fetching: let it fetch
            warnings.simplefilter("ignore")
            yield _seen
    finally:
        _watching.clear()


def _schema(ref: str, keyword: str = "$ref") -> dict[str, Any]:
    return {"type": "object", "properties": {"a": {keyword: ref}}}


@pytest.mark.parametrize(
    ("ref", "keyword"),
    [
        ("http://127.0.0.1:9/schema.json", "$ref"),
        ("https://169.254.169.254/latest/meta-data#/a", "$ref"),
        ("file:///etc/passwd", "$ref"),
        ("other.json#/a", "$ref"),  # relative to the (absent) base URI
        ("//evil.test/s", "$ref"),
        ("#anchor", "$ref"),  # a plain-name fragment: not a pointer
        ("#/$defs/missing", "$ref"),  # a pointer to nothing
        ("#/properties/a/items/7", "$ref"),
        ("http://127.0.0.1:9/s", "$dynamicRef"),
    ],
)
def test_a_reference_outside_the_schema_is_refused_when_the_request_is_built(
    ref: str, keyword: str
) -> None:
    with _no_socket() as seen, pytest.raises(ValueError) as refused:
        Request("hi", tools=[Tool("lookup", "", _schema(ref, keyword))])
    message = str(refused.value)
    assert "'lookup'" in message and ref in message and keyword in message
    assert seen == []


def test_validating_arguments_against_a_url_ref_opens_no_socket() -> None:
    # The attack: the schema was accepted, and the upstream's tool call made the
    # gateway fetch the URL, synchronously, on its event loop.
    call = ToolCall("c1", "fetch", {"a": {"x": 1}})
    with _no_socket() as seen:
        try:
            request = Request("hi", tools=[Tool("fetch", "", _schema("http://127.0.0.1:9/s"))])
        except ValueError:
            pass
        else:
            with suppress(InvalidRequest):
                tool_call_error(request, [call], "p")
    assert seen == []


def test_a_reference_that_slips_past_the_check_still_fetches_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Defence in depth: the validator resolves through a registry that retrieves nothing.
    import orchestrator.tools

    monkeypatch.setattr(orchestrator.tools, "_check_ref", lambda *args: None, raising=False)
    request = Request("hi", tools=[Tool("fetch2", "", _schema("http://127.0.0.1:9/s"))])
    with _no_socket() as seen, pytest.raises(InvalidRequest, match="cannot be applied"):
        tool_call_error(request, [ToolCall("c1", "fetch2", {"a": 1})], "p")
    assert seen == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}},
        {
            "type": "object",
            "properties": {"a": {"$ref": "#/definitions/a~1b"}},
            "definitions": {"a/b": {}},
        },
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x%20y"}}, "$defs": {"x y": {}}},
        {"type": "object", "properties": {"kid": {"$ref": "#"}}},  # a tree
        {
            "$id": "https://tools.test/s",
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "integer"}},
        },
        {"type": "object", "properties": {"$ref": {"type": "string"}}},  # a property so named
    ],
)
def test_local_references_resolve_and_check_the_arguments(schema: dict[str, Any]) -> None:
    tool = Tool("local", "", schema)
    with _no_socket() as seen:
        request = Request("hi", tools=[tool])
        assert tool_call_error(request, [ToolCall("c1", "local", {})], "p") is None
    assert seen == []


def test_a_local_reference_is_applied_to_the_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "integer"}},
    }
    request = Request("hi", tools=[Tool("count", "", schema)])
    error = tool_call_error(request, [ToolCall("c1", "count", {"n": "seven"})], "p")
    assert error is not None and "at n: type check failed" in str(error)
    assert tool_call_error(request, [ToolCall("c1", "count", {"n": 7})], "p") is None


def test_a_url_in_schema_names_a_dialect_and_is_never_fetched() -> None:
    schema = {"$schema": "http://127.0.0.1:9/meta", "type": "object", "properties": {}}
    with _no_socket() as seen:
        request = Request("hi", tools=[Tool("dialect", "", schema)])
        assert tool_call_error(request, [ToolCall("c1", "dialect", {"a": 1})], "p") is None
    assert seen == []

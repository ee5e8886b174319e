"""A client's request as the gateway runs it, and what a wire format must provide."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from orchestrator.types import Request, Result, Usage
from providers.http.safe_json import dumps_if_exact, replace_lone_surrogates
from providers.serve.failures import Failure

__all__ = ["ClientCall", "Streamer", "Wire", "dumps", "encoded", "new_id", "usage_of"]


@dataclass(frozen=True, slots=True)
class ClientCall:
    """What the client asked for: which model, the :class:`Request`, and how to answer;
    ``affinity``: the key routing keeps its calls together (``run(..., affinity=)``)."""

    model: str
    request: Request
    stream: bool = False
    include_usage: bool = False
    affinity: str | None = None

    def answering(self, model: str | None) -> str:
        """The model a reply names: ``model``, the one that answered, when known (the
        client's alias stays in the ``x-failover-model-alias`` header)."""
        return model or self.model

    def answered_by(self, model: str | None) -> ClientCall:
        """This call as a stream's events name it (:meth:`answering`). Built field by field:
        a ``dataclasses.replace`` cost a walk over the fields."""
        named = self.answering(model)
        if named == self.model:
            return self
        return ClientCall(named, self.request, self.stream, self.include_usage, self.affinity)


class Streamer(Protocol):
    """Writes one streamed reply in a wire format, as bytes for the socket."""

    #: Sent when the upstream moved without text: keeps the client in step, shows no content
    #: (empty: this format has none such).
    keep_alive: bytes

    def start(self) -> bytes:
        """The events before the first text delta (sent with the first content)."""

    def text(self, chunk: str) -> bytes:
        """One text delta."""

    def end(self, result: Result) -> bytes:
        """The tool calls, the finish reason, usage and the terminator."""

    def error(self, failure: Failure) -> bytes:
        """An error after the stream began (the status line is already sent)."""


class Wire(Protocol):
    """A client wire format: parse its requests, write its replies and errors."""

    def parse(self, data: dict[str, Any]) -> ClientCall:
        """The client's JSON body as a call (raises ``BadRequest``)."""

    def reply(self, call: ClientCall, result: Result) -> dict[str, Any]:
        """A whole (non-streamed) reply, naming ``call.answering(result.model)``. What it
        adds to ``result``'s values is exactly str, int, bool, None, dicts and lists: the
        reply may then be written without a proof (:func:`encoded`'s ``plain``)."""

    def error(self, failure: Failure) -> tuple[int, dict[str, Any]]:
        """Status and body for a failure, in this format."""

    def streamer(self, call: ClientCall) -> Streamer:
        """A writer for one streamed reply."""


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Compact JSON for the wire, always valid UTF-8: a lone surrogate (which a Python
    provider may return; upstream JSON has none left) goes out as U+FFFD. By orjson where
    that is exact (:func:`~providers.http.safe_json.dumps_if_exact`), else the stdlib."""
    fast = dumps_if_exact(value)
    return _by_stdlib(value) if fast is None else fast.decode()


def encoded(value: Any, plain: bool = False) -> bytes:
    """:func:`dumps` as the UTF-8 bytes of a reply's body: orjson's own, not decoded to be
    encoded again. ``plain``: the caller vouches that ``value`` holds nothing but dicts,
    lists and exact str, int, bool and None (no float, no subclass, no other type), whose
    JSON by orjson is the stdlib's (or refused: a lone surrogate, an integer past 64 bits),
    so it is not parsed back to prove it."""
    if plain:
        try:
            return orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError: the proven way below says what to do
            pass
    fast = dumps_if_exact(value)
    return _by_stdlib(value).encode() if fast is None else fast


def _by_stdlib(value: Any) -> str:
    return replace_lone_surrogates(_ENCODER.encode(value))


def new_id(prefix: str) -> str:
    """A fresh reply id such as ``chatcmpl-...`` or ``msg_...``."""
    return prefix + os.urandom(12).hex()  # secrets.token_hex(12), without its two calls


def usage_of(result: Result) -> Usage:
    """The winning attempt's token counts (what this reply cost the client; zeros when the
    provider did not say). Failed attempts' tokens are the gateway's cost, not the reply's."""
    for attempt in reversed(result.attempts):
        if attempt.ok:
            return attempt.usage or Usage()
    return Usage()

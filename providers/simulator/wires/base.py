"""What every simulated wire format shares: the parsed call and small helpers.

Each vendor module (``_sim_openai``, ``_sim_anthropic``, ``_sim_gemini``,
``_sim_http``) subclasses :class:`Wire` and renders replies, stream events and
error bodies in its own format; the server (``providers.simulator``) decides
which one to send.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "Call",
    "ScriptedCall",
    "Wire",
    "dumps",
    "last_text_block",
    "message_text",
    "reply_text",
    "split_text",
    "Tokens",
    "token_usage",
]


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_ESCAPING = json.JSONEncoder(separators=(",", ":"))


def dumps(obj: Any) -> str:
    """Compact JSON, as the vendors send it (no spaces after separators).

    Text holding a lone surrogate (``"\\ud800"``: valid JSON, not valid UTF-8)
    goes out ``\\u``-escaped, as a hostile upstream sends it, so tests can script it.
    """
    text = _ENCODER.encode(obj)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _ESCAPING.encode(obj)
    return text


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call the simulated model makes: ``name`` and ``arguments``.

    ``arguments`` is a JSON object (a dict), or a str sent as the arguments' text
    as is where the wire carries text (OpenAI, Anthropic streams): a way to
    script arguments that are not valid JSON. Where the wire carries an object,
    such a str is sent as a JSON string instead of an object.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)

    @staticmethod
    def of(value: ScriptedCall | Mapping[str, Any]) -> ScriptedCall:
        """A ScriptedCall from itself or ``{"name": ..., "arguments": ...}``."""
        if isinstance(value, ScriptedCall):
            return value
        if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
            raise ValueError(
                f'tool call: expected {{"name": str, "arguments": {{...}}}}, got {value!r}'
            )
        arguments = value.get("arguments", {})
        if not isinstance(arguments, Mapping | str):
            raise ValueError(f"tool call {value['name']!r}: arguments must be an object or a str")
        return ScriptedCall(
            value["name"], arguments if isinstance(arguments, str) else dict(arguments)
        )

    def text(self) -> str:
        """The arguments as JSON text."""
        return self.arguments if isinstance(self.arguments, str) else dumps(self.arguments)

    def value(self) -> Any:
        """The arguments as a JSON value: the object (a str that parses to one, too)."""
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            parsed = json.loads(self.arguments)
        except ValueError:
            return self.arguments
        return parsed if isinstance(parsed, dict) else self.arguments


@dataclass(slots=True)
class Call:
    """One request as the server understood it, whatever the route."""

    route: str
    model: str
    body: Mapping[str, Any]
    stream: bool
    prompt: str
    seq: int
    json_mode: bool = False
    schema: Mapping[str, Any] | None = None
    tool_name: str | None = None
    include_usage: bool = False
    sse: bool = True
    tool_calls: tuple[ScriptedCall, ...] = ()


class Wire:
    """Renders one vendor's wire format; subclasses override every method."""

    route = ""
    #: The model a request that names none is answered as.
    default_model = "sim"
    #: What a quiet stream sends to keep its connection alive (nothing when empty).
    keep_alive = b": keep-alive\n\n"

    def json_call(self, body: Mapping[str, Any], seq: int, prompt: str, **extra: Any) -> Call:
        """The call a JSON body makes: its ``model`` (else :attr:`default_model`), streamed
        when its ``stream`` is true; ``extra`` sets the wire's own fields of :class:`Call`."""
        model = str(body.get("model", self.default_model))
        stream = bool(body.get("stream"))
        return Call(self.route, model, body, stream, prompt, seq, **extra)

    def tool_names(self, body: Mapping[str, Any]) -> list[str]:
        """The names of the tools a request offered (none by default)."""
        return []

    def refusal(
        self, path: str, query: Mapping[str, str], headers: Mapping[str, str], token: str
    ) -> tuple[int, dict[str, Any]] | None:
        """The status and body refusing a request before its fault (bad credentials: not
        counted), or None; ``token`` is the bearer token the server was given."""
        return None

    def stream_content_type(self, call: Call) -> str:
        """The Content-Type of a streamed reply."""
        return "text/event-stream"

    def parse(self, body: Mapping[str, Any], path: str, query: Mapping[str, str], seq: int) -> Call:
        """Read the model, the prompt and the output mode from a request."""
        raise NotImplementedError

    def reply(self, call: Call, text: str, usage: Tokens) -> dict[str, Any]:
        """A successful non-streaming reply carrying ``text``."""
        raise NotImplementedError

    def stream(
        self, call: Call, pieces: list[str], usage: Tokens, *, terminate: bool
    ) -> list[bytes]:
        """The encoded stream events for ``pieces``; without the end when not ``terminate``."""
        raise NotImplementedError

    def error(self, kind: str, status: int, call: Call) -> dict[str, Any]:
        """The vendor's error body for a fault ``kind`` answered with ``status``."""
        raise NotImplementedError

    def error_headers(self, kind: str, status: int) -> dict[str, str]:
        """Headers the vendor's error reply carries besides the rate-limit ones (none)."""
        return {}

    def stream_error(self, kind: str, status: int, call: Call) -> bytes:
        """The error event a stream carries after HTTP 200 (``Fault.stream_error``): an
        SSE ``data:`` line of the vendor's error body, where a wire says nothing else."""
        return b"data: " + dumps(self.error(kind, status, call)).encode() + b"\n\n"

    def filtered(self, call: Call, prompt_blocked: bool) -> dict[str, Any]:
        """A 200 reply refused by the safety system."""
        raise NotImplementedError

    def filtered_stream(self, call: Call, prompt_blocked: bool) -> list[bytes]:
        """The stream events of a refused reply, terminator included."""
        raise NotImplementedError

    def prompt_refusal(self, call: Call) -> dict[str, Any] | None:
        """The 400 body for a blocked prompt, where the vendor refuses it with an
        error (Azure) rather than in a 200 reply (None: :meth:`filtered`)."""
        return None

    def missing(self, call: Call) -> dict[str, Any]:
        """A 200 reply without the field that carries the text."""
        raise NotImplementedError

    def missing_stream(self, call: Call) -> list[bytes]:
        """Stream events without the text field, terminator included."""
        raise NotImplementedError

    def broken_event(self) -> bytes:
        """One stream event whose data is not valid JSON."""
        raise NotImplementedError


def reply_text(call: Call, text: str | None) -> str:
    """The text to answer with: the scripted one, else "" when the model calls
    tools, else a schema sample in JSON mode, else ``"sim-<route>: <first 40
    chars of the prompt>"``."""
    if text is not None:
        return text
    if call.tool_calls:
        return ""
    if call.json_mode:
        schema = call.schema or {}
        return dumps(sample(schema, schema.get("$defs") or schema.get("definitions") or {}))
    return f"sim-{call.route}: {call.prompt[:40]}"


class Tokens(NamedTuple):
    """A reply's usage: every input token (those read from or written to the prompt cache
    included), the output, and how many of the input the cache read and wrote. Each wire
    reports them in its vendor's own fields and counting."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0

    @property
    def uncached(self) -> int:
        """The input tokens the cache neither read nor wrote (Anthropic's and Bedrock's
        input count)."""
        return self.input - self.cache_read - self.cache_write


def token_usage(call: Call, text: str, usage: Tokens | None) -> Tokens:
    """``usage`` when scripted, else about four characters per token, at least one."""
    if usage is not None:
        return usage
    return Tokens(max(1, math.ceil(len(call.prompt) / 4)), max(1, math.ceil(len(text) / 4)))


def split_text(text: str, n: int) -> list[str]:
    """``text`` in ``n`` consecutive pieces of near-equal length (none empty when
    the text is long enough); joining them gives ``text`` back."""
    n = max(1, n)
    if not text:
        return [""] * n
    size, extra = divmod(len(text), n)
    pieces, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def message_text(content: Any) -> str:
    """The text of a chat message's content: a string or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and "text" in p
        )
    return ""


def last_text_block(content: Any) -> str:
    """The text a user typed last in a message: the whole content when it is a
    string, else the last part that carries ``text``. Agents such as the claude
    and codex CLIs put context blocks (``<system-reminder>``, environment notes)
    before the prompt, so the first block would say nothing about the prompt."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in reversed(content):
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                return str(part["text"])
    return ""


def sample(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> Any:
    """A small instance that satisfies a JSON schema (required fields, first enum
    value, first ``anyOf`` branch): the default JSON reply in structured mode."""
    if depth > 12:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        return sample(target, defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if options:
            non_null = [o for o in options if str(o.get("type")).lower() != "null"] or options
            return sample(non_null[0], defs, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    kind = str(kind).lower()  # Gemini's schema dialect spells types "OBJECT", "STRING"
    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        return {name: sample(props[name], defs, depth + 1) for name in props}
    if kind == "array":
        low = int(schema.get("minItems", 0))
        return [sample(schema.get("items", {}), defs, depth + 1) for _ in range(low)]
    return _SCALARS.get(str(kind))


_SCALARS: dict[str, Any] = {
    "string": "sim",
    "integer": 0,
    "number": 0.0,
    "boolean": False,
    "null": None,
}

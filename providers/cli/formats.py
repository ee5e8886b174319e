"""Readers for the structured output of the claude, codex and gemini command-line agents.

Each format has a ``classify_*`` (the run's error from its structured output,
or None to fall back to the exit status) and a ``parse_*`` (the Response of a
successful run). Formats, as produced by the versions this was built against:

- ``claude -p --output-format json``: one JSON object ``{"type": "result",
  "is_error", "api_error_status", "result", "stop_reason", "usage",
  "total_cost_usd", "modelUsage", "subtype"}``; ``stream-json`` prints one
  event per line and ends with that same object.
- ``codex exec --json``: JSONL events: ``item.completed`` (``item.type``
  ``agent_message`` carries ``text``), ``turn.completed`` (``usage``),
  ``turn.failed`` (``error.message``), ``error`` (``message``).
- ``gemini --output-format json``: on success ``{"response", "stats"}`` on
  stdout; on failure ``{"error": {"type", "message", "code"}}`` on stderr,
  where ``code`` is the API's HTTP status or a CLI exit code (41 auth, 55
  untrusted folder...).
"""

from __future__ import annotations

import json
from typing import Any

from orchestrator.errors import (
    AuthenticationFailed,
    InvalidOutput,
    ProviderError,
    TransientError,
    UnusableError,
)
from orchestrator.types import Response, Usage
from providers.cli.classify import Redactor, clip, error_for, find_status
from providers.cli.process import CLIOutput

__all__ = [
    "classify_claude",
    "classify_codex",
    "classify_gemini",
    "parse_claude",
    "parse_codex",
    "parse_gemini",
]


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object in ``text``: the whole text if it is one, else one per line."""
    stripped = text.strip()
    if not stripped:
        return []
    try:
        whole = json.loads(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    found: list[dict[str, Any]] = []
    for line in stripped.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                found.append(obj)
    return found


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# --- claude -------------------------------------------------------------------------------


def _claude_result(stdout: str) -> dict[str, Any] | None:
    results = [o for o in _json_objects(stdout) if o.get("type") == "result" or "is_error" in o]
    return results[-1] if results else None


def classify_claude(out: CLIOutput, provider: str, redact: Redactor) -> ProviderError | None:
    """The error a claude result object reports (``is_error``, ``api_error_status``)."""
    result = _claude_result(out.stdout)
    if result is None or not result.get("is_error"):
        return None
    subtype = str(result.get("subtype") or "")
    text = str(result.get("result") or subtype or "is_error without a message")
    msg = clip(redact(text))
    if subtype == "error_max_turns":
        return InvalidOutput(
            f"stopped at the turn limit before answering ({msg}); raise max_turns",
            provider=provider,
        )
    status = result.get("api_error_status")
    status = status if isinstance(status, int) else find_status(text)
    err = error_for(status, text, provider=provider, message=msg)
    return err or TransientError(f"is_error ({subtype or 'no subtype'}): {msg}", provider=provider)


def parse_claude(out: CLIOutput) -> Response:
    """The Response in claude's JSON result object."""
    result = _claude_result(out.stdout)
    if result is None:
        raise ValueError("no JSON result object on stdout (expected --output-format json)")
    text = result.get("result")
    if not isinstance(text, str):
        raise ValueError("the result object has no 'result' text")
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    models = result.get("modelUsage")
    cost = result.get("total_cost_usd")
    return Response(
        text=text,
        usage=Usage(
            _int(usage.get("input_tokens"))
            + _int(usage.get("cache_creation_input_tokens"))
            + _int(usage.get("cache_read_input_tokens")),
            _int(usage.get("output_tokens")),
        ),
        model=next(iter(models), None) if isinstance(models, dict) else None,
        finish_reason=result.get("stop_reason")
        if isinstance(result.get("stop_reason"), str)
        else None,
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


# --- codex --------------------------------------------------------------------------------


def classify_codex(out: CLIOutput, provider: str, redact: Redactor) -> ProviderError | None:
    """The error of a ``turn.failed`` event (or, on a failed exit, the last ``error`` event)."""
    events = _json_objects(out.stdout)
    message: str | None = None
    for ev in events:
        if ev.get("type") == "turn.failed":
            error = ev.get("error")
            message = str(error.get("message") if isinstance(error, dict) else error)
    if message is None and out.returncode != 0:
        errors = [ev for ev in events if ev.get("type") == "error"]
        if errors:
            message = str(errors[-1].get("message"))
    if message is None:
        return None
    msg = clip(redact(message))
    err = error_for(find_status(message), message, provider=provider, message=msg)
    return err or TransientError(f"turn failed: {msg}", provider=provider)


def parse_codex(out: CLIOutput) -> Response:
    """The last agent message of a codex JSONL run, with the turn's usage."""
    text: str | None = None
    usage: Usage | None = None
    for ev in _json_objects(out.stdout):
        item = ev.get("item")
        if ev.get("type") == "item.completed" and isinstance(item, dict):
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                text = item["text"]
        elif ev.get("type") == "turn.completed" and isinstance(ev.get("usage"), dict):
            u = ev["usage"]
            usage = Usage(_int(u.get("input_tokens")), _int(u.get("output_tokens")))
    if text is None:
        raise ValueError("no item.completed event with an agent_message on stdout")
    return Response(text=text, usage=usage, finish_reason="stop")


# --- gemini -------------------------------------------------------------------------------

_GEMINI_EXIT = {
    41: "authentication",
    42: "input",
    44: "sandbox",
    52: "configuration",
    53: "turn limit",
    55: "untrusted folder",
}


def _gemini_error(out: CLIOutput) -> dict[str, Any] | None:
    # The error object is the last JSON document on stderr (after a stack trace),
    # or on stdout in some versions; it spans several lines.
    for stream in (out.stderr, out.stdout):
        start = stream.rfind("\n{")
        candidates = [stream[start + 1 :]] if start >= 0 else []
        candidates.append(stream)
        for chunk in candidates:
            for obj in reversed(_json_objects(chunk)):
                if isinstance(obj.get("error"), dict):
                    return obj["error"]  # type: ignore[no-any-return]
    return None


def classify_gemini(out: CLIOutput, provider: str, redact: Redactor) -> ProviderError | None:
    """The error in gemini's JSON error object (``error.code`` is HTTP status or CLI code)."""
    error = _gemini_error(out)
    if error is None:
        return None
    text = str(error.get("message") or error.get("type") or "error without a message")
    msg = clip(redact(text))
    code = error.get("code")
    code = code if isinstance(code, int) else None
    if code is not None and 400 <= code <= 599:
        return error_for(code, text, provider=provider, message=msg)
    if code == 41:
        return AuthenticationFailed(msg, provider=provider)
    if code == 55:
        return UnusableError(
            f"{msg} (pass skip_trust=True to GeminiCLI to trust the working directory)",
            provider=provider,
        )
    if code == 53:
        return InvalidOutput(f"stopped at the turn limit: {msg}", provider=provider)
    if code in _GEMINI_EXIT:
        return UnusableError(f"{_GEMINI_EXIT[code]} error: {msg}", provider=provider)
    err = error_for(find_status(text), text, provider=provider, message=msg)
    return err or TransientError(f"error code {code}: {msg}", provider=provider)


def parse_gemini(out: CLIOutput) -> Response:
    """The ``response`` of gemini's JSON output, with token counts summed over models."""
    objs = [o for o in _json_objects(out.stdout) if "response" in o]
    if not objs or not isinstance(objs[-1].get("response"), str):
        raise ValueError("no JSON object with a 'response' text on stdout")
    doc = objs[-1]
    stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else {}
    assert isinstance(stats, dict)
    models = stats.get("models") if isinstance(stats.get("models"), dict) else {}
    assert isinstance(models, dict)
    tokens_in = tokens_out = 0
    for model_stats in models.values():
        tokens = model_stats.get("tokens") if isinstance(model_stats, dict) else None
        if isinstance(tokens, dict):
            tokens_in += _int(tokens.get("prompt"))
            tokens_out += _int(tokens.get("candidates"))
    return Response(
        text=doc["response"],
        usage=Usage(tokens_in, tokens_out) if models else None,
        model=next(iter(models), None),
        finish_reason="stop",
    )

#!/usr/bin/env python3
"""A stand-in for the claude, codex and gemini CLIs, printing their documented output formats.

The shapes copy what the real CLIs printed (claude 2.1, codex 0.171, gemini 0.61).
Environment:
  STANDIN_TOOL      claude | codex | gemini
  STANDIN_SCENARIO  ok | error:STATUS:MESSAGE | max_turns | garbage | text:EXIT:STDERR
  STANDIN_RECORD    if set, a JSON file receiving {"argv", "stdin", "env"} of this run
  STANDIN_STDERR    if set, written to stderr first
"""

import json
import os
import sys

WATCHED = (
    "CLAUDE_CODE_MAX_RETRIES",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
    "OPENAI_API_KEY",
)


def claude(scenario: str, argv: list[str]) -> int:
    usage = {
        "input_tokens": 5,
        "cache_creation_input_tokens": 2,
        "cache_read_input_tokens": 1,
        "output_tokens": 3,
        "service_tier": "standard",
    }
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "api_error_status": None,
        "duration_ms": 12,
        "num_turns": 1,
        "result": "pong",
        "stop_reason": "end_turn",
        "session_id": "s-1",
        "total_cost_usd": 0.000075,
        "usage": usage,
        "modelUsage": {"claude-test-1": {"inputTokens": 5, "outputTokens": 3}},
        "permission_denials": [],
        "terminal_reason": "completed",
    }
    code = 0
    if scenario.startswith("error:"):
        _, status, message = scenario.split(":", 2)
        result.update(
            is_error=True,
            api_error_status=int(status) if status else None,
            result=message,
            stop_reason="stop_sequence",
            total_cost_usd=0,
            modelUsage={},
        )
        code = 1
    elif scenario == "max_turns":
        result.update(subtype="error_max_turns", is_error=True, result=None)
        code = 1
    if "stream-json" in argv:
        print(json.dumps({"type": "system", "subtype": "init", "session_id": "s-1"}))
        print(
            json.dumps(
                {"type": "assistant", "message": {"content": [{"type": "text", "text": "pong"}]}}
            )
        )
        print(json.dumps(result))
    else:
        print(json.dumps(result))
    return code


def codex(scenario: str, argv: list[str]) -> int:
    events = [{"type": "thread.started", "thread_id": "t-1"}, {"type": "turn.started"}]
    if scenario.startswith("error:"):
        message = scenario.split(":", 2)[2]
        events += [
            {"type": "error", "message": message},
            {"type": "turn.failed", "error": {"message": message}},
        ]
        code = 1
    else:
        events += [
            {
                "type": "item.completed",
                "item": {"id": "item_0", "type": "reasoning", "text": "thinking"},
            },
            {
                "type": "item.completed",
                "item": {"id": "item_1", "type": "agent_message", "text": "pong"},
            },
            {
                "type": "turn.completed",
                "usage": {
                    "input_tokens": 7,
                    "cached_input_tokens": 0,
                    "output_tokens": 3,
                    "reasoning_output_tokens": 0,
                },
            },
        ]
        code = 0
    for ev in events:
        print(json.dumps(ev))
    return code


def gemini(scenario: str, argv: list[str]) -> int:
    if scenario.startswith("error:"):
        _, status, message = scenario.split(":", 2)
        sys.stderr.write("Error when talking to Gemini API Full report available at: /tmp/x.json\n")
        sys.stderr.write("    at retryWithBackoff (file:///bundle/chunk.js:1:1)\n")
        doc = {
            "session_id": "s-1",
            "error": {"type": "Error", "message": message, "code": int(status)},
        }
        sys.stderr.write(json.dumps(doc, indent=2) + "\n")
        return int(status) & 0xFF
    stats = {
        "models": {
            "gemini-test": {
                "api": {"totalRequests": 1},
                "tokens": {"input": 5, "prompt": 5, "candidates": 2, "total": 7},
            }
        }
    }
    print(json.dumps({"session_id": "s-1", "response": "pong", "stats": stats}, indent=2))
    return 0


def main() -> int:
    stdin = sys.stdin.read()
    if os.environ.get("STANDIN_RECORD"):
        with open(os.environ["STANDIN_RECORD"], "w") as fh:
            json.dump(
                {
                    "argv": sys.argv[1:],
                    "stdin": stdin,
                    "env": {k: os.environ.get(k) for k in WATCHED},
                },
                fh,
            )
    if os.environ.get("STANDIN_STDERR"):
        sys.stderr.write(os.environ["STANDIN_STDERR"] + "\n")
    scenario = os.environ.get("STANDIN_SCENARIO", "ok")
    if scenario == "garbage":
        print("this is not json")
        return 0
    if scenario.startswith("text:"):
        _, code, message = scenario.split(":", 2)
        sys.stderr.write(message + "\n")
        return int(code)
    tool = os.environ.get("STANDIN_TOOL", "claude")
    return {"claude": claude, "codex": codex, "gemini": gemini}[tool](scenario, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

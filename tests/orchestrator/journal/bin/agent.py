"""A stand-in for the codex, claude and gemini CLIs that asks the simulated server.

Installed on PATH under each CLI's name. It appends ``{"tool", "argv"}`` to
``$STANDIN_LOG``, sends the prompt (stdin) to the simulator's ``http`` route
(``$FAILOVER_SIM_URL``) and prints the reply in the CLI's documented output format.
``STANDIN_KILL=TOOL``: that CLI SIGKILLs the process that started it (a preempted runner).
"""

import json
import os
import signal
import sys
import urllib.request


def main() -> int:
    tool = os.path.basename(sys.argv[0])
    prompt = sys.stdin.read()
    with open(os.environ["STANDIN_LOG"], "a") as fh:
        fh.write(json.dumps({"tool": tool, "argv": sys.argv[1:]}) + "\n")
    if os.environ.get("STANDIN_KILL") == tool:
        os.kill(os.getppid(), signal.SIGKILL)
        return 1
    body = json.dumps({"prompt": prompt, "model": tool}).encode()
    request = urllib.request.Request(
        os.environ["FAILOVER_SIM_URL"] + "/http/complete",
        data=body,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = json.loads(response.read())["text"]
    if tool == "claude":
        print(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": False,
                    "result": text,
                    "num_turns": 1,
                    "total_cost_usd": 0.001,
                    "usage": {"input_tokens": 5, "output_tokens": 3},
                }
            )
        )
    elif tool == "codex":
        for event in (
            {"type": "thread.started", "thread_id": "t-1"},
            {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": text}},
            {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 3}},
        ):
            print(json.dumps(event))
    else:
        print(json.dumps({"session_id": "s", "response": text, "stats": {"models": {}}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

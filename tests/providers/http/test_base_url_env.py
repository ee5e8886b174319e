"""Base URLs from the environment, as the official SDKs read them (issue 17, item 7): an
explicit ``base_url=`` wins, then the vendor's variable, then the vendor's own URL; and
``failover simulate`` prints the ``export`` lines that run unchanged code against it."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from orchestrator import FallbackAgent
from providers import AnthropicMessages, GeminiGenerate, OpenAIChat
from providers.simulator import SimulatedServer

ROOT = Path(__file__).resolve().parents[3]
BASE_URL_VARS = (
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_BASE_URL",
)
CASES: list[tuple[Any, str, str]] = [
    (OpenAIChat, "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    (AnthropicMessages, "ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    (GeminiGenerate, "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
    (GeminiGenerate, "GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
]


@pytest.fixture(autouse=True)
def _no_base_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in BASE_URL_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(("vendor", "var", "default"), CASES)
def test_given_then_environment_then_vendor_default(
    monkeypatch: pytest.MonkeyPatch, vendor: Any, var: str, default: str
) -> None:
    assert vendor("m").base_url == default
    monkeypatch.setenv(var, "")  # empty counts as unset
    assert vendor("m").base_url == default
    monkeypatch.setenv(var, "https://gateway.example/v9/")
    assert vendor("m").base_url == "https://gateway.example/v9"
    assert vendor("m", base_url="https://given.example").base_url == "https://given.example"


def test_gemini_reads_googles_sdk_variable_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_BASE_URL", "https://second.example")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "https://first.example")
    assert GeminiGenerate("m").base_url == "https://first.example"


def test_a_bad_url_in_the_environment_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway.example/v1?key=sk-leak-0123456789")
    with pytest.raises(ValueError, match=r"^OPENAI_BASE_URL \(from the environment\)=") as info:
        OpenAIChat("m")
    assert "sk-leak" not in str(info.value)
    allowed = OpenAIChat("m", allow_insecure_http=True)  # the provider's own opt-in applies
    assert allowed.base_url.startswith("http://gateway.example/v1")


async def test_unchanged_code_reaches_the_server_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, simulated_server: SimulatedServer
) -> None:
    for var, value in simulated_server.environment().items():
        monkeypatch.setenv(var, value)
    for vendor, route in ((OpenAIChat, "openai"), (AnthropicMessages, "anthropic")):
        result = await FallbackAgent([vendor("sim-model")]).run("hi")
        assert result.text.startswith(f"sim-{route}: hi")
    assert (await FallbackAgent([GeminiGenerate("sim-model")]).run("hi")).text
    counts = [simulated_server.count(r) for r in ("openai", "anthropic", "gemini")]
    assert counts == [1, 1, 1]


def test_failover_simulate_prints_the_export_lines_that_run_a_snippet_unchanged(
    tmp_path: Path,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "providers.simulator", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        stdout = proc.stdout
        assert stdout is not None
        env = {k: v for k, v in os.environ.items() if k not in BASE_URL_VARS}
        wanted = {*BASE_URL_VARS, "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"}
        exported: set[str] = set()
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in stdout], daemon=True).start()
        while not wanted <= exported:
            try:
                line = lines.get(timeout=10)  # the server prints everything at once
            except queue.Empty:
                break
            if line.startswith("  export "):
                var, _, value = line.removeprefix("  export ").strip().partition("=")
                env[var] = value
                exported.add(var)
        assert wanted <= exported
        snippet = (
            "from orchestrator import FallbackAgent\n"
            "from providers import AnthropicMessages, GeminiGenerate, OpenAIChat\n"
            "models = [OpenAIChat('gpt-5.4-mini'), AnthropicMessages('claude-sonnet-4-6'),\n"
            "          GeminiGenerate('gemini-2.5-flash')]\n"
            "for model in models:\n"
            "    print(FallbackAgent([model]).run_sync('hi').text)\n"
        )
        run = subprocess.run(
            [sys.executable, "-c", snippet], cwd=tmp_path, env=env, capture_output=True, timeout=60
        )
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        assert run.stdout.decode().splitlines() == [
            "sim-openai: hi",
            "sim-anthropic: hi",
            "sim-gemini: hi",
        ]
    finally:
        proc.terminate()
        proc.wait(timeout=10)

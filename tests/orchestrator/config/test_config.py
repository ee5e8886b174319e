"""The chain file, happy paths: YAML and TOML build the objects Python code builds."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator import FallbackAgent, RetryPolicy
from orchestrator.config import Config, ConfigError, load_config
from orchestrator.workflow import Parallel, Step, Workflow
from providers import (
    AnthropicMessages,
    ClaudeCode,
    CLIAgent,
    Codex,
    FunctionProvider,
    GeminiCLI,
    GeminiGenerate,
    HTTPFallback,
    OpenAIChat,
)
from providers.simulator import Fault, SimulatedServer

HOOKS = """
calls = []

def answer(request):
    return "answer: " + request.prompt

async def broken(request):
    raise RuntimeError("down")

def notify(frm, to, error):
    calls.append(("fallback", frm, to, type(error).__name__))

def on_retry(name, attempt, error, delay):
    calls.append(("retry", name, attempt))

def long_enough(result):
    return len(result.text) > 3

def parse(output):
    return output.stdout.strip()
"""


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[str]:
    """A hooks module next to the chain file, under a name unique to the test."""
    name = f"chainhooks_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(HOOKS)
    yield name
    sys.modules.pop(name, None)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


ALL_TYPES_YAML = """
providers:
  codex:
    type: openai
    model: gpt-4o-mini
    base_url: ${SIM_URL}/openai/v1
    api_key: ${OPENAI_API_KEY}
    price: [0.15, 0.6]
    timeout: 5
    max_tokens_param: max_completion_tokens
  claude:
    type: anthropic
    model: claude-sonnet-4-5
    api_key: ${ANTHROPIC_API_KEY}
    max_tokens: 512
    max_retries: 1
  gemini:
    type: gemini
    model: gemini-2.5-flash
    api_key: ${GEMINI_API_KEY:-}
  hook:
    type: http
    url: https://llm.internal.example/complete
    headers: {Authorization: "Bearer ${INTERNAL_TOKEN}"}
  fn:
    type: function
    path: {hooks}:answer
  claude-cli:
    type: claude_code
    model: sonnet
    max_turns: 2
    idle_timeout: 30
  codex-cli:
    type: codex
    model: gpt-5-codex
  gemini-cli:
    type: gemini_cli
    model: gemini-2.5-pro
  mytool:
    type: cli
    argv: [mytool, --json]
    parse: {hooks}:parse
agents:
  review:
    providers:
      - codex
      - {ref: claude, retry_strategy: linear}
      - gemini
    max_retries: 2
    retry_delay: 0.5
    max_delay: 4
    timeout: 30
    attempt_timeout: 10
    on_fallback: {hooks}:notify
    on_retry: {hooks}:on_retry
    accept: {hooks}:long_enough
    retry_on: ["orchestrator.errors:InvalidOutput"]
  local:
    providers: [fn, hook, claude-cli, codex-cli, gemini-cli, mytool]
  outer:
    providers: [{agent: review}, local]
    max_retries: 0
workflows:
  release:
    phases:
      - name: Review
        parallel: true
        limit: 2
        steps:
          - {name: review, agent: review, prompt: "Review: {input}"}
          - {name: local, agent: local}
      - name: Summary
        steps:
          - {name: summary, agent: outer, prompt: "Summarise: {review.text}", continue_on_error: true}
"""

ENV = {
    "SIM_URL": "http://127.0.0.1:9",
    "OPENAI_API_KEY": "sk-env-openai-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-env-0123456789",
    "INTERNAL_TOKEN": "tok-0123456789",
}


def test_yaml_builds_every_provider_type_agent_and_workflow(tmp_path: Path, hooks: str) -> None:
    path = write(tmp_path, "chain.yaml", ALL_TYPES_YAML.replace("{hooks}", hooks))
    config = load_config(path, environ=ENV)

    p = config.providers
    assert isinstance(p["codex"], OpenAIChat)
    assert p["codex"].name == "codex"
    assert p["codex"].base_url == "http://127.0.0.1:9/openai/v1"
    assert p["codex"].price == (0.15, 0.6)
    assert p["codex"].timeout == 5.0
    assert isinstance(p["claude"], AnthropicMessages)
    assert isinstance(p["gemini"], GeminiGenerate)
    assert isinstance(p["hook"], HTTPFallback)
    assert isinstance(p["fn"], FunctionProvider)
    assert isinstance(p["claude-cli"], ClaudeCode)
    assert isinstance(p["codex-cli"], Codex)
    assert isinstance(p["gemini-cli"], GeminiCLI)
    assert type(p["mytool"]) is CLIAgent
    assert p["mytool"].argv == ("mytool", "--json")
    assert config.provider_types["claude-cli"] == "claude_code"

    review = config.agents["review"]
    assert isinstance(review, FallbackAgent)
    assert [c.name for c in review.children] == ["codex", "claude", "gemini"]
    assert review.children[0] is p["codex"]  # the same object every agent uses
    assert review.policy == RetryPolicy(max_retries=2, delay=0.5, max_delay=4)
    # claude: agent defaults < provider's max_retries: 1 < the reference's strategy
    assert review.policies[1] == RetryPolicy(
        max_retries=1, strategy="linear", delay=0.5, max_delay=4
    )
    assert review.policies[0] == review.policies[2] == review.policy
    assert review.timeout == 30.0 and review.attempt_timeout == 10.0
    hooks_module = sys.modules[hooks]
    assert review.on_fallback is hooks_module.notify
    assert review.accept is hooks_module.long_enough

    outer = config.agents["outer"]
    assert outer.children[0] is review and outer.children[1] is config.agents["local"]

    flow = config.workflows["release"]
    assert isinstance(flow, Workflow) and flow.name == "release"
    first, second = flow.phases
    assert isinstance(first.nodes[0], Parallel) and first.nodes[0].limit == 2
    summary = second.nodes[0]
    assert isinstance(summary, Step) and summary.node is outer and summary.continue_on_error


def test_secrets_are_wrapped_and_never_printed(tmp_path: Path, hooks: str) -> None:
    path = write(tmp_path, "chain.yaml", ALL_TYPES_YAML.replace("{hooks}", hooks))
    config = load_config(path, environ=ENV)
    shown = repr(config) + "".join(repr(x) for x in config.providers.values())
    shown += "".join(repr(a) for a in config.agents.values())
    for value in ENV.values():
        if "sk-" in value or "tok-" in value:
            assert value not in shown
    assert config.providers["claude"].api_key().reveal() == ENV["ANTHROPIC_API_KEY"]


TOML = """
[providers.codex]
type = "openai"
model = "gpt-4o-mini"
base_url = "${SIM_URL}/openai/v1"
api_key = "${OPENAI_API_KEY}"

[providers.claude]
type = "anthropic"
model = "claude-sonnet-4-5"
api_key = "${ANTHROPIC_API_KEY}"
max_retries = 1

[providers.fn]
type = "function"
path = "{hooks}:answer"

[agents.review]
providers = ["codex", { ref = "claude", retry_strategy = "linear" }, "fn"]
max_retries = 2
retry_delay = 0.5
max_delay = 4
on_fallback = "{hooks}:notify"

[[workflows.release.phases]]
name = "Review"
[[workflows.release.phases.steps]]
name = "review"
agent = "review"
prompt = "Review: {input}"
"""


def test_toml_builds_the_same_objects(tmp_path: Path, hooks: str) -> None:
    config = load_config(write(tmp_path, "chain.toml", TOML.replace("{hooks}", hooks)), environ=ENV)
    review = config.agents["review"]
    assert [c.name for c in review.children] == ["codex", "claude", "fn"]
    assert review.policy == RetryPolicy(max_retries=2, delay=0.5, max_delay=4)
    assert review.policies[1] == RetryPolicy(
        max_retries=1, strategy="linear", delay=0.5, max_delay=4
    )
    assert review.on_fallback is sys.modules[hooks].notify
    assert list(config.workflows) == ["release"]


def test_function_chain_runs_with_hooks_by_dotted_path(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yml",
        f"""
        providers:
          broken: {{type: function, path: "{hooks}:broken"}}
          fn: {{type: function, path: "{hooks}:answer"}}
        agents:
          only:
            providers: [broken, fn]
            max_retries: 1
            retry_strategy: none
            on_fallback: {hooks}:notify
            on_retry: {hooks}:on_retry
        """,
    )
    result = load_config(path).agent().run_sync("hello")
    assert result.text == "answer: hello"
    assert result.handled_by == "fn"
    assert [(a.agent, a.attempt_number) for a in result.attempts] == [
        ("broken", 1),
        ("broken", 2),
        ("fn", 1),
    ]
    assert sys.modules[hooks].calls == [
        ("retry", "broken", 1),
        ("fallback", "broken", "fn", "RuntimeError"),
    ]


def test_env_expansion_defaults_and_escapes(tmp_path: Path, hooks: str) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        f"""
        providers:
          fn: {{type: function, path: "{hooks}:answer"}}
        agents:
          a:
            providers: [fn]
            max_retries: ${{RETRIES:-3}}
            retry_delay: ${{DELAY}}
        workflows:
          w:
            phases:
              - name: P
                steps: [{{name: s, agent: a, prompt: "cost is $${{input}} {{input}}"}}]
        """,
    )
    config = load_config(path, environ={"DELAY": "0.25"})
    assert config.agents["a"].policy == RetryPolicy(max_retries=3, delay=0.25)
    step = config.workflows["w"].phases[0].nodes[0]
    assert step.prompt == "cost is ${input} {input}"
    config = load_config(path, environ={"DELAY": "0.25", "RETRIES": "0"})
    assert config.agents["a"].policy.max_retries == 0


def test_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "empty.yaml", "# nothing yet\n"))
    assert config.agents == {} and config.providers == {} and config.workflows == {}
    with pytest.raises(KeyError, match="declares 0 agents"):
        config.agent()


async def test_http_providers_from_a_file_fail_over_against_the_simulator(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "chain.yaml",
        """
        providers:
          codex: {type: openai, model: gpt-4o-mini, base_url: "${SIM}/openai/v1", api_key: "${K}"}
          claude: {type: anthropic, model: claude-x, base_url: "${SIM}/anthropic", api_key: "${K}"}
          gemini: {type: gemini, model: gemini-x, base_url: "${SIM}/gemini", api_key: "${K}"}
          plain: {type: http, url: "${SIM}/http/complete"}
        agents:
          review:
            providers: [codex, claude, gemini, plain]
            max_retries: 1
            retry_delay: 0.01
        """,
    )
    async with SimulatedServer() as sim:
        sim.script("openai", [Fault.status(503), Fault.status(503)])
        sim.script("anthropic", [Fault.auth()])
        config = load_config(path, environ={"SIM": sim.url, "K": "dummy-key"})
        result = await config.agent("review").run("ping")
        assert result.handled_by == "gemini"
        assert result.text.startswith("sim-gemini")
        assert (sim.count("openai"), sim.count("anthropic"), sim.count("gemini")) == (2, 1, 1)
        for route in ("openai", "anthropic", "gemini"):
            sim.set_default(route, Fault.model_not_found())
        result = await config.agent("review").run("ping")
        assert result.handled_by == "plain"


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)
    assert Config.__name__ == "Config"


def test_max_response_bytes_reaches_the_http_providers(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "chain.toml",
        """
        [providers.o]
        type = "openai"
        model = "m"
        max_response_bytes = 1_048_576

        [providers.a]
        type = "anthropic"
        model = "m"

        [providers.h]
        type = "http"
        url = "http://127.0.0.1:9/x"
        max_response_bytes = 4096
        """,
    )
    p = load_config(path, environ=ENV).providers
    assert p["o"].max_response_bytes == 1_048_576
    assert p["a"].max_response_bytes == 32 * 1024 * 1024  # the default
    assert p["h"].max_response_bytes == 4096

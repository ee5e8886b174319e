"""The chain file's schema as pydantic models (unknown keys are errors).

These models only validate shapes and values; ``_config_build`` turns them
into providers, ``FallbackAgent`` s and workflows and checks references.

Numbers and booleans are strict: ``max_retries: true``, ``retry_delay: "0.5"``
or ``allow_insecure_http: "yes"`` are errors, not silently converted. The one
exception is a value that came from ``${VAR}`` expansion (an :class:`EnvStr`):
the environment only holds strings, so ``timeout: ${OPENAI_TIMEOUT}`` with
``OPENAI_TIMEOUT=30`` is converted.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

from orchestrator.config.env import EnvStr

__all__ = [
    "AgentSpec",
    "ChildSpec",
    "FileSpec",
    "POLICY_FIELDS",
    "PROVIDER_TYPES",
    "PhaseSpec",
    "ProviderSpec",
    "StepSpec",
    "WorkflowSpec",
]

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def _env_number(value: Any) -> Any:
    """A number written in the environment (``EnvStr``) becomes an int or a float."""
    if not isinstance(value, EnvStr):
        return value
    text = value.strip()
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return value


def _env_bool(value: Any) -> Any:
    """``true``/``false`` (yes/no, on/off, 1/0) from the environment become a bool."""
    if isinstance(value, EnvStr):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return value


ImportPath = Annotated[str, Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")]
Name = Annotated[str, Field(min_length=1)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0), BeforeValidator(_env_number)]
PositiveInt = Annotated[int, Strict(), Field(gt=0), BeforeValidator(_env_number)]
NonNegativeFloat = Annotated[float, Strict(), Field(ge=0), BeforeValidator(_env_number)]
PositiveFloat = Annotated[float, Strict(), Field(gt=0), BeforeValidator(_env_number)]
Flag = Annotated[bool, Strict(), BeforeValidator(_env_bool)]
Price = tuple[NonNegativeFloat, NonNegativeFloat]

#: Chain-file policy keys (on agents, providers and references) and their RetryPolicy names.
POLICY_FIELDS = {
    "max_retries": "max_retries",
    "retry_strategy": "strategy",
    "retry_delay": "delay",
    "max_delay": "max_delay",
    "jitter": "jitter",
}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Policy(_Spec):
    max_retries: NonNegativeInt | None = None
    retry_strategy: Literal["exponential", "linear", "none"] | None = None
    retry_delay: NonNegativeFloat | None = None
    max_delay: NonNegativeFloat | None = None
    jitter: Literal["full"] | None = None

    def policy_overrides(self) -> dict[str, Any]:
        """The policy keys set here, under their RetryPolicy names."""
        return {
            POLICY_FIELDS[k]: getattr(self, k)
            for k in POLICY_FIELDS
            if getattr(self, k) is not None
        }


class _Vendor(_Policy):
    model: Name
    base_url: str | None = None
    api_key: str | None = None
    timeout: PositiveFloat | None = None
    max_response_bytes: PositiveInt | None = None
    price: Price | None = None
    headers: dict[str, str] | None = None
    allow_insecure_http: Flag = False


class OpenAISpec(_Vendor):
    type: Literal["openai"]
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None


class AnthropicSpec(_Vendor):
    type: Literal["anthropic"]
    max_tokens: PositiveInt | None = None
    anthropic_version: str | None = None


class GeminiSpec(_Vendor):
    type: Literal["gemini"]


class HTTPSpec(_Policy):
    type: Literal["http"]
    url: str
    headers: dict[str, str] | None = None
    timeout: PositiveFloat | None = None
    max_response_bytes: PositiveInt | None = None
    price: Price | None = None
    allow_insecure_http: Flag = False


class FunctionSpec(_Policy):
    type: Literal["function"]
    path: ImportPath
    run_in_thread: Flag = True


class _CLISpec(_Policy):
    timeout: PositiveFloat | None = None
    idle_timeout: PositiveFloat | None = None
    cwd: str | None = None
    env: dict[str, str | None] | None = None
    max_output_bytes: PositiveInt | None = None
    classify: ImportPath | None = None


class _AgentCLISpec(_CLISpec):
    model: str | None = None
    base_url: str | None = None
    extra_args: list[str] | None = None
    executable: str | None = None


class ClaudeCodeSpec(_AgentCLISpec):
    type: Literal["claude_code"]
    max_turns: PositiveInt | None = None
    system_prompt: str | None = None
    output_format: Literal["json", "stream-json"] | None = None


class CodexSpec(_AgentCLISpec):
    type: Literal["codex"]
    api_key_env: str | None = None


class GeminiCLISpec(_AgentCLISpec):
    type: Literal["gemini_cli"]
    skip_trust: Flag | None = None
    settings_dir: str | None = None


class CommandSpec(_CLISpec):
    type: Literal["cli"]
    argv: Annotated[list[str], Field(min_length=1)]
    parse: ImportPath | None = None


ProviderSpec = Annotated[
    OpenAISpec
    | AnthropicSpec
    | GeminiSpec
    | HTTPSpec
    | FunctionSpec
    | ClaudeCodeSpec
    | CodexSpec
    | GeminiCLISpec
    | CommandSpec,
    Field(discriminator="type"),
]

PROVIDER_TYPES = (
    "openai",
    "anthropic",
    "gemini",
    "http",
    "claude_code",
    "codex",
    "gemini_cli",
    "cli",
    "function",
)


class ChildSpec(_Policy):
    """One entry of an agent's ``providers``: a name, ``{ref: name, ...}`` or ``{agent: name}``."""

    ref: Name | None = None
    agent: Name | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"ref": data}
        if not isinstance(data, dict):
            raise ValueError(
                f"{data!r} is not a provider name or a mapping like "
                "{ref: NAME, max_retries: 1} or {agent: NAME}"
            )
        return data

    @model_validator(mode="after")
    def _one_target(self) -> ChildSpec:
        if (self.ref is None) == (self.agent is None):
            raise ValueError(
                "give exactly one of ref: PROVIDER_OR_AGENT or agent: AGENT"
                if self.ref is None
                else "ref and agent are both set; keep one"
            )
        return self

    @property
    def target(self) -> str:
        return self.ref if self.ref is not None else str(self.agent)


class AgentSpec(_Policy):
    providers: Annotated[list[ChildSpec], Field(min_length=1)]
    timeout: PositiveFloat | None = None
    attempt_timeout: PositiveFloat | None = None
    schema_retries: NonNegativeInt | None = None
    mid_stream: Literal["raise", "continue"] = "raise"
    escalate_on_guardrail: Flag = False
    health: Flag = False
    retry_on: list[ImportPath] | None = None
    fallback_on: list[ImportPath] | None = None
    on_fallback: ImportPath | None = None
    on_retry: ImportPath | None = None
    on_all_failed: ImportPath | None = None
    before_fallback: ImportPath | None = None
    accept: ImportPath | None = None
    best_effort: ImportPath | None = None


class StepSpec(_Spec):
    name: Name
    agent: Name
    prompt: str | None = None
    continue_on_error: Flag = False


class PhaseSpec(_Spec):
    name: Name
    steps: Annotated[list[StepSpec], Field(min_length=1)]
    parallel: Flag = False
    limit: PositiveInt | None = None


class WorkflowSpec(_Spec):
    phases: Annotated[list[PhaseSpec], Field(min_length=1)]


class FileSpec(_Spec):
    providers: dict[Name, ProviderSpec] = Field(default_factory=dict)
    agents: dict[Name, AgentSpec] = Field(default_factory=dict)
    workflows: dict[Name, WorkflowSpec] = Field(default_factory=dict)

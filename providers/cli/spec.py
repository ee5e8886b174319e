"""The chain file's coding-agent types: ``claude_code``, ``codex``, ``gemini_cli`` and ``cli``.

Each spec validates its entry and builds the provider from it; ``classify``
and ``parse`` name functions (``"package.module:function"``) imported from
where the chain file lives.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator

from orchestrator.config.spec import (
    POLICY_FIELDS,
    BuildContext,
    Flag,
    ImportPath,
    PositiveFloat,
    PositiveInt,
    ProviderSpec,
    given,
    value_problem,
)
from providers.cli.agents import ENV_NAME, AgentOptions, CLIAgent
from providers.cli.presets import ClaudeCode, Codex, GeminiCLI

__all__ = ["ClaudeCodeSpec", "CodexSpec", "CommandSpec", "GeminiCLISpec"]

#: The keys every CLI type shares, passed to the constructor under the same names
#: (``classify``, a hook path in the file, is resolved first; ``retry_policy`` is the
#: file's policy keys, which the agent builds).
_COMMON = tuple(k for k in AgentOptions.__annotations__ if k not in ("classify", "retry_policy"))


class _CLISpec(ProviderSpec):
    timeout: PositiveFloat | None = None
    idle_timeout: PositiveFloat | None = None
    cwd: str | None = None
    env: dict[str, str | None] | None = None
    max_output_bytes: PositiveInt | None = None
    classify: ImportPath | None = None

    def common_kwargs(self, ctx: BuildContext) -> dict[str, Any]:
        """The keyword arguments every CLI provider takes, as the file set them."""
        classify = None if self.classify is None else ctx.hook("classify", self.classify)
        return given(classify=classify, **{k: getattr(self, k) for k in _COMMON})


class _AgentCLISpec(_CLISpec):
    #: The provider class this type builds, from its own keys and the common ones.
    provider: ClassVar[type[CLIAgent]]

    model: str | None = None
    base_url: str | None = None
    extra_args: list[str] | None = None
    executable: str | None = None

    def own_kwargs(self) -> dict[str, Any]:
        """This type's own keys (not the policy or the common ones), as the file set them."""
        common = {"type", "classify", *_COMMON, *POLICY_FIELDS}
        return self.model_dump(exclude=common, exclude_none=True)

    def build(self, ctx: BuildContext) -> CLIAgent:
        return self.provider(name=ctx.name, **self.own_kwargs(), **self.common_kwargs(ctx))


class ClaudeCodeSpec(_AgentCLISpec):
    """``type: claude_code``: a :class:`ClaudeCode`."""

    order = 50
    provider = ClaudeCode
    type: Literal["claude_code"]
    max_turns: PositiveInt | None = None
    system_prompt: str | None = None
    output_format: Literal["json", "stream-json"] | None = None


class CodexSpec(_AgentCLISpec):
    """``type: codex``: a :class:`Codex`."""

    order = 60
    provider = Codex
    type: Literal["codex"]
    api_key_env: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.fullmatch(value):
            raise value_problem("must be an environment variable name")
        return value


class GeminiCLISpec(_AgentCLISpec):
    """``type: gemini_cli``: a :class:`GeminiCLI`."""

    order = 70
    provider = GeminiCLI
    type: Literal["gemini_cli"]
    skip_trust: Flag | None = None
    settings_dir: str | None = None


class CommandSpec(_CLISpec):
    """``type: cli``: any command, a :class:`CLIAgent`."""

    order = 80
    type: Literal["cli"]
    argv: Annotated[list[str], Field(min_length=1)]
    parse: ImportPath | None = None

    def build(self, ctx: BuildContext) -> CLIAgent:
        parse = None if self.parse is None else ctx.hook("parse", self.parse)
        return CLIAgent(self.argv, name=ctx.name, **given(parse=parse), **self.common_kwargs(ctx))

"""The coding-agent CLIs as ready-made providers: ``ClaudeCode``, ``Codex``, ``GeminiCLI``.

Each adds its tool's argv to :class:`~providers.cli.agents.CLIAgent`, reads its
structured output, and switches off its own retries (retries happen in one
layer: ours). Given a ``model`` the catalogue knows, served by the vendor's own
API, a reply's usage is priced (:mod:`providers.http.catalogue`) unless the
tool reports its cost itself (claude does). Besides its own keywords each takes
``name`` and the :class:`~providers.cli.agents.AgentOptions` (``cwd``, ``env``, ``timeout``,
``idle_timeout``, ``max_output_bytes``, ``classify``), passed on to ``CLIAgent``.
Switching retries off:

- claude: ``CLAUDE_CODE_MAX_RETRIES=0`` in the child's environment.
- codex: a model provider defined on the command line with
  ``request_max_retries=0`` and ``stream_max_retries=0`` (built-in providers
  ignore overrides, so Codex always uses its own provider entry).
- gemini: ``general.maxAttempts=1`` in a system settings file passed through
  ``GEMINI_CLI_SYSTEM_SETTINGS_PATH`` (it also caps mid-stream retries).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, Unpack

from orchestrator.errors import ProviderError
from orchestrator.types import Request, Response
from providers.cli.agents import ENV_NAME, AgentOptions, CLIAgent, render_prompt
from providers.cli.classify import Redactor
from providers.cli.formats import (
    classify_claude,
    classify_codex,
    classify_gemini,
    parse_claude,
    parse_codex,
    parse_gemini,
)
from providers.cli.gemini_settings import gemini_settings_file
from providers.cli.process import CLIOutput
from providers.http.catalogue import vendor_rates

__all__ = ["ClaudeCode", "Codex", "GeminiCLI"]


class ClaudeCode(CLIAgent):
    """Anthropic's ``claude`` agent: ``claude -p --output-format json``.

    Classified from the JSON result (``is_error``, ``api_error_status``)
    first, the exit status last. ``CLAUDE_CODE_MAX_RETRIES=0`` stops the CLI
    retrying on its own. ``output_format="stream-json"`` prints events as
    they happen, which makes ``idle_timeout`` meaningful for long runs (plain
    ``json`` prints nothing until the end). ``request.system`` is appended to
    the agent's system prompt; ``system_prompt=`` replaces it.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        max_turns: int | None = None,
        system_prompt: str | None = None,
        base_url: str | None = None,
        output_format: Literal["json", "stream-json"] = "json",
        extra_args: Sequence[str] = (),
        executable: str = "claude",
        name: str = "claude-code",
        **options: Unpack[AgentOptions],
    ) -> None:
        if max_turns is not None and (not isinstance(max_turns, int) or max_turns < 1):
            raise ValueError(f"ClaudeCode.max_turns: {max_turns!r} must be an int >= 1")
        if output_format not in ("json", "stream-json"):
            raise ValueError(
                f"ClaudeCode.output_format: {output_format!r} is not one of json, stream-json"
            )
        argv = [executable, "-p", "--output-format", output_format]
        if output_format == "stream-json":
            argv.append("--verbose")  # the CLI requires it for stream-json with -p
        if model:
            argv += ["--model", model]
        if max_turns is not None:
            argv += ["--max-turns", str(max_turns)]
        if system_prompt:
            argv += ["--system-prompt", system_prompt]
        super().__init__([*argv, *extra_args], name=name, **options)
        self.model = model
        self.base_url = base_url
        self.rates = vendor_rates("anthropic", model, base_url)

    def _switches(self) -> dict[str, str]:
        env = {"CLAUDE_CODE_MAX_RETRIES": "0"}
        if self.base_url:
            env["ANTHROPIC_BASE_URL"] = self.base_url
        return env

    def build_argv(self, request: Request) -> list[str]:
        argv = list(self.argv)
        if request.system:
            argv += ["--append-system-prompt", request.system]
        return argv

    def build_stdin(self, request: Request) -> str:
        return render_prompt(request, include_system=False)

    def _structured_error(self, out: CLIOutput, redact: Redactor) -> ProviderError | None:
        return classify_claude(out, self.name, redact)

    def _parse_output(self, out: CLIOutput) -> Response | str:
        return parse_claude(out)


class Codex(CLIAgent):
    """OpenAI's ``codex`` agent: ``codex exec --json``, prompt on stdin (``-``).

    Talks to ``base_url`` (default ``https://api.openai.com/v1``) through the
    Responses API with the key from ``$api_key_env``, using a provider entry
    defined on the command line so its retries can be switched off (codex
    ignores overrides of its built-in ``openai`` provider). ChatGPT-login
    (non-API-key) use is not covered by this entry: pass your own
    ``extra_args`` for that.
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str = "OPENAI_API_KEY",
        extra_args: Sequence[str] = (),
        executable: str = "codex",
        name: str = "codex",
        **options: Unpack[AgentOptions],
    ) -> None:
        if not ENV_NAME.fullmatch(api_key_env):
            raise ValueError(
                f"Codex.api_key_env: {api_key_env!r} must be an environment variable name"
            )
        pid = "failover"
        cfg = {
            "model_provider": f'"{pid}"',
            f"model_providers.{pid}.name": '"failover-orchestrator"',
            f"model_providers.{pid}.base_url": _toml_str(base_url),
            f"model_providers.{pid}.env_key": _toml_str(api_key_env),
            f"model_providers.{pid}.wire_api": '"responses"',
            f"model_providers.{pid}.request_max_retries": "0",
            f"model_providers.{pid}.stream_max_retries": "0",
        }
        argv = [executable, "exec", "--json", "--skip-git-repo-check", "--ephemeral"]
        argv += ["--color", "never"]
        for key, value in cfg.items():
            argv += ["-c", f"{key}={value}"]
        if model:
            argv += ["-m", model]
        super().__init__([*argv, *extra_args, "-"], name=name, **options)
        self.model = model
        self.base_url = base_url
        self.rates = vendor_rates("openai", model, base_url)

    def _structured_error(self, out: CLIOutput, redact: Redactor) -> ProviderError | None:
        return classify_codex(out, self.name, redact)

    def _parse_output(self, out: CLIOutput) -> Response | str:
        return parse_codex(out)


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class GeminiCLI(CLIAgent):
    """Google's ``gemini`` agent: ``gemini --output-format json -p ""`` with the prompt on stdin.

    Its retries are switched off with ``general.maxAttempts=1`` in a system
    settings file (merged over the existing one) written under
    ``settings_dir`` (default ``~/.cache/failover-orchestrator``): gemini
    refuses settings files whose directories are writable by others, so not
    under ``/tmp``. ``base_url`` sets ``GOOGLE_GEMINI_BASE_URL`` and selects
    API-key auth. ``skip_trust=True`` trusts the working directory (headless
    gemini refuses to run in an untrusted folder).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        skip_trust: bool = False,
        settings_dir: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        executable: str = "gemini",
        name: str = "gemini-cli",
        **options: Unpack[AgentOptions],
    ) -> None:
        argv = [executable, "--output-format", "json"]
        if model:
            argv += ["-m", model]
        if skip_trust:
            argv.append("--skip-trust")
        super().__init__([*argv, *extra_args, "-p", ""], name=name, **options)
        self.model = model
        self.base_url = base_url
        self.settings_dir = settings_dir
        self.rates = vendor_rates("gemini", model, base_url)

    def _switches(self) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": self.base_url} if self.base_url else {}

    def child_env(self) -> dict[str, str]:
        env = super().child_env()
        settings: dict[str, object] = {"general": {"maxAttempts": 1}}
        if self.base_url:
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        # Our file replaces a user-given system settings path, whose content it merges.
        env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = gemini_settings_file(
            settings,
            directory=self.settings_dir,
            merge_from=env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH"),
        )
        return env

    def _structured_error(self, out: CLIOutput, redact: Redactor) -> ProviderError | None:
        return classify_gemini(out, self.name, redact)

    def _parse_output(self, out: CLIOutput) -> Response | str:
        return parse_gemini(out)

"""A coding-agent command-line tool (or any other command) as a provider: :class:`CLIAgent`.

A :class:`CLIAgent` runs one subprocess per call with the prompt on stdin, in
its own process group, under an overall ``timeout`` and an ``idle_timeout``
(no output for that long); either kills the whole group and is a
``ProviderTimeout``. A missing binary is ``NotInstalled`` before anything
runs. Cancelling the awaiting task kills the group too. Errors the CLI
prints (auth, quota, rate limit, overload, prompt too long) map to the
taxonomy like HTTP errors; an unrecognised failure is a ``TransientError``
naming the exit status and the end of stderr (redacted: never the prompt,
never an environment value). The presets for claude, codex and gemini are in
:mod:`providers.cli.presets`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TypedDict

from orchestrator.errors import InvalidOutput, NotInstalled, ProviderError, ResponseTooLarge
from orchestrator.keywords import KeywordChecked
from orchestrator.policy import RetryPolicy, retry_policy_or_none
from orchestrator.types import Request, Response
from orchestrator.units import Seconds, seconds, seconds_or_none
from providers.cli.classify import Redactor, classify_exit, clip
from providers.cli.process import CLIOutput, run_process
from providers.http.catalogue import Rates
from providers.http.redact import Redacted

__all__ = [
    "ENV_NAME",
    "AgentOptions",
    "CLIAgent",
    "CLIOutput",
    "ClassifyFn",
    "ParseFn",
    "Seconds",
    "render_prompt",
]

ParseFn = Callable[[CLIOutput], Response | str]
ClassifyFn = Callable[[CLIOutput], ProviderError | None]

#: What an environment variable's name may be (``Codex.api_key_env``).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.I)
_INSTALL_HINTS = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
}


def render_prompt(request: Request, *, include_system: bool = True) -> str:
    """The text sent on stdin: the prompt alone, or a labelled transcript for many messages."""
    system = request.system if include_system else None
    msgs = request.messages
    if not system and len(msgs) == 1 and msgs[0].role == "user":
        return msgs[0].content
    parts = [f"System: {system}"] if system else []
    parts += [f"{m.role.capitalize()}: {m.content}" for m in msgs]
    return "\n\n".join(parts)


class AgentOptions(TypedDict, total=False):
    """The keyword arguments the ready-made agents (``ClaudeCode``, ``Codex``,
    ``GeminiCLI``) pass on to :class:`CLIAgent` (see it for defaults and meaning)."""

    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str | None] | None
    timeout: Seconds
    idle_timeout: Seconds | None
    max_output_bytes: int
    classify: ClassifyFn | None
    retry_policy: RetryPolicy | None


class CLIAgent(KeywordChecked):
    """Any command-line agent that reads a prompt on stdin and prints its answer.

    ``argv`` is the command (``argv[0]`` looked up on ``PATH``). ``parse``
    turns a successful run's :class:`CLIOutput` into a ``Response`` (or the
    answer text); by default stdout, stripped, is the answer. ``classify``
    may return the taxonomy error a run represents (None: use the default,
    which maps a non-zero exit by its messages). ``env`` is merged over this
    process's environment (a ``None`` value removes a variable). Output past
    ``max_output_bytes`` is read and dropped, and the call is ``ResponseTooLarge``
    (an ``InvalidOutput`` that falls over at once, as an HTTP reply over
    ``max_response_bytes`` does): a cut answer is never passed on as if it were whole.
    ``rates`` price a reply's usage when the tool reports no cost of its own.
    A CLI agent cannot take the caller's tools (``supports_tools`` is false): a
    request with tools skips it without starting the process.
    """

    rates: Rates | None = None
    #: The engine skips a provider that cannot take a request's tools (ToolsUnsupported).
    supports_tools = False

    def __init__(
        self,
        argv: Sequence[str],
        *,
        parse: ParseFn | None = None,
        name: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        timeout: Seconds = 600.0,
        idle_timeout: Seconds | None = None,
        max_output_bytes: int = 4_000_000,
        classify: ClassifyFn | None = None,
        kill_grace: Seconds = 2.0,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError(
                f"CLIAgent.argv: expected a non-empty list of str, got {argv!r}; "
                "split the command, e.g. ['mytool', '--json']"
            )
        if not isinstance(max_output_bytes, int) or max_output_bytes < 1:
            raise ValueError(f"CLIAgent.max_output_bytes: {max_output_bytes!r} must be an int >= 1")
        self.argv: tuple[str, ...] = tuple(argv)
        self.name = name or os.path.basename(argv[0])
        self.cwd = cwd
        self.env: dict[str, str | None] = dict(env or {})
        self.timeout = seconds(timeout, "CLIAgent.timeout")
        self.idle_timeout = seconds_or_none(idle_timeout, "CLIAgent.idle_timeout")
        self.kill_grace = seconds(kill_grace, "CLIAgent.kill_grace")
        self.max_output_bytes = max_output_bytes
        self._parse = parse
        self._classify = classify
        self.retry_policy = retry_policy_or_none(retry_policy, type(self).__name__)

    def __repr__(self) -> str:
        # Never the env values (they may hold keys); the argv is the user's own command.
        return f"{type(self).__name__}(name={self.name!r}, executable={self.argv[0]!r})"

    # --- hooks for the tool-specific subclasses ----------------------------------------

    def _switches(self) -> dict[str, str]:
        """Environment this tool needs (retry switches); the user's ``env`` may override."""
        return {}

    def build_argv(self, request: Request) -> list[str]:
        """The command for ``request`` (argv[0] not yet resolved)."""
        return list(self.argv)

    def build_stdin(self, request: Request) -> str:
        """The text written to the child's stdin."""
        return render_prompt(request)

    def _structured_error(self, out: CLIOutput, redact: Redactor) -> ProviderError | None:
        return None

    def _parse_output(self, out: CLIOutput) -> Response | str:
        if self._parse is not None:
            return self._parse(out)
        text = out.stdout.strip()
        if not text:
            raise ValueError("stdout is empty")
        return text

    # --- the call ----------------------------------------------------------------------

    def child_env(self) -> dict[str, str]:
        """The child's environment: ours, then the tool's switches, then ``env=``."""
        merged: dict[str, str | None] = {**os.environ, **self._switches(), **self.env}
        return {k: v for k, v in merged.items() if v is not None}

    def _resolve(self, exe: str, env: Mapping[str, str]) -> str:
        found = shutil.which(exe, path=env.get("PATH"))
        if found is None:
            hint = _INSTALL_HINTS.get(os.path.basename(exe))
            raise NotInstalled(
                f"executable {exe!r} not found on PATH; install it"
                + (f" ({hint})" if hint else "")
                + " or pass its full path",
                provider=self.name,
            )
        return found

    async def complete(self, request: Request) -> Response:
        """Run the agent once on ``request``; every failure is a taxonomy error."""
        env = self.child_env()
        argv = self.build_argv(request)
        exe = self._resolve(argv[0], env)
        prompt = self.build_stdin(request)
        secrets = [v for k, v in env.items() if k in self.env or _SECRET_NAME.search(k)]
        redact = Redactor(secrets, prompt)
        out = await run_process(
            [exe, *argv[1:]],
            stdin=prompt.encode("utf-8"),
            provider=self.name,
            cwd=self.cwd,
            env=env,
            timeout=self.timeout,
            idle_timeout=self.idle_timeout,
            max_output_bytes=self.max_output_bytes,
            kill_grace=self.kill_grace or 2.0,
        )
        return self.interpret(out, redact)

    def interpret(self, out: CLIOutput, redact: Redactor | None = None) -> Response:
        """The Response of a finished run, or raise its taxonomy error."""
        redact = redact or Redactor()
        if out.stdout_truncated:
            raise ResponseTooLarge(
                f"stdout exceeded max_output_bytes={self.max_output_bytes} (the agent wrote "
                f"{out.stdout_bytes} bytes, exit status {out.returncode}); raise "
                "max_output_bytes or ask for a shorter answer",
                provider=self.name,
            )
        err = self._classify(out) if self._classify is not None else None
        err = err or self._structured_error(out, redact)
        err = err or classify_exit(
            out.returncode, out.stderr, out.stdout, provider=self.name, redact=redact
        )
        if err is not None:
            if err.provider is None:
                err.provider = self.name
            raise err
        failure: InvalidOutput | None = None
        try:
            result = self._parse_output(out)
        except ProviderError:
            raise
        except Exception as exc:
            # Described, not chained: a JSONDecodeError's .doc is the whole stdout.
            why = f"{type(exc).__name__}: {clip(redact(str(exc)), 200)}"
            failure = InvalidOutput(f"unreadable output: {why}", provider=self.name)
            failure.__cause__ = Redacted(why)
        if failure is not None:
            raise failure  # not in the except block, where exc would be the context
        response = Response(text=result) if isinstance(result, str) else result
        if response.cost_usd is None and response.usage is not None and self.rates is not None:
            response = replace(response, cost_usd=self.rates.cost(response.usage))
        return response

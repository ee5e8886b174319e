"""CLIAgent process supervision, with stand-in executables (always run, no npm needed)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from orchestrator.errors import (
    GuardrailTriggered,
    InvalidOutput,
    NotInstalled,
    ProviderTimeout,
    RateLimited,
    ResponseTooLarge,
    TransientError,
)
from orchestrator.types import Request, Response
from providers.cli import CLIAgent, CLIOutput

from .conftest_cli import STANDIN, alive, reaped, wait_dead, wait_file


def agent(*args: str, **kw: object) -> CLIAgent:
    return CLIAgent([STANDIN, *args], name="standin", **kw)  # type: ignore[arg-type]


async def test_prompt_goes_in_on_stdin_and_stdout_is_the_answer() -> None:
    resp = await agent("echo").complete(Request("hello there"))
    assert resp == Response(text="hello there")


async def test_a_large_prompt_does_not_deadlock() -> None:
    prompt = "y" * 1_500_000  # far beyond a pipe buffer, in and out at once
    resp = await agent("echo").complete(Request(prompt))
    assert len(resp.text) == len(prompt)


async def test_a_child_that_ignores_its_stdin_is_fine() -> None:
    resp = await agent("no-stdin").complete(Request("z" * 1_000_000))
    assert resp.text == "ok"


async def test_missing_binary_is_not_installed_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def forbidden(*a: object, **k: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(asyncio, "create_subprocess_exec", forbidden)
    with pytest.raises(NotInstalled) as info:
        await CLIAgent(["no-such-agent-binary-xyz"]).complete(Request("hi"))
    assert "no-such-agent-binary-xyz" in str(info.value)
    assert info.value.provider == "no-such-agent-binary-xyz"


async def test_known_tools_get_an_install_hint() -> None:
    with pytest.raises(NotInstalled, match="npm install -g @openai/codex"):
        await CLIAgent(["codex"], env={"PATH": "/nonexistent"}).complete(Request("hi"))


async def test_idle_timeout_kills_a_silent_agent() -> None:
    start = time.monotonic()
    with pytest.raises(ProviderTimeout, match=r"idle_timeout=0.5") as info:
        await agent("silent", "60", idle_timeout=0.5).complete(Request("hi"))
    assert time.monotonic() - start < 5
    assert info.value.kind == "transient"


async def test_output_keeps_an_agent_alive_until_the_overall_timeout() -> None:
    start = time.monotonic()
    # Idle limit well above interpreter start-up on a loaded machine; output every 50 ms.
    with pytest.raises(ProviderTimeout, match=r"\(timeout=3\)"):
        await agent("trickle", "60", "0.05", timeout=3.0, idle_timeout=1.5).complete(Request("hi"))
    assert 2.9 < time.monotonic() - start < 8


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    with pytest.raises(ProviderTimeout):
        await agent("spawn", str(pidfile), idle_timeout=1.0).complete(Request("hi"))
    leader, grandchild = map(int, pidfile.read_text().split())
    assert await wait_dead(grandchild), "the grandchild outlived the kill"
    assert not alive(leader)
    assert reaped(leader), "the leader was left a zombie"


async def test_sigterm_is_followed_by_sigkill_after_the_grace(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    start = time.monotonic()
    with pytest.raises(ProviderTimeout):
        await agent("ignore-term", str(pidfile), idle_timeout=0.5, kill_grace=0.3).complete(
            Request("hi")
        )
    assert time.monotonic() - start < 4
    assert await wait_dead(int(pidfile.read_text()))


async def test_background_helpers_do_not_outlive_a_normal_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    resp = await agent("background", str(pidfile)).complete(Request("hi"))
    assert resp.text == "ok"
    assert await wait_dead(int(pidfile.read_text()))


async def test_cancellation_kills_the_group_and_leaves_no_zombie(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    task = asyncio.create_task(agent("spawn", str(pidfile)).complete(Request("hi")))
    leader, grandchild = map(int, (await wait_file(pidfile)).split())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The cleanup was awaited before CancelledError reached us: the leader is reaped now.
    assert not alive(leader) and reaped(leader)
    assert await wait_dead(grandchild)


async def test_an_outer_timeout_cancels_cleanly(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1.0):
            await agent("spawn", str(pidfile)).complete(Request("hi"))
    leader, grandchild = map(int, pidfile.read_text().split())
    assert reaped(leader)
    assert await wait_dead(grandchild)


async def test_a_cancellation_during_the_clean_up_after_a_timeout_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The idle timeout fires, the group is killed, ProviderTimeout is on its way out, and
    # the caller is cancelled (a TaskGroup, an outer timeout) while the clean-up runs:
    # the caller must see CancelledError, not carry on with a retryable ProviderTimeout.
    from providers.cli import process as _cli_process

    real = _cli_process._kill_group
    callers: list[asyncio.Task[object] | None] = []

    async def kill_group(proc: asyncio.subprocess.Process, grace: float) -> None:
        callers.append(asyncio.current_task())
        if len(callers) == 2:  # the clean-up pass: cancel the caller of complete()
            outer = callers[0]
            assert outer is not None
            outer.cancel()
        await real(proc, grace)

    monkeypatch.setattr(_cli_process, "_kill_group", kill_group)
    with pytest.raises(asyncio.CancelledError):
        await agent("silent", "60", idle_timeout=0.3).complete(Request("hi"))
    assert len(callers) == 2


async def test_kill_group_does_not_lose_a_cancellation_that_races_the_exit() -> None:
    # Python 3.11's asyncio.wait_for returns the result when the awaited thing finishes in
    # the same loop iteration as the caller is cancelled, dropping the cancellation.
    from providers.cli import process as _cli_process

    exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Proc:
        pid = 2**22 + 12345  # no such process group: the signals are no-ops
        returncode = None

        def wait(self) -> asyncio.Future[int]:
            return exited

    killing = asyncio.create_task(_cli_process._kill_group(Proc(), 5.0))  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)  # now waiting out the grace
    exited.set_result(0)  # the child exits on SIGTERM...
    killing.cancel()  # ...in the same iteration as the caller is cancelled
    with pytest.raises(asyncio.CancelledError):
        await killing


async def test_output_over_the_cap_is_invalid_output_and_fully_drained() -> None:
    start = time.monotonic()
    with pytest.raises(InvalidOutput, match="max_output_bytes=1000") as info:
        await agent("flood", "3000000", max_output_bytes=1000).complete(Request("hi"))
    # The child was not blocked on a full pipe: it wrote everything and exited.
    assert "3000000 bytes" in str(info.value)
    # The same size rule as the HTTP providers' max_response_bytes: falls over, no retry.
    assert type(info.value) is ResponseTooLarge
    assert time.monotonic() - start < 10


async def test_unknown_failure_is_transient_with_exit_status_and_stderr_tail() -> None:
    with pytest.raises(TransientError) as info:
        await agent("fail", "3", "something odd happened").complete(Request("hi"))
    assert type(info.value) is TransientError
    assert "exited with status 3" in str(info.value)
    assert "something odd happened" in str(info.value)


async def test_stderr_tail_is_clipped_to_about_300_chars() -> None:
    message = "A" * 1000 + "THE END"
    with pytest.raises(TransientError) as info:
        await agent("fail", "1", message).complete(Request("hi"))
    assert "THE END" in str(info.value)
    assert len(str(info.value)) < 400


async def test_errors_never_carry_the_prompt_or_env_values() -> None:
    prompt = "my very private prompt text, do not leak"
    secret = "sk-test-0123456789abcdef"
    message = f"failed on input {prompt!r} using key {secret}"
    with pytest.raises(TransientError) as info:
        await agent("fail", "1", message, env={"SOME_TOKEN": secret}).complete(Request(prompt))
    text = f"{info.value} {info.value!r}"
    assert prompt not in text and secret not in text
    assert "<prompt>" in text and "***" in text


async def test_rate_limit_message_maps_to_rate_limited_with_retry_after() -> None:
    with pytest.raises(RateLimited) as info:
        await agent("fail", "1", "Error: 429 Too Many Requests; try again in 3s").complete(
            Request("hi")
        )
    assert info.value.retry_after == 3.0
    assert info.value.status == 429


async def test_env_is_merged_over_ours_and_none_removes() -> None:
    os.environ["FAILOVER_TEST_INHERITED"] = "inherited"
    try:
        resp = await agent(
            "env",
            "FAILOVER_TEST_INHERITED",
            "FOO",
            "HOME",
            env={"FOO": "bar", "HOME": None},
        ).complete(Request("hi"))
    finally:
        del os.environ["FAILOVER_TEST_INHERITED"]
    assert json.loads(resp.text) == {
        "FAILOVER_TEST_INHERITED": "inherited",
        "FOO": "bar",
        "HOME": None,
    }


async def test_cwd_is_used(tmp_path: Path) -> None:
    cli = CLIAgent(["python3", "-c", "import os; print(os.getcwd())"], cwd=tmp_path)
    resp = await cli.complete(Request("hi"))
    assert Path(resp.text) == tmp_path


async def test_custom_parse_and_its_failures() -> None:
    upper = CLIAgent([STANDIN, "echo"], parse=lambda out: out.stdout.upper())
    assert (await upper.complete(Request("abc"))).text == "ABC"

    def strict(out: CLIOutput) -> Response:
        return Response(text=json.loads(out.stdout)["answer"])

    with pytest.raises(InvalidOutput, match="JSONDecodeError"):
        await CLIAgent([STANDIN, "echo"], parse=strict).complete(Request("not json"))


async def test_empty_stdout_is_invalid_output() -> None:
    with pytest.raises(InvalidOutput, match="stdout is empty"):
        await agent("silent", "0").complete(Request("hi"))


async def test_custom_classify_comes_first_and_gets_the_provider_name() -> None:
    def refuse(out: CLIOutput) -> GuardrailTriggered | None:
        return GuardrailTriggered("refused") if "REFUSE" in out.stdout else None

    cli = agent("echo", classify=refuse)
    with pytest.raises(GuardrailTriggered) as info:
        await cli.complete(Request("REFUSE this"))
    assert info.value.provider == "standin"
    assert (await cli.complete(Request("fine"))).text == "fine"


def test_multi_message_requests_are_rendered_as_a_transcript() -> None:
    from providers.cli import render_prompt

    req = Request(
        messages=[{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}],
        prompt="Q2",
        system="Be brief.",
    )
    assert render_prompt(req) == "System: Be brief.\n\nUser: Q1\n\nAssistant: A1\n\nUser: Q2"
    assert render_prompt(Request("just this")) == "just this"


def test_constructor_validation_and_repr() -> None:
    with pytest.raises(TypeError, match=r"CLIAgent.argv"):
        CLIAgent("claude -p")
    with pytest.raises(ValueError, match=r"CLIAgent.timeout"):
        CLIAgent(["x"], timeout=0)
    with pytest.raises(ValueError, match=r"CLIAgent.max_output_bytes"):
        CLIAgent(["x"], max_output_bytes=0)
    cli = CLIAgent(["x"], timeout=timedelta(minutes=2), env={"API_KEY": "sk-secret-value"})
    assert cli.timeout == 120.0
    assert "sk-secret-value" not in repr(cli)
    assert repr(cli) == "CLIAgent(name='x', executable='x')"

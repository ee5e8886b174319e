"""The installed ``failover`` console script, as a user runs it: real processes and signals."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

FAILOVER = Path(sys.executable).parent / "failover"

pytestmark = pytest.mark.skipif(
    not FAILOVER.exists(), reason="console script not installed: run .venv/bin/pip install -e ."
)


def test_installed_script_runs_a_chain_from_stdin(tmp_path: Path) -> None:
    (tmp_path / "procmod.py").write_text("def shout(request):\n    return request.prompt.upper()\n")
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n  fn: {type: function, path: 'procmod:shout'}\nagents:\n  a:\n    providers: [fn]\n"
    )
    done = subprocess.run(
        [str(FAILOVER), "run", str(path), "-"],
        input="quiet please\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path.parent,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "QUIET PLEASE\n", "")


def test_demo_exits_0_and_names_who_answered() -> None:
    started = time.monotonic()
    done = subprocess.run([str(FAILOVER), "demo"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "answered by gemini" in out  # the review chain after codex 503s and claude 529s
    assert "fallback  codex -> claude after ServerError 503" in out
    assert "fallback  claude -> gemini after Overloaded 529" in out
    assert "answered by claude-opus" in out
    assert "answered by openai-eu-west" in out
    assert "\x1b[" not in out  # not a terminal: plain lines
    assert time.monotonic() - started < 30


def _sigint_default() -> None:
    """In the child: Ctrl-C as a terminal delivers it. A test runner started in the
    background (``cmd &``) ignores SIGINT, and children inherit that: the command would
    never see the signal these tests send."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(
    proc: subprocess.Popen[str], ready: Callable[[], None], *, timeout: float
) -> tuple[str, str]:
    """Once ``ready()`` returns, SIGINT ``proc`` and collect (stdout, stderr); the process
    is killed if it is still running when anything failed on the way."""
    try:
        ready()
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigint_exits_130(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    (tmp_path / "hangmod.py").write_text(
        textwrap.dedent(
            f"""
            import asyncio, pathlib

            async def hang(request):
                pathlib.Path({str(marker)!r}).write_text("x")
                await asyncio.sleep(120)
                return "too late"
            """
        )
    )
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n  slow: {type: function, path: 'hangmod:hang'}\nagents:\n  a:\n    providers: [slow]\n"
    )
    proc = subprocess.Popen(
        [str(FAILOVER), "run", str(path), "hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_default,
    )

    def provider_called() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the provider was never called"
            time.sleep(0.05)

    out, err = _interrupt(proc, provider_called, timeout=30)
    assert proc.returncode == 130, err
    assert out == ""
    assert err.strip().endswith("failover: interrupted")


def _interrupt_during_start_up(path: Path, delay: float) -> tuple[int, str, str]:
    """Start ``failover run``, wait until Python runs the script, SIGINT ``delay`` s later."""
    # -X importtime reports each import on stderr as it finishes: the line for the
    # script's entry module says our code is running (Python's own start-up before it,
    # site and .pth files, is not ours to handle: a traceback there is CPython's).
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", str(FAILOVER), "run", str(path), "hi"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=path.parent,
        preexec_fn=_sigint_default,
    )
    assert proc.stderr is not None
    stderr = proc.stderr
    seen: list[str] = []

    def script_running_for_delay() -> None:
        while not (seen and seen[-1].split("|")[-1].strip() == "orchestrator.__main__"):
            line = stderr.readline()
            assert line, "".join(seen)[-2000:]
            seen.append(line)
        time.sleep(delay)

    out, err = _interrupt(proc, script_running_for_delay, timeout=60)
    return proc.returncode, out, "".join(seen) + err


def test_sigint_at_any_moment_of_start_up_exits_quietly(tmp_path: Path) -> None:
    (tmp_path / "quickmod.py").write_text("def ok(request):\n    return 'ok'\n")
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n  fn: {type: function, path: 'quickmod:ok'}\nagents:\n  a:\n    providers: [fn]\n"
    )
    outcomes = []
    for i in range(24):  # 0 .. 300 ms after the script starts: imports, config, the run
        code, out, err = _interrupt_during_start_up(path, 0.3 * i / 23)
        assert "Traceback" not in err, err[-3000:]
        # 130 may come after the answer was printed (Ctrl-C while asyncio winds down).
        assert code in (0, 130) and out in ("", "ok\n"), (code, out, err[-500:])
        assert code == 130 or out == "ok\n"
        if code == 130:
            assert err.endswith("failover: interrupted\n")
        outcomes.append(code)
    assert outcomes.count(130) >= 6  # many signals land while it starts, not after it ended


# What the script pip writes does between importing its entry and calling it, with a
# Ctrl-C landing in between (the window the test above can only hit by chance).
_CTRL_C_BEFORE_MAIN = (
    "import os, signal, sys\n"
    "sys.argv = ['failover', '--version']\n"
    "from orchestrator._entry import main\n"
    "os.kill(os.getpid(), signal.SIGINT)\n"
    "sys.exit(main())\n"
)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    ("preexec", "expected"),
    [
        (_sigint_default, (130, "", "failover: interrupted\n")),  # held, then raised in main
        (_ignore_sigint, (0, "failover", "")),  # the parent's "ignore" still holds: it runs
    ],
)
def test_a_ctrl_c_before_the_entry_runs_is_held_until_main_catches_it(
    preexec: Callable[[], None], expected: tuple[int, str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_BEFORE_MAIN],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=preexec,
    )
    printed = done.stdout.rsplit(" ", 1)[0]  # "failover 1.2.3\n": the name, not the version
    assert (done.returncode, printed, done.stderr) == expected

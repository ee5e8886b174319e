"""``failover`` commands from the ``failover.commands`` entry-point group, and its tables."""

from __future__ import annotations

import argparse
import io
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from orchestrator.cli import main, plugins
from orchestrator.cli.tables import Tables


class _Hello:
    """A plug-in command as a third-party package would write it."""

    help = "say hello"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--loud", action="store_true")

    def run(self, args: argparse.Namespace) -> int:
        text = f"hello {args.name}"
        print(text.upper() if args.loud else text)
        return 7


HELLO = _Hello()
NOT_A_COMMAND = object()


def _installed(monkeypatch: pytest.MonkeyPatch, **points: str) -> None:
    found = [EntryPoint(name, value, plugins.GROUP) for name, value in points.items()]
    monkeypatch.setattr(
        plugins, "entry_points", lambda group: found if group == plugins.GROUP else []
    )


def test_the_providers_package_declares_demo_and_simulate() -> None:
    commands, problems = plugins.load_commands()
    assert problems == []
    assert set(commands) >= {"demo", "simulate"}


def test_a_plugin_command_gets_its_own_parser_and_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(monkeypatch, hello=f"{__name__}:HELLO")
    assert main(["hello", "world", "--loud"]) == 7  # options after positionals, as for run
    assert capsys.readouterr().out == "HELLO WORLD\n"
    assert main(["hello"]) == 2
    assert "the following arguments are required: name" in capsys.readouterr().err


def test_without_plugins_the_cli_says_where_demo_comes_from(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(monkeypatch)
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'demo'" in err
    assert "no plug-in commands are installed" in err and "'failover.commands'" in err
    assert main(["--help"]) == 0
    assert "no plug-in commands are installed" in capsys.readouterr().out


def test_a_broken_plugin_is_reported_and_the_rest_still_works(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(
        monkeypatch,
        gone="no_such_module_xyz:command",
        odd=f"{__name__}:NOT_A_COMMAND",
        hello=f"{__name__}:HELLO",
    )
    assert main(["hello", "you"]) == 7
    out = capsys.readouterr()
    assert out.out == "hello you\n"
    assert "failover: warning: command gone = 'no_such_module_xyz:command'" in out.err
    assert "ModuleNotFoundError" in out.err
    assert "command odd = " in out.err and "is not a Command" in out.err


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    (tmp_path / "tablemod.py").write_text(
        "def down(request):\n    raise ConnectionError('refused')\n\n"
        "def fn(request):\n    return 'answer'\n"
    )
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n"
        "  down: {type: function, path: 'tablemod:down'}\n"
        "  fn: {type: function, path: 'tablemod:fn'}\n"
        "agents:\n  a: {providers: [down, fn], retry_strategy: none}\n"
    )
    sys.path.insert(0, str(tmp_path))
    yield path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("tablemod", None)


def test_check_rich_renders_a_table(chain: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(chain), "--rich"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"ok: {chain}"
    assert lines[1].split() == ["declares", "name", "detail"]
    assert [line.split() for line in lines[2:]] == [
        ["provider", "down", "function"],
        ["provider", "fn", "function"],
        ["agent", "a", "down", "->", "fn"],
    ]


def test_run_rich_prints_the_attempts_on_stderr(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "hi", "--rich"]) == 0
    out = capsys.readouterr()
    assert out.out == "answer\n"  # stdout keeps only the answer
    rows = [line.split() for line in out.err.splitlines()]
    assert rows[0] == ["attempts"]
    assert rows[1] == ["provider", "try", "outcome", "ms", "cost"]
    assert rows[2][:4] == ["down", "1", "ConnectionError", "(error)"]
    assert rows[-1][:3] == ["fn", "1", "ok"]


def test_without_a_terminal_output_stays_plain(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "hi"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["run", str(chain), "hi", "--rich", "--plain"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_tables_follow_the_terminal_and_fall_back_without_rich(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Tables(file=Terminal()).rich
    assert not Tables(file=io.StringIO()).rich
    assert not Tables("plain", file=Terminal()).rich
    monkeypatch.setitem(sys.modules, "rich", None)  # the extra is not installed
    plain = Tables("rich", file=Terminal())
    assert not plain.rich
    plain.table(("a", "bb"), [("xyz", "1")])
    assert plain.file.getvalue() == "a    bb\nxyz  1\n"  # type: ignore[attr-defined]


def test_a_plugin_cannot_replace_a_builtin_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(monkeypatch, run=f"{__name__}:HELLO")
    assert main(["run", "world.yaml"]) == 2  # the built-in run: no such chain file
    err = capsys.readouterr().err
    assert "world.yaml: no such file" in err
    assert "failover: warning: plug-in command 'run' ignored: run is built in" in err

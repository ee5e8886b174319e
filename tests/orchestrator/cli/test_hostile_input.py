"""Prompts that cannot be sent as they are: lone surrogates, and stdin without end.

The library refuses text that is not valid Unicode when a Request is built
(before any provider is asked); the CLI, which reads bytes a user piped in,
decodes them with U+FFFD replacement and caps how much it reads.
"""

from __future__ import annotations

import io
import sys
from enum import Enum
from pathlib import Path

import pytest

from orchestrator import FallbackAgent, Message, Request
from orchestrator.cli.main import MAX_STDIN_BYTES, main
from providers import FunctionProvider
from tests.conftest import hooks_module, write_chain

# -- the library: refused once, where a Request's text is validated ---------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: Request("caf\udce9"),  # what surrogateescape makes of a Latin-1 byte
        lambda: Request(
            messages=[{"role": "user", "content": "ok"}, {"role": "user", "content": "\ud800"}]
        ),
        lambda: Request("ok", system="be \udfff"),
        lambda: Message("assistant", "x\udc80"),
        lambda: Request("ok").replace(prompt="\udcff"),
    ],
)
def test_lone_surrogates_are_refused_when_the_request_is_built(build: object) -> None:
    with pytest.raises(ValueError, match=r"lone surrogate U\+D[89A-F][0-9A-F]{2} at index \d+"):
        build()  # type: ignore[operator]


class _Lookalike(Enum):
    """Not text, yet it answers ``isascii`` (found in review: a system prompt of this kind
    reached orjson, which writes an Enum by its value, once a plain body skipped its proof)."""

    A = "hi"

    def isascii(self) -> bool:
        return True


@pytest.mark.parametrize(
    "build",
    [
        lambda: Request("ok", system=_Lookalike.A),
        lambda: Request("ok", system=b"bytes"),
        lambda: Message("user", _Lookalike.A),
    ],
)
def test_text_that_is_not_a_str_is_refused_when_the_request_is_built(build: object) -> None:
    with pytest.raises(TypeError, match=r"(Request\.system|Message\.content): expected str, got"):
        build()  # type: ignore[operator]


def test_valid_unicode_of_every_width_is_accepted() -> None:
    text = "plain ascii, café, 東京, emoji \U0001f600, replacement \ufffd"
    assert Request(text, system=text).prompt == text


async def test_a_prompt_with_a_lone_surrogate_never_reaches_a_provider() -> None:
    calls: list[Request] = []

    def fn(request: Request) -> str:
        calls.append(request)
        return "sent"

    with pytest.raises(ValueError, match="lone surrogate"):
        await FallbackAgent([FunctionProvider(fn)]).run("bad \udcff bytes")
    assert calls == []


# -- the CLI: bytes in, U+FFFD out; stdin capped ----------------------------------------


@pytest.fixture
def echo_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    mod = hooks_module(
        tmp_path, "echohooks", "def echo(request):\n    return repr(request.prompt)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return write_chain(
        tmp_path,
        f"""
        providers:
          fn: {{type: function, path: "{mod}:echo"}}
        agents:
          a: {{providers: [fn]}}
        """,
    )


class CountingBytes(io.BytesIO):
    """stdin's binary buffer, remembering how many bytes were asked of it."""

    taken = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self.taken += len(data)
        return data


def fake_stdin(data: bytes) -> tuple[io.TextIOWrapper, CountingBytes]:
    raw = CountingBytes(data)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape"), raw


def test_undecodable_stdin_bytes_become_replacement_characters(
    echo_chain: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin, _ = fake_stdin(b"caf\xe9 \xff ok\n")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["run", str(echo_chain), "-"]) == 0
    assert capsys.readouterr().out == "'caf\ufffd \ufffd ok'\n"


def test_undecodable_argv_bytes_become_replacement_characters(
    echo_chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # sys.argv holds undecodable bytes as lone surrogates (os.fsdecode, surrogateescape).
    assert main(["run", str(echo_chain), "caf\udce9!"]) == 0
    assert capsys.readouterr().out == "'caf\ufffd!'\n"


def test_stdin_beyond_the_cap_is_refused_without_reading_it_all(
    echo_chain: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin, raw = fake_stdin(b"a" * (MAX_STDIN_BYTES + 4096))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["run", str(echo_chain), "-"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"failover: error: stdin holds more than {MAX_STDIN_BYTES} bytes (8 MiB); "
        "pass a shorter prompt (or a summary of it)\n"
    )
    assert raw.taken <= MAX_STDIN_BYTES + 1


def test_stdin_at_the_cap_is_accepted(
    echo_chain: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin, _ = fake_stdin(b"b" * MAX_STDIN_BYTES)
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["run", str(echo_chain), "-"]) == 0
    assert len(capsys.readouterr().out) == MAX_STDIN_BYTES + 3  # quotes and newline


def test_a_reply_that_cannot_be_encoded_is_printed_with_replacements(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Valid JSON may carry a lone surrogate ("\ud800") into Result.text; printing it to a
    # strict UTF-8 stdout used to end the command with a UnicodeEncodeError traceback.
    mod = hooks_module(
        tmp_path, "surrogatehooks", "def reply(request):\n    return 'ok \\ud800 end'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    chain = write_chain(
        tmp_path,
        f'providers:\n  fn: {{type: function, path: "{mod}:reply"}}\nagents:\n  a: {{providers: [fn]}}\n',
    )
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["run", str(chain), "hi"]) == 0
    out.flush()
    assert raw.getvalue() == b"ok ? end\n"

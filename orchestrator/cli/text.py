"""What the ``failover`` command reads and writes as text: prompts from argv and stdin, and stdout.

A user piping bytes into a command expects them used, not a traceback, so the
CLI replaces what is not UTF-8 (the library refuses lone surrogates); a prompt on
stdin is capped; an answer stdout cannot encode prints with replacements.
"""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["MAX_STDIN_BYTES", "UsageError", "read_stdin", "readable", "tolerant_stdout"]

# A prompt read from stdin is read up to this size and refused beyond it: 8 MiB is about
# two million tokens, more than any model's context window.
MAX_STDIN_BYTES = 8 << 20


class UsageError(Exception):
    """Bad arguments or input: printed, exit code 2."""


def tolerant_stdout() -> None:
    """Replies are upstream text: one a terminal cannot encode (a lone surrogate from valid
    JSON, an emoji on a Latin-1 console) prints as "?" instead of ending the command."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")


def read_stdin(stdin: TextIO) -> str:
    """stdin as text, at most ``MAX_STDIN_BYTES``; undecodable bytes become U+FFFD."""
    buffer = getattr(stdin, "buffer", None)
    if buffer is not None:
        data: bytes = buffer.read(MAX_STDIN_BYTES + 1)
        size, text = len(data), data.decode("utf-8", errors="replace")
    else:  # a text stream standing in for stdin (embedding, tests)
        text = stdin.read(MAX_STDIN_BYTES + 1)
        size, text = len(text), readable(text)
    if size > MAX_STDIN_BYTES:
        raise UsageError(
            f"stdin holds more than {MAX_STDIN_BYTES} bytes ({MAX_STDIN_BYTES >> 20} MiB); "
            "pass a shorter prompt (or a summary of it)"
        )
    return text


def read_file_text(path: str, what: str) -> str:
    """A file named on the command line (``--input NAME=@PATH``, ``--prompt-file``) as text:
    at most ``MAX_STDIN_BYTES``, undecodable bytes as U+FFFD; ``what`` (the flag and path)
    starts the ``UsageError`` when it cannot be read or is longer."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_STDIN_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(f"{what}: cannot read it ({reason})") from None
    if len(data) > MAX_STDIN_BYTES:
        raise UsageError(f"{what}: more than {MAX_STDIN_BYTES >> 20} MiB")
    return data.decode("utf-8", errors="replace")


def readable(text: str) -> str:
    """Text from argv or a text stream with its undecodable bytes (lone surrogates) as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:  # surrogateescape: the bytes the user gave, so valid UTF-8 parts survive
            raw = text.encode("utf-8", errors="surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", errors="surrogatepass")
        return raw.decode("utf-8", errors="replace")
    return text

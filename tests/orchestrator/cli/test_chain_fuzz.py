"""``failover check`` over 5,000 mutated chain files: a located error or success, never a
traceback (issue 17, item 14: control characters, ``!!timestamp nope`` and 5,000-digit
numbers crashed the CLI with exit 1, which means "every provider failed").

A seeded generator, not hypothesis: the same 5,000 inputs every run, cheap to make. Each
input is a YAML or TOML chain file with a few mutations: bytes flipped, control characters
(also inside comments), YAML tags, tabs, deep nesting, huge and odd numbers, random bytes,
cut pieces.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import random
import traceback
from collections import Counter
from pathlib import Path

import pytest

cli_main = importlib.import_module("orchestrator.cli.main")  # the package's main() hides it

SEEDS = {
    ".yaml": b"""\
# a small chain: two providers, one agent
providers:
  fast:
    type: openai
    model: gpt-sim
    base_url: http://127.0.0.1:9/v1
    api_key: ${OPENAI_API_KEY}
    price: [0.75, 4.50]
    timeout: 60
  slow: {type: anthropic, model: claude-sim, max_retries: 1}
agents:
  main:
    providers: [fast, {ref: slow, retry_strategy: linear}]
    max_retries: 2
    retry_delay: 1.5
""",
    ".toml": b"""\
# a small chain: two providers, one agent
[providers.fast]
type = "openai"
model = "gpt-sim"
base_url = "http://127.0.0.1:9/v1"
api_key = "${OPENAI_API_KEY}"
price = [0.75, 4.50]
timeout = 60

[providers.slow]
type = "anthropic"
model = "claude-sim"
max_retries = 1

[agents.main]
providers = ["fast", { ref = "slow", retry_strategy = "linear" }]
max_retries = 2
retry_delay = 1.5
""",
}
CONTROL = [0x00, 0x01, 0x07, 0x08, 0x0B, 0x0C, 0x1B, 0x7F, 0x85]
TAGS = [b"!!timestamp nope", b"!!timestamp 2001-13-40", b"2001-02-30", b"!!binary x"]
TAGS += [b"!!float nope", b"!!int x", b"!!set {a}", b"!!omap [a]", b"!foo x", b"!!bool maybe"]
TAGS += [b"!!python/object:os.system x", b"&a ", b"*a ", b"*nowhere ", b"<<: *a\n"]
NUMBERS = [b"1e999999", b"-0x" + b"f" * 60, b"0o7777777777777777777777", b".inf", b"nan"]
NUMBERS += [b"1_000", b"0x", b"1e-99999", b"1979-05-27T07:32:00Z", b"-0", b"+.nan"]


def _mutate(rng: random.Random, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(data) + 1)
        kind = rng.randrange(8)
        if kind == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[at:at] = bytes([rng.choice(CONTROL)])
        elif kind == 2:
            data[at:at] = rng.choice(TAGS)
        elif kind == 3:
            data[at:at] = b"\t" * rng.randint(1, 3)
        elif kind == 4:
            depth = rng.choice([3, 63, 64, 65, 300])
            data[at:at] = b"[" * depth + b"]" * rng.choice([0, depth])
        elif kind == 5:
            data[at:at] = rng.choice([*NUMBERS, b"9" * rng.choice([20, 4300, 4301, 6000])])
        elif kind == 6:
            del data[at : at + rng.randint(1, 30)]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    return bytes(data)


def _check(path: Path) -> tuple[int, str]:
    """``failover check PATH`` in this process: the exit code and what went to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli_main.main(["check", str(path)])
    return code, err.getvalue()


def test_5000_mutated_chain_files_give_located_errors_and_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fuzz")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fuzz")
    # Building the argument parser and scanning entry points is 13 ms of every main(): made
    # once here, so 5,000 files take seconds. Each file still goes through main().
    plugins, _ = cli_main.load_commands()
    parser = cli_main._parser(plugins, [])
    monkeypatch.setattr(cli_main, "load_commands", lambda: (plugins, []))
    monkeypatch.setattr(cli_main, "_parser", lambda plugins, problems: parser)
    rng = random.Random(17)
    crashes: Counter[str] = Counter()
    codes: Counter[int] = Counter()
    unlocated: list[str] = []
    for number in range(5000):
        suffix = ".toml" if number % 2 else ".yaml"
        path = tmp_path / f"chain{suffix}"
        path.write_bytes(_mutate(rng, SEEDS[suffix]))
        try:
            code, err = _check(path)
        except BaseException as exc:  # what the user would see as a traceback
            where = traceback.extract_tb(exc.__traceback__)[-1]
            crashes[f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno}"] += 1
            continue
        codes[code] += 1
        if code != 0 and not err.startswith(f"failover: error: {path}"):
            unlocated.append(err[:300])
    assert not crashes, f"{sum(crashes.values())} of 5000 tracebacks: {crashes.most_common()}"
    assert set(codes) <= {0, 2}, codes
    assert not unlocated, unlocated[:5]
    assert codes[2] > 2500  # the mutations mostly break the file: the test reaches the errors


@pytest.mark.parametrize(
    ("suffix", "text", "line", "fix"),
    [
        (".yaml", "# a NUL \x00 in a comment\nproviders: {}\n", 1, "U+0000 at column 9"),
        (".yaml", "providers:\n  p: {type: openai\x01}\n", 2, "not even in a comment; delete it"),
        (".yaml", "providers:\n  p:\n    model: !!timestamp nope\n", 3, "quote it to keep it"),
        (".yaml", "agents:\n  a:\n    timeout: 2001-13-40\n", 3, "timestamp value"),
        (".yaml", "agents:\n  a:\n    max_retries: " + "9" * 5000 + "\n", 3, "int value"),
        (".toml", "[agents.a]\nmax_retries = " + "9" * 5000 + "\n", 2, "number too long"),
    ],
)
def test_each_crash_the_fuzzing_found_is_a_located_error_with_exit_2(
    tmp_path: Path, suffix: str, text: str, line: int, fix: str
) -> None:
    path = tmp_path / f"chain{suffix}"
    path.write_text(text)
    code, err = _check(path)
    assert code == 2
    assert err.startswith(f"failover: error: {path}:{line}: invalid ")
    assert fix in err
    assert "Traceback" not in err

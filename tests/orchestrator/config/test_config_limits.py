"""Hostile chain files: size, nesting and YAML aliases are bounded before any parser recurses.

Each refusal is one located ``ConfigError`` line, reached fast; through the
installed ``failover`` script it is exit 2 with one line on stderr.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import ConfigError
from orchestrator.config.limits import MAX_ALIAS_NODES, MAX_DEPTH, MAX_FILE_BYTES
from orchestrator.config.source import read_source

FAILOVER = Path(sys.executable).parent / "failover"
QUICK = 2.0  # seconds; a refusal takes milliseconds, this leaves room for a loaded machine


def flow_brackets(assign: str) -> str:
    return f"x{assign}" + "[" * 5000 + "]" * 5000 + "\n"


def inline_tables() -> str:
    return "x = " + "{a = " * 5000 + "1" + " }" * 5000 + "\n"


def block_yaml(levels: int = 600) -> str:
    """Block mappings nested by indentation (600 levels: 180 KB, under the size cap)."""
    return "".join(" " * i + "a:\n" for i in range(levels)) + " " * levels + "1\n"


def block_sequences(levels: int = 1200) -> str:
    """Block sequences nested on one line (``- - - 1``): 1,200 levels in 2.4 KB."""
    return "x:\n" + "- " * levels + "1\n"


def billion_laughs() -> str:
    lines = ["a: &a [" + ", ".join(["lol"] * 9) + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def big_file(path: Path) -> None:
    line = "# " + "x" * 98 + "\n"
    with path.open("w") as fh:
        fh.write("providers: {}\n")
        fh.write(line * (50 * 1024 * 1024 // len(line)))


def refused(path: Path) -> ConfigError:
    started = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        read_source(path)
    assert time.perf_counter() - started < QUICK
    assert "\n" not in str(info.value)
    return info.value


CASES: dict[str, tuple[str, Callable[[], str], str, int | None]] = {
    "yaml-flow": ("chain.yaml", lambda: flow_brackets(": "), "nested deeper than", 1),
    "toml-array": ("chain.toml", lambda: flow_brackets(" = "), "nested deeper than", 1),
    "toml-inline": ("chain.toml", inline_tables, "nested deeper than", 1),
    "yaml-block": ("chain.yaml", block_yaml, "nested deeper than", MAX_DEPTH + 1),
    "yaml-block-seq": ("chain.yaml", block_sequences, "nested deeper than", 2),
    "toml-dotted": (
        "chain.toml",
        lambda: ".".join(["a"] * 5000) + " = 1\n",
        "nested deeper than",
        1,
    ),
    "billion-laughs": ("chain.yaml", billion_laughs, "aliases expand to more than", None),
    "alias-cycle": ("chain.yaml", lambda: "providers: &p [1, *p]\n", "contains it", 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_shapes_are_refused_fast_with_a_located_line(tmp_path: Path, case: str) -> None:
    name, make, words, line = CASES[case]
    path = tmp_path / name
    path.write_text(make())
    err = refused(path)
    assert words in str(err)
    assert str(err).startswith(f"{path}:")
    if line is not None:
        assert err.line == line
    else:
        assert err.line is not None and 1 <= err.line <= 9


def test_a_50_mb_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    big_file(path)
    err = refused(path)
    assert str(err) == (
        f"{path}: the file is larger than {MAX_FILE_BYTES} bytes (256 KiB); "
        "a chain file is small: is this the right file?"
    )


def test_just_under_the_limits_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(block_yaml(MAX_DEPTH - 1))
    assert read_source(path).data["a"]["a"]
    toml = tmp_path / "chain.toml"
    toml.write_text("x = " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    x, depth = read_source(toml).data["x"], 1
    while x:
        x, depth = x[0], depth + 1
    assert depth == MAX_DEPTH - 1  # 63 arrays inside the root table: 64 levels
    filler = tmp_path / "full.yaml"
    filler.write_bytes(b"providers: {}\n" + b"#" * (MAX_FILE_BYTES - 15) + b"\n")
    assert read_source(filler).data == {"providers": {}}


def test_ordinary_anchors_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = tmp_path / "chain.yaml"
    path.write_text(
        "providers:\n"
        "  a: &base {type: openai, model: m, timeout: 5}\n"
        "  b: {<<: *base, model: n}\n"
        "  c: *base\n"
    )
    data = read_source(path).data["providers"]
    assert data["b"] == {"type": "openai", "model": "n", "timeout": 5}
    assert data["c"] == data["a"]


def test_brackets_inside_toml_strings_and_comments_are_not_nesting(tmp_path: Path) -> None:
    deep = "[" * 200 + "{" * 200
    path = tmp_path / "chain.toml"
    path.write_text(
        f'a = "{deep}"\n'
        f"b = '{deep}'\n"
        f'c = """\n{deep}\\"""\n"""\n'
        f"d = '''{deep}''''\n"
        f"# {deep}\n"
        f'e = ["\\"{deep}", 1]\n'
    )
    data = read_source(path).data
    assert data["a"] == deep and data["d"] == deep + "'" and data["e"][1] == 1


def test_alias_budget_counts_expansion_not_alias_count(tmp_path: Path) -> None:
    # Many cheap aliases are fine; one alias of a big node used often is not.
    path = tmp_path / "chain.yaml"
    path.write_text("a: &a 1\nb: [" + ", ".join(["*a"] * 2000) + "]\n")
    assert len(read_source(path).data["b"]) == 2000
    big = "{" + ", ".join(f"k{i}: {i}" for i in range(1000)) + "}"
    path.write_text(f"a: &a {big}\nb: [" + ", ".join(["*a"] * 12) + "]\n")
    err = refused(path)
    assert f"aliases expand to more than {MAX_ALIAS_NODES} nodes" in str(err)
    assert err.line == 2


@pytest.mark.skipif(not FAILOVER.exists(), reason="console script not installed")
@pytest.mark.parametrize("case", ["billion-laughs", "toml-array", "yaml-block-seq", "big"])
def test_failover_check_exits_2_with_one_line(tmp_path: Path, case: str) -> None:
    if case == "big":
        path = tmp_path / "chain.yaml"
        big_file(path)
    else:
        name, make, _, _ = CASES[case]
        path = tmp_path / name
        path.write_text(make())
    started = time.monotonic()
    done = subprocess.run(
        [str(FAILOVER), "check", str(path)], capture_output=True, text=True, timeout=60
    )
    assert time.monotonic() - started < 15  # interpreter start-up included, loaded CI
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"failover: error: {path}")

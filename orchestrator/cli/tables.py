"""Tables for ``failover``: rich ones on a terminal when ``rich`` is installed, plain text else.

``Tables(choice)`` decides once (``"rich"``, ``"plain"`` or None for: rich when
stdout is a terminal and the ``rich`` extra is importable) and prints a header
and rows either way, so each command builds its rows once.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from orchestrator.types import Attempt

__all__ = ["ATTEMPT_HEADER", "Tables", "attempt_rows", "plain_table", "rich_available"]

ATTEMPT_HEADER = ("provider", "try", "outcome", "ms", "cost")


def rich_available() -> bool:
    """True when the optional ``rich`` extra is importable."""
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def attempt_rows(attempts: Sequence[Attempt]) -> list[tuple[str, ...]]:
    """One row per attempt under :data:`ATTEMPT_HEADER`: who, which try, how it
    ended (the failure's class and reason), how long and what it cost."""
    return [
        (
            a.agent,
            str(a.attempt_number),
            "ok" if a.ok else f"{a.kind_label()} ({a.reason})",
            f"{a.duration * 1000:.0f}",
            f"${a.cost_usd:.6f}" if a.cost_usd is not None else "",
        )
        for a in attempts
    ]


def plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Aligned plain-text lines; the last column is not padded (it may be long)."""
    last = len(header) - 1
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(last)]
    return [
        "  ".join([*(row[i].ljust(widths[i]) for i in range(last)), row[last]]).rstrip()
        for row in (header, *rows)
    ]


class Tables:
    """Prints tables as ``rich`` renders them or as plain aligned lines."""

    def __init__(self, choice: str | None = None, *, file: TextIO | None = None) -> None:
        out = file if file is not None else sys.stdout
        use_rich = choice == "rich" or (choice is None and out.isatty())
        self.console: Any = None
        if use_rich and rich_available():
            from rich.console import Console

            self.console = Console(file=out, highlight=False)
        self.file = out

    @property
    def rich(self) -> bool:
        """True when tables are rendered by ``rich``."""
        return self.console is not None

    def table(
        self,
        header: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        title: str | None = None,
        styles: Sequence[str | None] = (),
    ) -> None:
        """Print one table; ``styles`` gives each row a rich style (ignored in plain text)."""
        if self.console is None:
            if title:
                print(title, file=self.file)
            for line in plain_table(header, rows):
                print(line, file=self.file)
            return
        from rich.table import Table

        table = Table(title=title, title_justify="left", header_style="bold", box=None)
        for column in header:
            table.add_column(column, overflow="fold")
        for i, row in enumerate(rows):
            table.add_row(*row, style=styles[i] if i < len(styles) else None)
        self.console.print(table)

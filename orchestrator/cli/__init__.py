"""The ``failover`` command (console script ``orchestrator.cli:main``).

``main`` parses and dispatches; ``report`` renders results, attempts and checks.
"""

from __future__ import annotations

from orchestrator.cli.main import main

__all__ = ["main"]

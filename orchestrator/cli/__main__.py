"""``python -m orchestrator.cli``: the ``failover`` command."""

from __future__ import annotations

import sys

from orchestrator.cli.main import main

sys.exit(main())

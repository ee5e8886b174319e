"""``python -m providers.simulator``: run the simulated provider server."""

from __future__ import annotations

import sys

from providers.simulator.command import main

sys.exit(main())

"""``python -m providers.simulated``: run the simulated provider server."""

from __future__ import annotations

import sys

from providers.simulated.command import main

sys.exit(main())

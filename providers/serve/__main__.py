"""``python -m providers.serve CHAIN``: the same as ``failover serve CHAIN``."""

import sys

from providers.serve.command import main

sys.exit(main())

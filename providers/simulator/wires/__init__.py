"""The wire formats the simulated server speaks, one module each (``base`` is what they share)."""

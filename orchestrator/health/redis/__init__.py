"""The Redis health store: circuits and the retry budget shared through Redis (extra ``redis``).

``store`` holds :class:`RedisHealthStore` (re-exported by :mod:`orchestrator.health`);
``link`` the connection and change notices; ``scripts`` the Lua scripts and key layout.
"""

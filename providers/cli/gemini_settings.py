"""The settings file that switches off the gemini CLI's own retries.

gemini reads ``general.maxAttempts`` (1..10, default 10) from its settings;
the system settings file (path in ``GEMINI_CLI_SYSTEM_SETTINGS_PATH``) has
the highest precedence, so a file of ours there wins over user and project
settings. The existing system settings are merged in, so an administrator's
settings still apply. gemini skips a settings file whose directory (or any
parent) is writable by group or others, hence a private directory, not /tmp.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["default_settings_dir", "gemini_settings_file"]

_SYSTEM_DEFAULT = {
    "darwin": "/Library/Application Support/GeminiCli/settings.json",
    "win32": "C:\\ProgramData\\gemini-cli\\settings.json",
}.get(sys.platform, "/etc/gemini-cli/settings.json")


def default_settings_dir() -> Path:
    """``$XDG_CACHE_HOME/failover-orchestrator`` (default ``~/.cache/failover-orchestrator``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "failover-orchestrator"


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_settings(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def gemini_settings_file(
    settings: Mapping[str, Any],
    *,
    directory: str | os.PathLike[str] | None = None,
    merge_from: str | None = None,
) -> str:
    """Write ``settings`` (merged over ``merge_from`` or the system file) and return its path.

    The file name is derived from its content, so concurrent calls write the
    same bytes to the same name; writes are atomic (temp file + rename).
    """
    merged = _merge(_read_settings(merge_from or _SYSTEM_DEFAULT), settings)
    content = json.dumps(merged, indent=2, sort_keys=True) + "\n"
    digest = hashlib.sha256(content.encode()).hexdigest()[:16]
    folder = Path(directory) if directory is not None else default_settings_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"gemini-system-settings-{digest}.json"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gemini-settings-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(content)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return str(path)

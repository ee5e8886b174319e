"""Hooks named in a chain file as ``"package.module:attr"``, imported where the file lives."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path as FsPath
from typing import Any

from orchestrator.config.problems import Path
from orchestrator.config.source import Source

__all__ = ["callable_at", "import_object", "matcher"]


@contextmanager
def _search_path(src: Source) -> Iterator[None]:
    """Let hooks live next to the chain file (or in the working directory)."""
    extra = [str(FsPath(src.file).resolve().parent), os.getcwd()]
    added = [d for d in extra if d not in sys.path]
    sys.path.extend(added)
    try:
        yield
    finally:
        for d in added:
            if d in sys.path:
                sys.path.remove(d)


def import_object(src: Source, path: Path, spec: str) -> Any:
    """The object named by ``"package.module:attr"``; ``ConfigError`` naming the field."""
    module_name, _, attr = spec.partition(":")
    try:
        with _search_path(src):
            obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise src.error(
            path,
            f"cannot import module {module_name!r} for {spec!r} ({exc}); it must be importable "
            "from the chain file's directory, the working directory or the installed packages",
        ) from None
    except Exception as exc:
        raise src.error(
            path, f"importing {module_name!r} for {spec!r} raised {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(obj) if not n.startswith("_"))
            raise src.error(
                path,
                f"{module_name!r} has no {attr!r}; it defines: {', '.join(names[:20]) or '(none)'}",
            )
        obj = getattr(obj, part)
    return obj


def callable_at(src: Source, path: Path, spec: str) -> Callable[..., Any]:
    """The callable named by ``spec``; ``ConfigError`` at ``path`` when it is not one."""
    obj = import_object(src, path, spec)
    if not callable(obj):
        raise src.error(path, f"{spec!r} is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]


def matcher(src: Source, path: Path, objs: list[Any]) -> Any:
    """A list of exception classes becomes a tuple; one predicate is used as is."""
    if all(isinstance(o, type) and issubclass(o, BaseException) for o in objs):
        return tuple(objs)
    if len(objs) == 1 and callable(objs[0]):
        return objs[0]
    raise src.error(
        path, "give exception classes ('orchestrator.errors:ServerError') or one predicate function"
    )

"""A profile hook (``sys.setprofile``) installed for one block, for the tests that count
what a call runs: frames started, generators resumed, functions called."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

Hook = TypeVar("Hook", bound=Callable[[Any, str, Any], object])


@contextmanager
def profiled(hook: Hook) -> Iterator[Hook]:
    """``hook`` as the profile function while the block runs (removed after it, whatever
    happens in it); the block gets the hook back to read its counts."""
    sys.setprofile(hook)
    try:
        yield hook
    finally:
        sys.setprofile(None)

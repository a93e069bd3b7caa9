"""The sync primitives ``_twins_async`` names the async ones of: a lock, a sleep, a
call in its own copy of the context (see there)."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["Lock", "run_in_context", "sleep"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

#: A lock for threads (``AsyncLock``: for one event loop's tasks).
Lock = threading.Lock


def sleep(seconds: float) -> None:
    """Block this thread for ``seconds`` (``asleep``: the task)."""
    time.sleep(seconds)


def run_in_context(
    function: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """``function(*args)`` in its own copy of the context, entered on this thread:
    what it sets in context variables is seen by nothing after it
    (``arun_in_context``: a task's)."""
    return contextvars.copy_context().run(function, *args, **kwargs)

"""What async code does where its sync twin does something else, named once: a
lock, a sleep, a call in its own copy of the context.

The async sources of ``scripts/unasync.py`` call these instead of ``asyncio``
directly; their sync twins call the sync primitives of the same names
(``_twins_sync``: ``AsyncLock`` becomes ``Lock``, ``asleep`` ``sleep``), so no
per-source phrase table has to say so (as httpcore's ``_synchronization``).
Both modules are written by hand; ``scripts/unasync.py`` fails when one has a
name the other lacks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["AsyncLock", "arun_in_context", "asleep"]

_P = ParamSpec("_P")
_T = TypeVar("_T")

#: A lock for one event loop's tasks (``Lock``: for threads).
AsyncLock = asyncio.Lock


async def asleep(seconds: float) -> None:
    """Wait ``seconds`` without blocking the loop (``sleep``: the thread)."""
    await asyncio.sleep(seconds)


async def arun_in_context(
    function: Callable[_P, Coroutine[Any, Any, _T]], *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """``function(*args)`` in its own copy of the context, a task's: what it sets
    in context variables is seen by nothing after it (``run_in_context``: a copy
    entered on this thread)."""
    return await asyncio.create_task(function(*args, **kwargs))

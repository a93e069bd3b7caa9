"""The event loop a framework's sync entry point leaves behind.

pydantic-ai's ``run_sync`` and the Agents SDK's ``Runner.run_sync`` create an event
loop, set it as the thread's and keep it open for the next call; a test closes it
afterwards, or its garbage collection warns (``ResourceWarning``) in a later test.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest

__all__ = ["close_sync_loop", "closes_sync_loop"]


def close_sync_loop() -> None:
    """Close and unset the thread's event loop, if it has one."""
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = policy.get_event_loop()
        except RuntimeError:  # unset by asyncio.run: nothing left open
            return
    loop.close()
    policy.set_event_loop(None)


@pytest.fixture(autouse=True)
def closes_sync_loop() -> Iterator[None]:
    """After each test, close the loop a sync run left (import it into a module)."""
    yield
    close_sync_loop()

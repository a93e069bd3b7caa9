"""Nous-style notification (``Nous.Agent.Callbacks``): map callbacks and queue messages.

``NotifyingHandler(callbacks={...}, notify=queue)`` calls the callback registered for
each Nous event with ``(event, payload)``, then puts ``(tag, payload)`` on a
``queue.Queue`` or an ``asyncio.Queue`` (thread-safely) or passes it to a callable.
It is also a chain handler and a streaming handler that turns langhooks events into
Nous events. ``events()`` and ``to_message()`` are Nous's event list and message
format.
"""

from __future__ import annotations

from ._wrap._notify import (
    AgentStartPayload,
    Callback,
    Notify,
    NotifyingHandler,
    NousCallbacks,
    NousEvent,
    ToolCallPayload,
    ToolResponsePayload,
    events,
    to_message,
)

__all__ = [
    "AgentStartPayload",
    "Callback",
    "Notify",
    "NotifyingHandler",
    "NousCallbacks",
    "NousEvent",
    "ToolCallPayload",
    "ToolResponsePayload",
    "events",
    "to_message",
]

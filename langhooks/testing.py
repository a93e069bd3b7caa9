"""Helpers for testing code that uses langhooks.

``RecordingChainHandler`` and ``RecordingStreamingHandler`` record every event they
receive as ``(event, args)`` tuples, in order and thread-safely, so a test can assert
the exact sequence a run or a stream produced. ``ScriptedChatModel`` and
``ScriptedTurn`` (re-exported from ``langhooks.models``) script the model side.
"""

from __future__ import annotations

from ._testing import (
    RecordedEvent,
    RecordingChainHandler,
    RecordingStreamingHandler,
    Reviewer,
    ScriptedChatModel,
    ScriptedTurn,
)

__all__ = [
    "RecordedEvent",
    "RecordingChainHandler",
    "RecordingStreamingHandler",
    "Reviewer",
    "ScriptedChatModel",
    "ScriptedTurn",
]

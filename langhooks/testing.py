"""Helpers for testing code that uses langhooks.

``RecordingChainHandler`` and ``RecordingStreamingHandler`` record every event they
receive as ``(event, args)`` tuples, in order and thread-safely, so a test can assert
the exact sequence a run or a stream produced. The model side is scripted with
``langhooks.models.ScriptedChatModel`` (its one home).
"""

from __future__ import annotations

from ._testing import (
    RecordedEvent,
    RecordingChainHandler,
    RecordingStreamingHandler,
    Reviewer,
)

__all__ = [
    "RecordedEvent",
    "RecordingChainHandler",
    "RecordingStreamingHandler",
    "Reviewer",
]

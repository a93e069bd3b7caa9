"""Event records: every handler event as data that can leave the process.

``EventRecorder(sink)`` is a chain and streaming handler that turns each event into
an ``EventRecord`` (numbered by ``seq``, with the run's id, the time and the event's
arguments encoded with ``langhooks.codec``) and writes it to a JSON Lines file, a
text file or a callable. ``read_events`` reads a recording back, lazily;
``replay_events`` drives a handler with it (``areplay_events`` an async one too).
"""

from __future__ import annotations

from ._persist._events import (
    EventRecord,
    EventRecorder,
    Sink,
    areplay_events,
    read_events,
    replay_events,
)

__all__ = [
    "EventRecord",
    "EventRecorder",
    "Sink",
    "areplay_events",
    "read_events",
    "replay_events",
]

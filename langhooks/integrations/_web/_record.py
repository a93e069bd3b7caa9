"""How the web app records the runs it drives: an ``EventRecorder`` whose sink
appends each record, encoded with ``langhooks.codec``, to the run's stream."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol, final

from ..._persist import _codec as codec
from ..._persist._events import EventRecord, EventRecorder
from .._run_end import EndMarker

__all__ = ["RecordBackend", "RecordSink"]


class RecordBackend(Protocol):
    """Where a ``RecordSink`` writes (the in-memory backend): typed here, so this
    module does not import the backend that imports it."""

    def create(
        self, run_id: str, prompt: str, sink: RecordSink, owner: str | None
    ) -> None:
        """Start the stream of run ``run_id``."""

    def append(self, run_id: str, event: str, data: str, *, ends: bool) -> str:
        """Add one record to the run's stream; returns its stream id."""


@final
class RecordSink:
    """Takes one conversation's records (its resumed parts too) into the backend.

    Add ``handlers`` to the chain, in that order. The run's id is the first
    record's ``run_id``: a resumed run keeps it, and every record goes there.
    """

    def __init__(self, backend: RecordBackend, prompt: str, owner: str | None) -> None:
        self._backend = backend
        self._prompt = prompt
        self.owner = owner  # who started the run (``owner_only``), or None
        self._first: asyncio.Future[str] | None = None
        self._marker = EndMarker()
        self.run_id: str | None = None
        self.handlers = (self._marker, EventRecorder(self.write))

    def on_first(self, future: asyncio.Future[str]) -> None:
        """Resolve ``future`` with the run id when the first record arrives."""
        self._first = future

    def write(self, record: EventRecord) -> None:
        """Append one record to the run's stream."""
        if self.run_id is None:
            # The first record is the run's on_run_start, which names the run.
            assert record.run_id is not None
            self.run_id = record.run_id
            self._backend.create(self.run_id, self._prompt, self, self.owner)
            self._resolve(self.run_id, None)
        self._backend.append(
            self.run_id,
            record.event,
            codec.dumps(record),
            ends=self._marker.ends(record.event),
        )

    def failed(self, exc: BaseException) -> None:
        """The run raised: a starter still waiting for the run id gets the error."""
        self._resolve(None, exc)

    def _resolve(self, run_id: str | None, exc: BaseException | None) -> None:
        future = self._first
        if future is None:
            return
        self._first = None
        future.get_loop().call_soon_threadsafe(_settle, future, run_id, exc)


def _settle(
    future: asyncio.Future[str], run_id: str | None, exc: BaseException | None
) -> None:
    # The starter may have gone away (its request was cancelled) in the meantime.
    with contextlib.suppress(asyncio.InvalidStateError):
        if exc is not None:
            future.set_exception(exc)
        else:
            assert run_id is not None
            future.set_result(run_id)

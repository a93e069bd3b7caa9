"""A saved run as every store keeps it: its messages as an append-only log, and the
small rest of its state (the head) beside them, so a save writes what changed.

- ``Saved``: what a store reads back: the head, the messages' JSON texts joined by
  commas, and the version of the write that made them.
- ``Write``: what a store writes: the head, the waiting calls, and the messages after
  the first ``keep`` of the version ``base`` (the whole log when ``base`` is None).
- ``Known``: what this store object last wrote or read of each run (the version and
  the messages, by reference), from which ``plan`` makes the smallest ``Write``.

A store applies a ``Write`` with a ``base`` only when the run is still at that
version (any write gives it a new one): else it answers False and the caller writes
the whole log (``Known.whole``). So a run changed by another worker, or an edited or
removed message, costs one full write, never a wrong log.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, final

import attrs

from .._core._messages import Message, ToolCall
from ..chain._chain import shared_messages
from ._codec import encode, encode_state

if TYPE_CHECKING:
    from ..chain import LLMChain

__all__ = ["Known", "Saved", "Write", "state_of"]

_COMPACT: Final = (",", ":")


def _json(value: Any) -> str:
    # ASCII: a lone surrogate or a NUL is an escape, which every store keeps.
    return json.dumps(value, separators=_COMPACT)


@final
@attrs.frozen
class Saved:
    """A run as a store read it.

    Attributes:
        head: the JSON object text of the state without ``"messages"``; for a run
            an earlier release saved, the whole state's text (``messages`` None).
        messages: the messages' JSON texts in order, joined by commas (None:
            in ``head``).
        version: the write that made them ("" for an earlier release's run).
    """

    head: str
    messages: str | None
    version: str


def state_of(saved: Saved) -> dict[str, Any]:
    """The ``to_state()`` dict of ``saved``: its texts joined, parsed once."""
    if saved.messages is None:
        whole: dict[str, Any] = json.loads(saved.head)
        return whole
    # head is a JSON object with "type" and more: '{' + '"messages":[...],' + rest.
    state: dict[str, Any] = json.loads(
        '{"messages":[' + saved.messages + "]," + saved.head[1:]
    )
    return state


@final
@attrs.frozen
class Write:
    """What a save (or a resume's settle) writes.

    Attributes:
        run_id: the run.
        base: the version this write builds on, or None for a whole write.
        keep: how many messages of ``base`` stay (0 for a whole write).
        messages: the JSON texts of the messages from position ``keep`` on.
        count: how many messages the run has after the write.
        version: the version the write makes.
        head: the JSON object text of the state without ``"messages"``.
        calls: the calls waiting for a decision.
        calls_json: ``calls`` as a JSON array of encoded ``ToolCall``.
    """

    run_id: str
    base: str | None
    keep: int
    messages: tuple[str, ...]
    count: int
    version: str
    head: str
    calls: tuple[ToolCall, ...]
    calls_json: str

    @property
    def status(self) -> Literal["waiting", "done"]:
        """The run's status after the write."""
        return "waiting" if self.calls else "done"


@final
@attrs.frozen
class _Entry:
    version: str
    messages: tuple[Message, ...]


@final
class Known:
    """What one store object last wrote or read of each run: the version, and
    the messages (by reference: the chains share them), for the most recent runs
    holding ``budget`` messages in all (a run forgotten here is written whole at
    its next save, once)."""

    def __init__(self, budget: int = 100_000) -> None:
        self._budget: Final = budget
        self._held = 0  # messages referenced
        self._lock: Final = threading.Lock()  # stores are shared by threads
        self._runs: Final[OrderedDict[str, _Entry]] = OrderedDict()

    def _note(self, run_id: str, version: str, messages: tuple[Message, ...]) -> None:
        runs = self._runs
        with self._lock:
            old = runs.pop(run_id, None)
            if old is not None:
                self._held -= len(old.messages)
            runs[run_id] = _Entry(version, messages)
            self._held += len(messages)
            while self._held > self._budget:
                _, gone = runs.popitem(last=False)
                self._held -= len(gone.messages)

    def plan(
        self, run_id: str, chain: LLMChain, calls: Sequence[ToolCall] | None = None
    ) -> Write:
        """The smallest write of ``chain``: the messages after those it shares
        with the version this store object knows (all of them when it knows
        none). ``calls``: the calls it waits for (None: its pending calls)."""
        with self._lock:
            entry = self._runs.get(run_id)
        if entry is None:
            return self._write(run_id, chain, None, 0, calls)
        keep = shared_messages(entry.messages, chain.messages)
        return self._write(run_id, chain, entry.version, keep, calls)

    def whole(
        self, run_id: str, chain: LLMChain, calls: Sequence[ToolCall] | None = None
    ) -> Write:
        """A write of ``chain``'s whole log (its base was gone)."""
        return self._write(run_id, chain, None, 0, calls)

    @staticmethod
    def _write(
        run_id: str,
        chain: LLMChain,
        base: str | None,
        keep: int,
        waiting: Sequence[ToolCall] | None,
    ) -> Write:
        state = encode_state(chain, keep)
        messages = tuple(_json(message) for message in state.pop("messages"))
        calls = chain.pending_tool_calls if waiting is None else tuple(waiting)
        return Write(
            run_id=run_id,
            base=base,
            keep=keep,
            messages=messages,
            count=len(chain.messages),
            version=uuid.uuid4().hex,
            head=_json(state),
            calls=calls,
            calls_json=_json([encode(call) for call in calls]),
        )

    def wrote(self, write: Write, chain: LLMChain) -> None:
        """``write`` of ``chain`` was applied."""
        self._note(write.run_id, write.version, chain.messages)

    def read(self, run_id: str, saved: Saved, chain: LLMChain) -> None:
        """``chain`` was made from ``saved`` (a load, or a resume's claim)."""
        if saved.messages is None:
            self.forget(run_id)  # an earlier release's layout: the next save is whole
        else:
            self._note(run_id, saved.version, chain.messages)

    def forget(self, run_id: str) -> None:
        """The run was deleted, or changed in a way the next save must not build on."""
        with self._lock:
            gone = self._runs.pop(run_id, None)
            if gone is not None:
                self._held -= len(gone.messages)

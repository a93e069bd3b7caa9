"""What a frontend shares with a run beside its messages: context and state.

AG-UI's ``context`` entries reach the model as one system message, placed before
the user's turn of the run that got them. The client's ``state`` (AG-UI
``state``, or the AI SDK's ``data-state`` part) becomes a ``SharedState`` that
the run's tools and handlers reach with ``shared_state()``; what they change goes
back to the client as it happens, as AG-UI ``STATE_DELTA`` (JSON Patch, RFC 6902)
and a closing ``STATE_SNAPSHOT``, or as a ``data-state`` part the AI SDK keeps
one of (reconciled by its id).

The state is the client's: it comes with each request and is not kept on the
server, so it lives in a context variable for the request's run rather than in
the chain's ``custom_context``, which a store saves and a resume restores.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, final

import attrs

from ..._core._jsondata import Unencodable, jsonable
from ..._core._messages import Message
from ..._persist._events import EventRecord, EventRecorder
from ._app import Translation, Work

__all__ = [
    "CONTEXT_HEADER",
    "SharedState",
    "StateTranslation",
    "agui_state_events",
    "json_patch",
    "same_json",
    "shared_state",
    "shared_work",
    "sharing",
    "ui_state",
    "ui_state_events",
    "with_context",
]

#: The first line of the system message that carries AG-UI ``context``.
CONTEXT_HEADER: Final = "Context from the application for this request:"
#: The id of the AI SDK ``data-state`` part (one per message: each update
#: replaces it).
_STATE_PART: Final = "state"

_CURRENT: Final[contextvars.ContextVar[SharedState | None]] = contextvars.ContextVar(
    "langhooks_shared_state", default=None
)

Events = list[dict[str, Any]]


def _json(value: Any, what: str) -> Any:
    """``value`` as fresh JSON types.

    Raises:
        TypeError, ValueError: a part of it is not JSON (the message names it).
    """
    try:
        return jsonable(value)
    except Unencodable as error:
        error.raise_public(what)
        raise  # pragma: no cover  # raise_public always raises


@final
class SharedState:
    """The client's state for one run, shared by the run's tools and handlers.

    Reached with ``shared_state()`` from a tool or a handler of a run the AG-UI
    or UI-message app started; safe from any thread or task the run uses. Each
    change is sent to the client in order with the run's events: after the
    events recorded before it.

    Args:
        value: the state the client sent (JSON types); None is ``{}``.
        forwarded_props: AG-UI ``forwardedProps`` of the request (JSON types);
            None is ``{}``.

    Raises:
        TypeError, ValueError: ``value`` or ``forwarded_props`` is not JSON.
    """

    __slots__ = ("_changes", "_forwarded", "_given", "_lock", "_made", "_value")

    def __init__(self, value: Any = None, *, forwarded_props: Any = None) -> None:
        self._lock = threading.Lock()
        self._value = {} if value is None else _json(value, "state")
        self._given = copy.deepcopy(self._value)
        self._forwarded = (
            {} if forwarded_props is None else _json(forwarded_props, "forwarded_props")
        )
        # Each change with the number of records the run had made by then,
        # counted under the lock by ``_recorded``: a record a change's number
        # does not count reaches the event loop only once the change is here.
        self._changes: list[tuple[int, Any]] = []
        self._made = 0

    @property
    def forwarded_props(self) -> Any:
        """What the client forwarded with the request (AG-UI
        ``forwardedProps``): a copy."""
        return copy.deepcopy(self._forwarded)

    def get(self) -> Any:
        """The state now: a copy, which the caller may change freely."""
        with self._lock:
            return copy.deepcopy(self._value)

    def set(self, value: Any) -> None:
        """Replace the whole state with ``value`` (JSON types, copied).

        Raises:
            TypeError, ValueError: ``value`` is not JSON.
        """
        fresh = _json(value, "state")
        with self._lock:
            self._changed(fresh)

    def update(self, changes: Mapping[str, Any]) -> None:
        """Set the top-level keys of ``changes`` in a state that is an object.

        Raises:
            TypeError: the state is not an object, or a value is not JSON.
            ValueError: a value is not JSON.
        """
        fresh = _json(dict(changes), "changes")
        with self._lock:
            if not isinstance(self._value, dict):
                raise TypeError(
                    f"update needs a state that is an object, the state is "
                    f"{type(self._value).__name__}: use set()"
                )
            self._changed({**self._value, **fresh})

    def _changed(self, value: Any) -> None:
        self._value = value
        self._changes.append((self._made, copy.deepcopy(value)))

    # What the apps read (StateTranslation, shared_work): not for tools.

    def _sent_by_client(self) -> Any:
        """The state the client sent: a copy."""
        return copy.deepcopy(self._given)

    def _recorded(self, record: EventRecord) -> None:
        """Count ``record`` as made: told by the run's sink in the thread that
        records, before the record is queued for the event loop. A change is
        stamped with the records made before it, each of them on its way to
        the loop already; the records after it reach the loop after it (the
        lock orders the two)."""
        with self._lock:
            self._made = record.seq + 1

    def _changes_through(self, count: int) -> list[Any]:
        """The states of the changes made once no more than ``count`` records
        were made, oldest first; each is returned once."""
        if not self._changes:  # read without the lock: the common case
            return []
        with self._lock:
            taken = [value for made, value in self._changes if made <= count]
            self._changes = self._changes[len(taken) :]
            return taken


def shared_state() -> SharedState | None:
    """The client's state of the frontend request this code runs for: in a
    tool or a handler of a run ``create_agui_app`` or ``create_ui_message_app``
    started or resumed; None elsewhere."""
    return _CURRENT.get()


@contextlib.contextmanager
def sharing(state: SharedState) -> Iterator[None]:
    """``state`` is ``shared_state()`` inside the block, and inside the threads
    and tasks started there (they copy the context when they start)."""
    token = _CURRENT.set(state)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def shared_work(work: Work, state: SharedState) -> Work:
    """``work`` with ``state`` shared, its changes counted against the
    records of the run (each told to ``state`` as it is made)."""

    async def run(recorder: EventRecorder) -> None:
        with sharing(state):
            await work.run(recorder)

    return attrs.evolve(work, run=run, recorded=state._recorded)


def with_context(
    messages: Sequence[Message], entries: Sequence[tuple[str, str]]
) -> list[Message]:
    """``messages`` with one system message saying each ``(description,
    value)`` entry, placed before the last user message (at the end if there is
    none); ``messages`` as they are when there is no entry."""
    if not entries:
        return list(messages)
    lines = [CONTEXT_HEADER, *(f"- {about}: {value}" for about, value in entries)]
    context = Message.system("\n".join(lines))
    at = next(
        (i for i in reversed(range(len(messages))) if messages[i].role == "user"),
        len(messages),
    )
    return [*messages[:at], context, *messages[at:]]


def _pointer(path: Sequence[str]) -> str:
    """A JSON Pointer (RFC 6901) to ``path``."""
    return "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in path)


def same_json(first: Any, second: Any) -> bool:
    """Whether two JSON values are the same JSON (``1`` and ``True`` are not)."""
    if type(first) is not type(second):
        return False
    if isinstance(first, dict):
        return first.keys() == second.keys() and all(
            same_json(value, second[key]) for key, value in first.items()
        )
    if isinstance(first, list):
        return len(first) == len(second) and all(map(same_json, first, second))
    return bool(first == second)


def json_patch(before: Any, after: Any, path: Sequence[str] = ()) -> Events:
    """The JSON Patch (RFC 6902) operations that turn ``before`` into ``after``:
    objects key by key, any other changed value (arrays included) replaced."""
    if same_json(before, after):
        return []
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [{"op": "replace", "path": _pointer(path), "value": after}]
    ops: Events = [
        {"op": "remove", "path": _pointer([*path, key])}
        for key in before
        if key not in after
    ]
    for key, value in after.items():
        if key in before:
            ops.extend(json_patch(before[key], value, [*path, key]))
        else:
            ops.append({"op": "add", "path": _pointer([*path, key]), "value": value})
    return ops


def agui_state_events(before: Any, after: Any, ending: bool) -> Events:
    """AG-UI events for a change: ``STATE_DELTA``; the state as a whole
    (``STATE_SNAPSHOT``) when the run ends."""
    if ending:
        return [{"type": "STATE_SNAPSHOT", "snapshot": after}]
    return [{"type": "STATE_DELTA", "delta": json_patch(before, after)}]


def ui_state_events(before: Any, after: Any, ending: bool) -> Events:
    """The AI SDK chunk for a change: the whole state as a ``data-state`` part,
    which replaces the one the message had (same id)."""
    del before  # each part carries the whole state: nothing more at the end
    return [] if ending else [{"type": "data-state", "id": _STATE_PART, "data": after}]


def ui_state(body: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> Any:
    """The client's state of a UI-message request: the body's ``"state"``, else
    the data of the last ``data-state`` part of the posted messages, else
    None."""
    if "state" in body:
        return body["state"]
    for message in reversed(messages):
        for part in reversed(message["parts"]):
            if part.get("type") == "data-state" and "data" in part:
                return part["data"]
    return None


@final
@attrs.define
class StateTranslation:
    """A protocol's ``Translation`` with the changes of ``state`` added in
    order: a change made after record ``n`` follows that record's events
    (``render(before, after, ending=False)``, the states it was made between;
    several changes between two records are one), also when the loop
    translated record ``n`` before the change was made: it then leads the
    events of record ``n + 1``, the same place in the stream. The request's
    end, after changes, adds ``render(None, last, ending=True)`` before the
    event that ends it."""

    inner: Translation
    state: SharedState
    render: Callable[[Any, Any, bool], Events]
    _sent: Any = attrs.field(default=None, init=False)
    _changed: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        # What the client has: the state it sent, whenever the run changed it.
        self._sent = self.state._sent_by_client()

    def translate(self, record: EventRecord) -> Events:
        """The events of ``record``, with the state's changes: first those made
        before it that came after its previous record was translated (none
        before the run's first event)."""
        late = [] if self.inner.run_id is None else self._delta(record.seq)
        return [
            *late,
            *self._with_changes(self.inner.translate(record), record.seq + 1),
        ]

    def failed(self, exc: BaseException) -> Events:
        """The events that end a request whose run raised ``exc``, the state's
        changes first."""
        return self._with_changes(self.inner.failed(exc), sys.maxsize)

    def ends(self, event: Mapping[str, Any]) -> bool:
        """As the protocol says."""
        return self.inner.ends(event)

    def waits(self, event: Mapping[str, Any]) -> bool:
        """As the protocol says."""
        return self.inner.waits(event)

    @property
    def run_id(self) -> str | None:
        """As the protocol says."""
        return self.inner.run_id

    def _delta(self, through: int) -> Events:
        """The change events of the changes made before record ``through`` not
        sent yet (none when they end where the client is)."""
        changes = self.state._changes_through(through)
        if not changes or same_json(changes[-1], self._sent):
            return []
        added = self.render(self._sent, changes[-1], False)
        self._sent, self._changed = changes[-1], True
        return added

    def _with_changes(self, events: Events, through: int) -> Events:
        """``events`` with the changes made before record ``through``, placed
        before the event that ends the request, if any."""
        at = next((i for i, e in enumerate(events) if self.inner.ends(e)), None)
        added = self._delta(through)
        if at is not None and self._changed:
            added.extend(self.render(None, self._sent, True))
        if not added:
            return events
        place = len(events) if at is None else at
        return [*events[:place], *added, *events[place:]]

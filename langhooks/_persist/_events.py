"""Event records: a handler that records every event as data (its replay is
``_replay``'s; this module re-exports it).

``EventRecorder`` is a chain handler and a streaming handler (it works in ``run`` and
``arun``, ``stream`` and ``astream``: the async drivers call a sync handler inline).
Its methods are made from the interfaces' event lists, so an event added to an
interface is recorded without a change here. Each event becomes an ``EventRecord``
whose payload holds the arguments encoded with ``langhooks.codec``; code (a model, a
tool's function, a stream's cancel handle) is recorded by description.

A chain argument is not copied into every record: the payload carries the run's
message count, plus the messages that changed since the run's previous record, so a
replay rebuilds the chain snapshot from the records before it.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Final, TypeAlias, cast, final, overload

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler
from .._core._invocation import _CURRENT, Invocation
from .._core._messages import LangHooksError, Message
from .._core._model import ChatModel, ChatRequest
from .._core._result import RunResult
from .._core._streaming import StreamingChatResponseHandler
from .._core._tools import Tool
from ..chain._chain import LLMChain
from . import _codec
from ._reading import read_events, read_numbered_events
from ._records import (
    _CHAIN_EVENTS,
    _CONTEXTS,
    _STREAM_EVENTS,
    EventName,
    EventRecord,
)
from ._recordtext import Plan, RecordText, Runs, envelope_line
from ._replay import (
    Handler,
    Replayer,
    SyncHandler,
    areplay_events,
    replay_events,
)

__all__ = [
    "EventRecord",
    "EventRecorder",
    "Handler",
    "Replayer",
    "Sink",
    "SyncHandler",
    "areplay_events",
    "read_events",
    "read_numbered_events",
    "replay_events",
]

_logger: Final = logging.getLogger("langhooks")

#: Where an ``EventRecorder`` writes: a path (JSON Lines, appended), a writable text
#: file, or a callable taking each ``EventRecord``.
Sink: TypeAlias = "str | os.PathLike[str] | IO[str] | Callable[[EventRecord], object]"

_CONTEXT_EVENTS: Final = frozenset(_CONTEXTS)
# Events after which a run or a stream returns: a file sink is flushed there.
_TERMINAL: Final = frozenset({"on_run_complete", "on_error", "on_complete_response"})


# --- arguments -> payload -------------------------------------------------------------


def _describe_model(model: object) -> dict[str, Any]:
    name = getattr(model, "model", None)
    return {
        "type": "ChatModel",
        "class": type(model).__qualname__,
        "name": name if isinstance(name, str) else None,
    }


def _tool(tool: Tool) -> dict[str, Any]:
    return {
        "type": "Tool",
        "name": tool.name,
        "description": tool.description,
        "parameters_schema": _codec.json_data(
            tool.parameters_schema, "parameters_schema"
        ),
        "display_text": tool.display_text,
        "concurrent": tool.concurrent,
    }


def _exception(error: BaseException) -> dict[str, Any]:
    kind = type(error)
    return {
        "type": "Exception",
        "class": f"{kind.__module__}.{kind.__qualname__}",
        "message": str(error),
    }


def _message(message: Message) -> dict[str, Any]:
    return _codec.encode_fields(message)[1]


class _Encoder:
    """Turns one event's arguments into its payload."""

    __slots__ = ("runs",)

    def __init__(self) -> None:
        self.runs = Runs()

    def value(self, value: Any, run_id: str | None, chain: LLMChain | None) -> Any:
        """``value`` as a payload value; ``chain`` is the event's chain, if any."""
        kind = type(value)
        if _codec.is_value_type(kind):
            tag, fields = _codec.encode_fields(value)
            out: dict[str, Any] = {"type": tag}
            out.update(fields)
            return out
        if kind is LLMChain:
            return self.runs.reference(value, run_id)
        if isinstance(value, Mapping):
            return {"type": "Mapping", "value": _codec.json_data(value, "value")}
        if isinstance(value, list | tuple):
            return [self.value(item, run_id, chain) for item in value]
        if isinstance(value, Tool):
            return _tool(value)
        if isinstance(value, RunResult):
            error = value.error
            return {
                "type": "RunResult",
                "status": value.status,
                "interrupt_data": _codec.json_data(
                    value.interrupt_data, "interrupt_data"
                ),
                "error": None if error is None else self.value(error, run_id, chain),
            }
        if isinstance(value, BaseException):
            return _exception(value)
        return self.other(value, chain)

    def other(self, value: Any, chain: LLMChain | None) -> Any:
        if isinstance(value, ChatRequest):
            request: dict[str, Any] = {"type": "ChatRequest"}
            if chain is not None and value.messages is chain.messages:
                # The usual request: the chain's conversation, recorded once.
                request["messages_of_chain"] = True
            else:
                request["messages"] = [_message(m) for m in value.messages]
            request["tools"] = [_tool(tool) for tool in value.tools]
            return request
        if isinstance(value, ChatModel):
            return _describe_model(value)
        return _codec.json_data(value, "value")

    def raw_event(self, value: Any) -> Any:
        """A provider's raw event: JSON data as such; anything else (an SDK object)
        as its repr, marked so, rather than failing the stream."""
        try:
            return self.value(value, None, None)
        except (TypeError, ValueError):
            return {
                "type": "Repr",
                "class": type(value).__qualname__,
                "repr": repr(value),
            }


# --- the recorder ---------------------------------------------------------------------


def _ids(
    plan: Plan, args: Sequence[Any], current: Invocation | None
) -> tuple[str | None, str | None, str | None]:
    """A record's run id, invocation id and parent id: a chain event's run is its
    chain's invocation, current unless another one (a tool's) is."""
    run_id: str | None = None
    if plan.chained:
        run = args[0].invocation
        if run is not None:
            run_id = run.id
            if current is None:
                current = run
    if current is None:
        return run_id, None, None
    return run_id, current.id, current.parent_id


def _recording_method(name: str) -> Callable[..., None]:
    """The method that records event ``name`` (of either interface)."""
    # The plan of each argument shape, by argument count (on_error has two).
    plans = {
        len(events[name].params): Plan(
            name, events[name].params, _CONTEXT_EVENTS, _TERMINAL
        )
        for events in (_CHAIN_EVENTS, _STREAM_EVENTS)
        if name in events
    }

    def record(self: EventRecorder, *args: Any) -> None:
        plan = plans.get(len(args))
        if plan is None:
            raise TypeError(
                f"EventRecorder.{name} takes {' or '.join(map(str, sorted(plans)))} "
                f"arguments, got {len(args)}"
            )
        text = self._text
        if text is None:
            self._record(plan, args)
            return
        # A file sink: the hot path, kept in this one function.
        current = _CURRENT.get()
        with self._lock:
            # The text is made under the lock too: a chain's message deltas must
            # be computed in record order.
            seq = self._seq
            line = text.line(plan, args, seq, current)
            if line is None:
                line = self._reference_line(plan, args, seq, current)
            self._file.write(line)  # type: ignore[union-attr]  # a file sink
            self._seq = seq + 1
            if plan.terminal:
                self._ended(plan, args, current)

    record.__name__ = record.__qualname__ = name
    record.__doc__ = f"Record ``{name}``."
    return record


_record_error: Final = _recording_method("on_error")


@final
class EventRecorder(ChainCallbackHandler, StreamingChatResponseHandler):
    """Records every chain and stream event it receives as an ``EventRecord``.

    Use it as a chain handler (``LLMChain(..., callbacks=[recorder])``) and as a
    streaming handler (``model.stream(request, recorder)``), in ``run`` and
    ``arun`` alike. Records are numbered by ``seq``, gap-free and in the order they
    reach the sink, also when threads and tasks record concurrently.

    Args:
        sink: a path (records appended as JSON Lines, one ``langhooks.codec``
            object per line), a writable text file (the same lines), or a callable
            taking each ``EventRecord``. A file sink is flushed when a run or a
            stream ends, so every record is written by the time it returns.

    Raises:
        TypeError: ``sink`` is none of those.
        OSError: the path cannot be opened for appending.
    """

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._file: IO[str] | None = None
        self._call: Callable[[EventRecord], object] | None = None
        self._owned = isinstance(sink, str | os.PathLike)
        if isinstance(sink, str | os.PathLike):
            self._file = open(sink, "a", encoding="utf-8")  # noqa: SIM115  # close()
        elif callable(getattr(sink, "write", None)):
            self._file = sink  # type: ignore[assignment]  # a file-like object
        elif callable(sink):
            self._call = sink
        else:
            raise TypeError(
                f"sink must be a path, a writable text file or a callable taking an "
                f"EventRecord, got {sink!r}"
            )
        self._lock = threading.Lock()
        self._seq = 0
        self._encoder = _Encoder()
        # A file sink's records are written as text directly (see _recordtext).
        self._text = None if self._file is None else RecordText(self._encoder)

    @property
    def count(self) -> int:
        """How many records were made so far (the next record's ``seq``)."""
        return self._seq

    def _record(self, plan: Plan, args: Sequence[Any]) -> None:
        """Record an event to a callable sink (a file sink's path is in the
        recording method)."""
        current = _CURRENT.get()
        with self._lock:
            # The payload is built under the lock too: a chain's message deltas
            # must be computed in record order.
            seq = self._seq
            assert self._call is not None
            ids = _ids(plan, args, current)
            payload = self._payload(plan, args, ids[0])
            self._call(
                EventRecord(
                    seq=seq,
                    event=cast("EventName", plan.name),  # an interface's event
                    run_id=ids[0],
                    invocation_id=ids[1],
                    parent_id=ids[2],
                    time=datetime.datetime.now(datetime.UTC),
                    payload=payload,
                )
            )
            self._seq = seq + 1
            if plan.terminal:
                self._ended(plan, args, current)

    def _ended(
        self, plan: Plan, args: Sequence[Any], current: Invocation | None
    ) -> None:
        """After a run's or a stream's last event: flush a file sink; forget what
        was kept for a run."""
        if self._file is not None:
            self._file.flush()
        if plan.ends_run:
            run_id = _ids(plan, args, current)[0]
            self._encoder.runs.forget(run_id)
            if self._text is not None:
                self._text.forget()

    def _reference_line(
        self, plan: Plan, args: Sequence[Any], seq: int, current: Invocation | None
    ) -> str:
        """The record's line built the reference way (as a dict): for values the
        fast path does not write; it raises the errors both paths raise."""
        assert self._text is not None
        self._text.forget_chain()  # the reference path moves the run's messages on
        run_id, invocation_id, parent_id = _ids(plan, args, current)
        payload = self._payload(plan, args, run_id)
        return envelope_line(seq, plan.name, run_id, invocation_id, parent_id, payload)

    def _payload(
        self, plan: Plan, args: Sequence[Any], run_id: str | None
    ) -> dict[str, Any]:
        name, params = plan.name, plan.params
        payload: dict[str, Any] = {}
        value = self._encoder.value
        chain = args[0] if params and params[0] == "chain" else None
        carried = self._encoder.runs.sent.get(run_id)
        for param, arg in zip(params, args, strict=True):
            if param == "context" and name in _CONTEXTS:
                continue  # a cancel handle: replay makes a fresh one
            try:
                payload[param] = (
                    self._encoder.raw_event(arg)
                    if param == "raw_event"
                    else value(arg, run_id, chain)
                )
            except (TypeError, ValueError) as error:
                # No record is made: the next one carries this one's messages.
                self._encoder.runs.restore(run_id, carried)
                raise type(error)(
                    f"EventRecorder cannot record {name}({param}=...): {error}"
                ) from error
        return payload

    def flush(self) -> None:
        """Write out what a file sink buffers."""
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        """Flush, and close the file when the recorder opened it (a path sink)."""
        with self._lock:
            if self._file is not None:
                self._file.flush()
                if self._owned:
                    self._file.close()

    def __enter__(self) -> EventRecorder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @override
    def __repr__(self) -> str:
        return f"EventRecorder({self._sink!r})"

    # One recording method per event of both interfaces, made from their event
    # lists so a new event is recorded too. They are in the class body, not set
    # afterwards, so the handler machinery sees them as overrides.
    locals().update(
        {
            name: _recording_method(name)
            for name in {*_CHAIN_EVENTS, *_STREAM_EVENTS} - {"on_error"}
        }
    )

    # on_error is in both interfaces, with different arguments: (error) for a
    # stream, (chain, error) for a run. One method takes both shapes; the
    # overloads give each caller its own signature.
    @overload
    def on_error(self, error: BaseException, /) -> None: ...
    @overload
    def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        """Record ``on_error``: a stream's ``(error)`` or a run's ``(chain, error)``.

        Raises:
            TypeError: not called with one or two arguments.
        """
        _record_error(self, *args)

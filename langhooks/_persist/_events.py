"""Event records: a handler that records every event as data, and its replay.

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

import contextlib
import datetime
import inspect
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any, Final, TypeAlias, cast, final, overload

from typing_extensions import override

from .._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from .._core._handler import HandlerBase
from .._core._invocation import Invocation, current_invocation
from .._core._messages import (
    ChatResponse,
    LangHooksError,
    Message,
    Tool,
    ToolContext,
)
from .._core._model import ChatModel, ChatRequest
from .._core._result import RunResult, run_result
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ..chain._chain import LLMChain
from . import _codec
from ._reading import read_events, read_numbered_events
from ._records import EventName, EventRecord

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

_CONTEXTS: Final[dict[str, type]] = {
    "on_partial_response": PartialResponseContext,
    "on_partial_thinking": PartialThinkingContext,
    "on_partial_tool_call": PartialToolCallContext,
}
# Events after which a run or a stream returns: a file sink is flushed there.
_TERMINAL: Final = frozenset({"on_run_complete", "on_error", "on_complete_response"})
_CHAIN_EVENTS: Final = ChainCallbackHandler._langhooks_own_events
_STREAM_EVENTS: Final = StreamingChatResponseHandler._langhooks_own_events


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


class _Runs:
    """The messages each run's records have carried so far (per recorder)."""

    __slots__ = ("_sent",)

    def __init__(self) -> None:
        self._sent: dict[str | None, tuple[Message, ...]] = {}

    def reference(self, chain: LLMChain, run_id: str | None) -> dict[str, Any]:
        """The chain as a payload value: its counts and the messages that changed
        since this run's previous record."""
        messages = chain.messages
        ref: dict[str, Any] = {
            "type": "LLMChain",
            "message_count": len(messages),
            "current_failure_count": chain.current_failure_count,
        }
        sent = self._sent.get(run_id)
        if sent is messages:
            return ref
        start = 0
        if sent is not None:
            limit = min(len(sent), len(messages))
            while start < limit and sent[start] is messages[start]:
                start += 1
        ref["messages_from"] = start
        ref["messages"] = [_message(message) for message in messages[start:]]
        self._sent[run_id] = messages
        return ref

    def forget(self, run_id: str | None) -> None:
        self._sent.pop(run_id, None)


def _message(message: Message) -> dict[str, Any]:
    return _codec.encode_fields(message)[1]


class _Encoder:
    """Turns one event's arguments into its payload."""

    __slots__ = ("runs",)

    def __init__(self) -> None:
        self.runs = _Runs()

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


def _recording_method(name: str) -> Callable[..., None]:
    """The method that records event ``name`` (of either interface)."""
    chain = name in _CHAIN_EVENTS
    stream = name in _STREAM_EVENTS
    params: dict[int, tuple[str, ...]] = {}
    if chain:
        params[len(_CHAIN_EVENTS[name].params)] = _CHAIN_EVENTS[name].params
    if stream:
        params[len(_STREAM_EVENTS[name].params)] = _STREAM_EVENTS[name].params

    def record(self: EventRecorder, *args: Any) -> None:
        names = params.get(len(args))
        if names is None:
            raise TypeError(
                f"EventRecorder.{name} takes {' or '.join(map(str, sorted(params)))} "
                f"arguments, got {len(args)}"
            )
        self._record(name, names, args)

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

    @property
    def count(self) -> int:
        """How many records were made so far (the next record's ``seq``)."""
        return self._seq

    def _record(self, name: str, params: Sequence[str], args: Sequence[Any]) -> None:
        current = current_invocation()
        run_id: str | None = None
        if params and params[0] == "chain":
            run = args[0].invocation
            if run is not None:
                run_id = run.id
                current = current or run
        invocation_id = None if current is None else current.id
        parent_id = None if current is None else current.parent_id
        with self._lock:
            # The payload is built under the lock too: a chain's message deltas
            # must be computed in record order.
            payload = self._payload(name, params, args, run_id)
            seq = self._seq
            time = datetime.datetime.now(datetime.UTC)
            if self._file is not None:
                self._file.write(
                    _codec.json_text(
                        {
                            "type": "EventRecord",
                            "version": _codec.SCHEMA_VERSION,
                            "seq": seq,
                            "event": name,
                            "run_id": run_id,
                            "invocation_id": invocation_id,
                            "parent_id": parent_id,
                            "time": time.isoformat(),
                            "payload": payload,
                        }
                    )
                    + "\n"
                )
            else:
                assert self._call is not None
                self._call(
                    EventRecord(
                        seq=seq,
                        event=cast("EventName", name),  # an interface's event
                        run_id=run_id,
                        invocation_id=invocation_id,
                        parent_id=parent_id,
                        time=time,
                        payload=payload,
                    )
                )
            self._seq = seq + 1
            if name in _TERMINAL:
                if self._file is not None:
                    self._file.flush()
                if name != "on_complete_response":
                    self._encoder.runs.forget(run_id)

    def _payload(
        self, name: str, params: Sequence[str], args: Sequence[Any], run_id: str | None
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {}
        value = self._encoder.value
        chain = args[0] if params and params[0] == "chain" else None
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


# --- replay ---------------------------------------------------------------------


class _RecordedModel:
    """A recorded model, replayed: its description, and a model that cannot be
    called.

    Attributes:
        recorded_class: the recorded model's class name, if known.
        model: the recorded model's name (its ``model`` attribute), if any.
    """

    def __init__(
        self, recorded_class: str | None = None, model: str | None = None
    ) -> None:
        self.recorded_class = recorded_class
        self.model = model
        self.description = (
            "the recorded model"
            if recorded_class is None
            else f"the recorded {recorded_class}" + (f" {model!r}" if model else "")
        )

    def _fail(self) -> LangHooksError:
        return LangHooksError(
            "invalid_request",
            f"{self.description} is a recording: a replayed chain cannot call it; "
            f"build the chain with a real model (LLMChain.from_state)",
        )

    def stream(self, request: object, handler: object, **_: object) -> ChatResponse:
        raise self._fail()

    async def astream(
        self, request: object, handler: object, **_: object
    ) -> ChatResponse:
        raise self._fail()

    @override
    def __repr__(self) -> str:
        return f"<{self.description}>"


def _recorded_tool(arguments: Mapping[str, Any], context: ToolContext) -> str:
    raise RuntimeError("a recorded tool stands in for the real one: it cannot run")


class _Chains:
    """Rebuilds each run's chain snapshots from its records, in order."""

    def __init__(self) -> None:
        self._messages: dict[str | None, list[Message]] = {}
        self._last: dict[str | None, tuple[dict[str, Any], LLMChain]] = {}

    def current(self, record: EventRecord) -> LLMChain:
        """The chain of the record's run as its ``chain`` argument rebuilt it (the
        chain is every chain event's first argument, so it is decoded first)."""
        return self._last[record.run_id][1]

    def chain(self, ref: Mapping[str, Any], record: EventRecord) -> LLMChain:
        run_id = record.run_id
        messages = self._messages.setdefault(run_id, [])
        if "messages" in ref:
            start = ref["messages_from"]
            del messages[start:]
            messages.extend(_codec.message_from_data(m) for m in ref["messages"])
        elif run_id in self._last:
            last_ref, chain = self._last[run_id]
            if (
                last_ref["message_count"] == ref["message_count"]
                and last_ref["current_failure_count"] == ref["current_failure_count"]
            ):
                return chain
        if len(messages) != ref["message_count"]:
            raise ValueError(
                f"record {record.seq} ({record.event}) refers to {ref['message_count']}"
                f" message(s) of run {run_id}, but the records before it carried "
                f"{len(messages)}: replay a recording from its start"
            )
        chain = LLMChain(
            _RecordedModel(),
            messages=tuple(messages),
            current_failure_count=ref["current_failure_count"],
            invocation=Invocation(
                id=run_id or "unknown", name="run", parent_id=record.parent_id
            )
            if record.run_id is not None
            else None,
        )
        self._last[run_id] = (dict(ref), chain)
        return chain


class _Decoder:
    """Turns payload values back into arguments."""

    def __init__(self) -> None:
        self.chains = _Chains()
        self.handle = StreamingHandle()

    def value(self, value: Any, record: EventRecord, depth: int = 0) -> Any:
        if isinstance(value, list):
            if depth >= _codec.MAX_DEPTH:
                raise ValueError(
                    f"payload data may nest {_codec.MAX_DEPTH} levels deep at most"
                )
            return tuple(self.value(item, record, depth + 1) for item in value)
        if not isinstance(value, Mapping) or "type" not in value:
            return value
        tag = value["type"]
        if tag == "LLMChain":
            return self.chains.chain(value, record)
        if tag == "Mapping":
            return dict(value["value"])
        if tag == "Tool":
            return Tool(
                value["name"],
                _recorded_tool,
                description=value["description"],
                parameters_schema=value["parameters_schema"],
                display_text=value["display_text"],
                concurrent=value["concurrent"],
            )
        if tag == "RunResult":
            error = value["error"]
            return run_result(
                status=value["status"],
                chain=self.chains.current(record),
                interrupt_data=value["interrupt_data"],
                error=None if error is None else self.value(error, record),
            )
        if tag == "Exception":
            return _rebuilt_exception(value["class"], value["message"])
        if tag == "Repr":
            return value["repr"]
        if tag == "ChatModel":
            return _RecordedModel(value["class"], value["name"])
        if tag == "ChatRequest":
            messages = (
                self.chains.current(record).messages
                if value.get("messages_of_chain")
                else [_codec.message_from_data(m) for m in value["messages"]]
            )
            return ChatRequest(
                messages=messages,
                tools=[self.value(tool, record) for tool in value["tools"]],
            )
        return _codec.decode_fields(tag, value)


def _rebuilt_exception(qualified: object, message: object) -> BaseException:
    """A builtin ``Exception`` class that takes a message alone comes back as
    itself; any other (``UnicodeDecodeError``, ``ExceptionGroup``, a class of the
    application: never imported from a record) as an ``Exception`` naming it."""
    if not isinstance(qualified, str) or not isinstance(message, str):
        raise TypeError(
            f"a recorded exception's class and message are str, got {qualified!r} "
            f"and {message!r}"
        )
    module, _, name = qualified.rpartition(".")
    if module == "builtins":
        import builtins

        kind = getattr(builtins, name, None)
        if isinstance(kind, type) and issubclass(kind, Exception):
            # A class with another constructor gets the stand-in below.
            with contextlib.suppress(Exception):
                return kind(message)
    return Exception(f"{qualified}: {message}")


def _interface_of(record: EventRecord) -> tuple[type[HandlerBase], ...] | None:
    name = record.event
    if name in _CHAIN_EVENTS and (
        name not in _STREAM_EVENTS or "chain" in record.payload
    ):
        return (ChainCallbackHandler, AsyncChainCallbackHandler)
    if name in _STREAM_EVENTS:
        return (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler)
    return None


#: What ``replay_events`` (and ``follow``, the consumer) drive.
SyncHandler: TypeAlias = ChainCallbackHandler | StreamingChatResponseHandler
#: What ``areplay_events`` (and ``afollow``) drive.
Handler: TypeAlias = (
    ChainCallbackHandler
    | StreamingChatResponseHandler
    | AsyncChainCallbackHandler
    | AsyncStreamingChatResponseHandler
)

_ASYNC: Final = (AsyncChainCallbackHandler, AsyncStreamingChatResponseHandler)
_INTERFACES: Final = (
    ChainCallbackHandler,
    AsyncChainCallbackHandler,
    StreamingChatResponseHandler,
    AsyncStreamingChatResponseHandler,
)


@final
class Replayer:
    """Turns records, one at a time, into calls of one handler's ``on_*`` methods.

    The one replay loop body: ``replay_events`` and ``areplay_events`` run it over a
    list, ``follow`` and the Redis consumer over a stream read piece by piece (they
    may start in the middle of a run, so ``prime`` feeds earlier records to the
    decoder, which rebuilds each run's chain, without calling the handler).

    Args:
        handler: the handler to drive.
        what: the caller's name, for error messages.
        twin: the async twin to name when ``handler`` is async and this replayer
            drives sync handlers only; None when async handlers are welcome.

    Raises:
        TypeError: ``handler`` is not a langhooks handler, or is async where only
            sync handlers are driven.
    """

    def __init__(self, handler: Handler, what: str, *, twin: str | None) -> None:
        if not isinstance(handler, _INTERFACES):
            raise TypeError(
                f"{what} drives a langhooks handler (a ChainCallbackHandler, a "
                f"StreamingChatResponseHandler or their Async twins), got {handler!r}"
            )
        if twin is not None and isinstance(handler, _ASYNC):
            raise TypeError(
                f"{what} drives synchronous handlers; {handler!r} is async: use the "
                f"async twin ({twin})"
            )
        self._handler: Final = handler
        self._decoder = _Decoder()

    def call(self, record: EventRecord) -> tuple[Callable[..., Any], list[Any]] | None:
        """The handler's method for ``record`` and its arguments, or None when the
        handler does not implement the record's interface.

        Raises:
            ValueError: an unknown event, a record that refers to messages the
                records before it did not carry, or a payload that is not what
                the event records (a value of the wrong shape).
        """
        interfaces = _interface_of(record)
        if interfaces is None:
            raise ValueError(
                f"record {record.seq} names {record.event!r}, which is not an event "
                f"of a chain or streaming handler"
            )
        if not isinstance(self._handler, interfaces):
            return None
        spec = interfaces[0]._langhooks_own_events[record.event]
        args: list[Any] = []
        for param in spec.params:
            if param in record.payload:
                args.append(self._decoded(record, param))
            elif param == "context" and record.event in _CONTEXTS:
                args.append(_CONTEXTS[record.event](handle=self._decoder.handle))
            else:
                raise ValueError(
                    f"record {record.seq} ({record.event}) has no {param!r} in its "
                    f"payload"
                )
        return getattr(self._handler, record.event), args

    def _decoded(self, record: EventRecord, param: str) -> Any:
        # A record comes from outside (a file, a stream): a payload value of the
        # wrong shape is a bad record, reported as such, never a crash.
        try:
            return self._decoder.value(record.payload[param], record)
        except (KeyError, TypeError, AttributeError, IndexError) as error:
            detail = (
                f"the field {error} is missing" if type(error) is KeyError else error
            )
            raise ValueError(
                f"record {record.seq} ({record.event}): its {param!r} is not a "
                f"valid recorded value: {detail}"
            ) from None

    def prime(self, record: EventRecord) -> None:
        """Take in a record delivered before (its messages), calling nothing."""
        self.call(record)

    def replay(self, record: EventRecord) -> None:
        """Deliver ``record`` to a synchronous handler."""
        call = self.call(record)
        if call is not None:
            method, args = call
            method(*args)

    async def areplay(self, record: EventRecord) -> None:
        """Deliver ``record``, awaiting an async handler's method."""
        call = self.call(record)
        if call is not None:
            method, args = call
            result = method(*args)
            if inspect.isawaitable(result):
                await result


def replay_events(records: Iterable[EventRecord], handler: SyncHandler) -> None:
    """Drive ``handler`` with recorded events: the same methods, in the same order,
    with arguments equal to the recorded ones.

    A chain argument is rebuilt from the recorded messages (its model and tools are
    stand-ins that cannot be called); a tool is rebuilt from its description; a
    stream's context carries a fresh cancel handle. Events of an interface the
    handler does not implement are skipped (a chain handler gets a mixed
    recording's chain events).

    Args:
        records: the records, in ``seq`` order (``read_events(...)``).
        handler: a synchronous chain and/or streaming handler (for an async one,
            ``await areplay_events(...)``).

    Raises:
        TypeError: ``handler`` is async, or not a handler.
        ValueError: a record names an unknown event, or refers to messages the
            records before it did not carry.
    """
    replayer = Replayer(handler, "replay_events", twin="areplay_events")
    for record in records:
        replayer.replay(record)


async def areplay_events(records: Iterable[EventRecord], handler: Handler) -> None:
    """``replay_events`` for any handler: an async handler's methods are awaited.

    Args:
        records: the records, in ``seq`` order (``read_events(...)``).
        handler: a chain and/or streaming handler, sync or async.

    Raises:
        TypeError: ``handler`` is not a handler.
        ValueError: as ``replay_events``.
    """
    replayer = Replayer(handler, "areplay_events", twin=None)
    for record in records:
        await replayer.areplay(record)

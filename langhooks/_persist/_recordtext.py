"""Event records written straight to JSON text: the file sink's fast path.

``EventRecorder`` with a file sink used to build each record as a dict (the payload
through ``langhooks.codec``'s encoders, then the record around it) and encode that
dict with ``json``: about 20 µs a record, most of it building dicts that are thrown
away. Here each event's record is written as text directly, one piece per argument.
A value type's text is written by the writer its row of the codec's table makes
(``_core._codec_rows``: the same field list its encoder is made from), which gives,
byte for byte, what ``json_text`` gives for the dict the reference path builds (the
same keys in the same order, compact separators, ASCII escapes through ``json``'s
own string encoder): a value type added to the table is written here with no edit.

What an event's record needs besides its arguments (its name, which argument is
the chain, which are not recorded) is worked out once per recording method
(``Plan``). A value a run hands to event after event is written once per run: a
chain argument whose messages did not change since the run's previous record
reuses its text, and so do a message, a tool call, a tool result and a tool seen
before in the run (the same object: they are frozen, and the caller data inside
them, such as a call's arguments, is not changed in place while the run uses them;
a tool's schema is read again in the next run).

The payload descriptions that are the recorder's own (a chain, a request, a model,
a tool) are written here. Any other value (a rare event's argument: an exception,
a run result, a mapping of headers, ...) is encoded by the reference path and embedded
as its JSON text, which keeps the output identical. A value the reference path
would refuse (caller data that is not JSON) makes ``line`` return None without
changing any state, and the recorder then takes the reference path, which raises
the error it always raised. ``tests/test_events_fast.py`` checks the two paths give
the same bytes for every event.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring_ascii
from operator import is_
from typing import Any, Final, Protocol, final

from .._core._codec_rows import (
    TextWriters,
    ValueCodec,
    write_bool,
    write_data,
    write_optional_str,
    write_scalar,
)
from .._core._invocation import Invocation
from .._core._jsondata import Unencodable, json_text
from .._core._messages import Message, ToolCall, ToolResult
from .._core._model import ChatRequest
from .._core._tools import Tool
from ..chain._chain import LLMChain
from . import _codec
from ._codec import SCHEMA_VERSION

__all__ = ["Plan", "RecordText", "ReferenceEncoder", "Runs", "envelope_line"]

_str: Final[Callable[[str], str]] = encode_basestring_ascii
_time_ns: Final = time.time_ns
_UTC: Final = datetime.UTC


_scalar: Final = write_scalar
_ostr: Final = write_optional_str
_bool: Final = write_bool
_data: Final = write_data


# --- the recorder's own descriptions ----------------------------------------------


def _tool(tool: Tool) -> str:
    return (
        f'{{"type":"Tool","name":{_str(tool.name)},'
        f'"description":{_str(tool.description)},'
        f'"parameters_schema":{_data(tool.parameters_schema)},'
        f'"display_text":{_ostr(tool.display_text)},'
        f'"concurrent":{_bool(tool.concurrent)}}}'
    )


def _model(model: object) -> str:
    name = getattr(model, "model", None)
    return (
        f'{{"type":"ChatModel","class":{_str(type(model).__qualname__)},'
        f'"name":{_str(name) if isinstance(name, str) else "null"}}}'
    )


#: How many values (messages, tool calls and results, tools) a recorder keeps the
#: text of (all dropped when full, and when a run ends).
_MAX_KEPT: Final = 1024

#: The value types whose fields' text a recorder keeps (per run): the frozen values
#: a run hands to event after event.
_KEPT: Final = frozenset({Message, ToolCall, ToolResult})


# --- the reference path's pieces ---------------------------------------------------


class Runs:
    """The messages each run's records have carried so far (per recorder), shared
    by the reference path (``reference``) and the fast path (``sent``)."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent: dict[str | None, tuple[Message, ...]] = {}

    def reference(self, chain: LLMChain, run_id: str | None) -> dict[str, Any]:
        """The chain as a payload value: its counts and the messages that changed
        since this run's previous record."""
        messages = chain.messages
        ref: dict[str, Any] = {
            "type": "LLMChain",
            "message_count": len(messages),
            "current_failure_count": chain.current_failure_count,
        }
        sent = self.sent.get(run_id)
        if sent is messages:
            return ref
        start = 0
        if sent is not None:
            limit = min(len(sent), len(messages))
            while start < limit and sent[start] is messages[start]:
                start += 1
        ref["messages_from"] = start
        ref["messages"] = [
            _codec.encode_fields(message)[1] for message in messages[start:]
        ]
        self.sent[run_id] = messages
        return ref

    def restore(self, run_id: str | None, carried: tuple[Message, ...] | None) -> None:
        """Undo ``reference`` for a record that was not made."""
        if carried is None:
            self.sent.pop(run_id, None)
        else:
            self.sent[run_id] = carried

    def forget(self, run_id: str | None) -> None:
        """The run ended."""
        self.sent.pop(run_id, None)


class ReferenceEncoder(Protocol):
    """What the fast path uses of the recorder's reference encoder."""

    runs: Runs

    def value(self, value: Any, run_id: str | None, chain: LLMChain | None) -> Any:
        """``value`` as a payload value."""
        ...

    def raw_event(self, value: Any) -> Any:
        """A provider's raw event as a payload value."""
        ...


def envelope_line(
    seq: int,
    name: str,
    run_id: str | None,
    invocation_id: str | None,
    parent_id: str | None,
    payload: dict[str, Any],
) -> str:
    """A record's JSON line the reference way: the record as a dict, encoded."""
    return (
        json_text(
            {
                "type": "EventRecord",
                "version": SCHEMA_VERSION,
                "seq": seq,
                "event": name,
                "run_id": run_id,
                "invocation_id": invocation_id,
                "parent_id": parent_id,
                "time": datetime.datetime.now(_UTC).isoformat(),
                "payload": payload,
            }
        )
        + "\n"
    )


# --- records ------------------------------------------------------------------------


@final
class Plan:
    """What recording event ``name`` with arguments ``params`` takes, worked out once
    (each recording method holds the plans of its argument shapes).

    Args:
        name: the event.
        params: the event's parameter names, in order.
        contexts: the events whose ``context`` argument is not recorded.
        terminal: the events after which a run or a stream returns.
    """

    __slots__ = ("chained", "ends_run", "head", "name", "params", "rest", "terminal")

    def __init__(
        self,
        name: str,
        params: tuple[str, ...],
        contexts: frozenset[str],
        terminal: frozenset[str],
    ) -> None:
        self.name = name
        self.params = params
        #: Whether the first argument is the run's chain.
        self.chained = bool(params) and params[0] == "chain"
        #: The record's text from its event name on.
        self.head = f'"event":"{name}",'
        #: The other recorded arguments: their positions and keys, each after a
        #: comma but the payload's first (a stream's cancel handle is not
        #: recorded).
        recorded = [
            index
            for index, param in enumerate(params)
            if not (index == 0 and self.chained)
            and not (param == "context" and name in contexts)
        ]
        self.rest = tuple(
            (index, f'{"," if self.chained or index != recorded[0] else ""}'
             f'"{params[index]}":')
            for index in recorded
        )  # fmt: skip
        #: A file sink is flushed after this event.
        self.terminal = name in terminal
        #: After this event the run's state is dropped.
        self.ends_run = self.terminal and name != "on_complete_response"


@final
class RecordText:
    """Writes records as JSON lines for one recorder (its encoder's chain state).

    Args:
        encoder: the recorder's reference encoder: its ``runs`` hold which
            messages each run's records carried, shared by both paths; values
            without a writer here are encoded by it.
    """

    __slots__ = (
        "_chain",
        "_chain_run",
        "_chain_text",
        "_current",
        "_encoder",
        "_ids_text",
        "_kept",
        "_known",
        "_message",
        "_models",
        "_prefix",
        "_run",
        "_second",
        "_sent",
        "_writers",
    )

    def __init__(self, encoder: ReferenceEncoder) -> None:
        self._encoder = encoder
        self._sent = encoder.runs.sent
        # The previous record's run and current invocation, and its ids' text.
        self._run: Invocation | None = None
        self._current: Invocation | None = None
        self._ids_text = self._ids(None, None)
        # The previous chain argument whose messages the run's records had all
        # carried, its run and its text: a record with the same chain (a frozen
        # snapshot, which most records of a run share with the one before) reuses
        # them.
        self._chain: LLMChain | None = None
        self._chain_run: Invocation | None = None
        self._chain_text = ""
        # The date and time of the current second (and its first microsecond since
        # the epoch), formatted once per second.
        self._second = -1
        self._prefix = ""
        # id(value) -> its text, for the frozen values a run hands to event after
        # event (messages, tool calls and results: their fields; tools: the whole
        # value), and those values, kept alive so that no other takes their id.
        # Cleared when a run ends (a tool's schema is the caller's data, read again
        # in the next run) and when full.
        self._known: dict[int, str] = {}
        self._kept: list[object] = []
        # model classes the reference path described as a ChatModel (the check is a
        # runtime Protocol's, which is slow).
        self._models: set[type] = set()
        # Each value type's writers, made by its row of the codec's table: of its
        # fields (which a nested value of the type is written by) and of a whole
        # value (an argument).
        fields: TextWriters = {}
        self._writers: dict[type, Callable[[Any], str]] = {}
        for row in _codec.ROWS.values():
            self._add(row, fields)
        self._message = fields[Message]
        self._writers.update({Tool: self._tool, tuple: self._items, list: self._items})

    def line(
        self, plan: Plan, args: Sequence[Any], seq: int, current: Invocation | None
    ) -> str | None:
        """The record's JSON line, or None when an argument is not data the
        reference path would encode (it then raises the error).

        Args:
            plan: the event's plan.
            args: the event's arguments.
            seq: the record's number.
            current: the invocation current where the event fired.
        """
        commit: tuple[Message, ...] | None = None
        chain: LLMChain | None = None
        run = None
        body = ""  # the payload's text: its keys (each but the first after a comma)
        try:
            if plan.chained:
                chain = args[0]
                if chain is self._chain:
                    body = self._chain_text
                    run = self._chain_run
                elif type(chain) is not LLMChain:
                    return None  # the reference path refuses it
                else:
                    run = chain.invocation
                    body, commit = self._chain_of(chain, run)
            writers = self._writers
            for index, key in plan.rest:
                arg = args[index]
                writer = writers.get(type(arg))
                if writer is None:
                    body = f"{body}{key}{self._other(arg, key, run, chain)}"
                else:
                    body = f"{body}{key}{writer(arg)}"
        except (Unencodable, TypeError, ValueError, AttributeError):
            return None
        if commit is not None:
            self._sent[None if run is None else run.id] = commit
            self._chain = None  # an older snapshot of the run is no longer current
        if run is not self._run or current is not self._current:
            self._ids_text = self._ids(run, current)
        micro = _time_ns() // 1000 - self._second
        if 0 < micro < 1_000_000:  # the usual: within the current second
            # str() of a 7-digit number is cheaper than the format spec "06d".
            stamp = f"{self._prefix}.{str(1_000_000 + micro)[1:]}+00:00"
        else:
            stamp = self.time(micro + self._second)
        return (
            f'{{"type":"EventRecord","version":{SCHEMA_VERSION},"seq":{seq},'
            f'{plan.head}{self._ids_text}{stamp}","payload":{{{body}}}}}\n'
        )

    def _ids(self, run: Invocation | None, current: Invocation | None) -> str:
        """The record's ids as text, remembered for the next record."""
        self._run = run
        self._current = current
        run_id: str | None = None
        if run is not None:
            run_id = run.id
            if current is None:
                current = run
        return (
            f'"run_id":{_scalar(run_id)},'
            f'"invocation_id":{_scalar(None if current is None else current.id)},'
            f'"parent_id":{_scalar(None if current is None else current.parent_id)},'
            '"time":"'
        )

    def time(self, micro: int) -> str:
        """The time ``micro`` microseconds after the epoch, as
        ``datetime.isoformat`` writes it (no fraction on a whole second); the date
        and time of its second are kept for the next records."""
        second, fraction = divmod(micro, 1_000_000)
        if second * 1_000_000 != self._second:
            stamp = datetime.datetime.fromtimestamp(second, _UTC)
            self._prefix = stamp.isoformat()[:-6]  # without "+00:00"
            self._second = second * 1_000_000
        if fraction:
            return f"{self._prefix}.{str(1_000_000 + fraction)[1:]}+00:00"
        return self._prefix + "+00:00"

    def _other(
        self, value: Any, key: str, run: Invocation | None, chain: LLMChain | None
    ) -> str:
        """A value of a type without a writer of its own."""
        kind = type(value)
        if kind in self._models:
            return _model(value)
        if kind is ChatRequest:
            return self._request(value, chain)
        if key.endswith('"raw_event":'):
            return json_text(self._encoder.raw_event(value))
        # A rarer value: the reference path's JSON, embedded.
        encoded = self._encoder.value(value, None if run is None else run.id, chain)
        if type(encoded) is dict and encoded.get("type") == "ChatModel":
            self._models.add(kind)
        return json_text(encoded)

    def _items(self, items: Sequence[Any]) -> str:
        writers = self._writers
        if len(items) == 1:  # the usual: one delta
            writer = writers.get(type(items[0]))
            if writer is None:
                raise TypeError("no writer")  # the reference path takes the record
            return f"[{writer(items[0])}]"
        out: list[str] = []
        for item in items:
            writer = writers.get(type(item))
            if writer is None:
                raise TypeError("no writer")  # the reference path takes the record
            out.append(writer(item))
        return "[" + ",".join(out) + "]"

    def _keep(self, value: object, text: str) -> str:
        if len(self._kept) >= _MAX_KEPT:
            self._known.clear()
            self._kept.clear()
        self._known[id(value)] = text
        self._kept.append(value)
        return text

    def _add(self, row: ValueCodec, fields: TextWriters) -> None:
        """Make ``row``'s writers, after those of the rows nested in it."""
        if row.cls in fields:
            return
        for nested in row.nested_rows:
            self._add(nested, fields)
        write_fields, write_value = row.text_writers(fields)
        if row.cls in _KEPT:
            write_fields = self._keeping(write_fields)
            write_value = self._tagged(row.tag, write_fields)
        fields[row.cls] = write_fields
        self._writers[row.cls] = write_value

    def _keeping(self, write: Callable[[Any], str]) -> Callable[[Any], str]:
        """``write``, the text kept per value (for the rest of the run)."""
        known, keep = self._known, self._keep

        def kept(value: Any) -> str:
            text = known.get(id(value))
            return keep(value, write(value)) if text is None else text

        return kept

    @staticmethod
    def _tagged(tag: str, write: Callable[[Any], str]) -> Callable[[Any], str]:
        """A whole value of type ``tag`` whose fields ``write`` writes."""
        head = f'{{"type":"{tag}",'
        return lambda value: head + write(value) + "}"

    def _chain_of(
        self, chain: LLMChain, run: Invocation | None
    ) -> tuple[str, tuple[Message, ...] | None]:
        """The chain argument's text, and the messages to note as carried when the
        record is made (None: no new ones)."""
        messages = chain.messages
        failures = chain.current_failure_count
        sent = self._sent.get(None if run is None else run.id)
        if sent is messages:  # line() found no text for it in the cache
            text = (
                f'"chain":{{"type":"LLMChain","message_count":{len(messages)},'
                f'"current_failure_count":{_scalar(failures)}}}'
            )
            self._chain = chain
            self._chain_run = run
            self._chain_text = text
            return text, None
        start = 0
        if sent is not None:
            # Usually the run's messages grew: check that without a Python loop.
            start = len(sent)
            if start > len(messages) or not all(map(is_, sent, messages)):
                start = 0
                limit = min(len(sent), len(messages))
                while start < limit and sent[start] is messages[start]:
                    start += 1
        text = (
            f'"chain":{{"type":"LLMChain","message_count":{len(messages)},'
            f'"current_failure_count":{_scalar(failures)},"messages_from":{start},'
            '"messages":['
            + ",".join(
                ["{" + self._message(message) + "}" for message in messages[start:]]
            )
            + "]}"
        )
        return text, messages

    def _request(self, request: ChatRequest, chain: LLMChain | None) -> str:
        if chain is not None and request.messages is chain.messages:
            messages = '"messages_of_chain":true'
        else:
            messages = (
                '"messages":['
                + ",".join(
                    ["{" + self._message(message) + "}" for message in request.messages]
                )
                + "]"
            )
        tools = ",".join([self._tool(tool) for tool in request.tools])
        return f'{{"type":"ChatRequest",{messages},"tools":[{tools}]}}'

    def _tool(self, tool: Tool) -> str:
        if type(tool) is not Tool:  # a subclass: the reference path describes it
            return json_text(self._encoder.value(tool, None, None))
        text = self._known.get(id(tool))
        return self._keep(tool, _tool(tool)) if text is None else text

    def forget_chain(self) -> None:
        """Drop the cached chain text: the reference path is taking a record, and
        may note other messages as carried."""
        self._chain = None

    def forget(self) -> None:
        """A run ended: drop the cached chain text and the values' texts (a tool's
        schema is read again in the next run)."""
        self._chain = None
        self._known.clear()
        self._kept.clear()

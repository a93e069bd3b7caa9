"""Event records written straight to JSON text: the file sink's fast path.

``EventRecorder`` with a file sink used to build each record as a dict (the payload
through ``langhooks.codec``'s encoders, then the record around it) and encode that
dict with ``json``: about 20 µs a record, most of it building dicts that are thrown
away. Here each event's record is written as text directly, one piece per argument,
by per-type writers that give, byte for byte, what ``json_text`` gives for the dict
the reference path builds (the same keys in the same order, compact separators,
ASCII escapes through ``json``'s own string encoder). A chain argument whose
messages did not change since the run's previous record reuses its text.

Any value this module has no writer for (a rare event's argument: an exception, a
run result, a mapping of headers, ...) is encoded by the reference path and embedded
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
from types import MappingProxyType
from typing import Any, Final, Protocol

from .._core._chain_callbacks import ReviewContext
from .._core._messages import (
    ChatResponse,
    ContentPart,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from .._core._model import ChatRequest
from .._core._tools import Tool
from ..chain._chain import LLMChain
from . import _codec
from ._codec import SCHEMA_VERSION
from ._jsondata import Unencodable, json_text, jsonable

__all__ = ["RecordText", "ReferenceEncoder", "Runs", "envelope_line"]

_str: Final[Callable[[str], str]] = encode_basestring_ascii
_UTC: Final = datetime.UTC


def _scalar(value: Any) -> str:
    """A str, int, bool or None field as ``json_text`` writes it."""
    kind = type(value)
    if kind is str:
        return _str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    return json_text(value)  # a float (NaN refused as json_text does), a subclass


def _ostr(value: str | None) -> str:
    """A str-or-None field (TypeError for anything else: the reference path then
    takes the record)."""
    return "null" if value is None else _str(value)


#: An int field validated as a count (never a bool).
_int: Final[Callable[[int], str]] = int.__repr__


def _data(value: Any) -> str:
    """Caller data (arguments, metadata, ...), checked as the reference path does."""
    if value is None:
        return "null"
    kind = type(value)
    if (kind is MappingProxyType or kind is dict) and not value:
        return "{}"  # the usual metadata
    return json_text(jsonable(value))


# --- value types: the fields, as codec's encoders order them --------------------------


def _part(part: ContentPart) -> str:
    return f'{{"content_type":{_str(part.type)},"content":{_str(part.content)}}}'


def _parts(parts: Sequence[ContentPart]) -> str:
    return "[" + ",".join([_part(part) for part in parts]) + "]"


def _call_fields(call: ToolCall) -> str:
    return (
        f'"call_id":{_str(call.call_id)},"name":{_str(call.name)},'
        f'"arguments":{_data(call.arguments)},"index":{_int(call.index)},'
        f'"display_text":{_ostr(call.display_text)}'
    )


def _result_fields(result: ToolResult) -> str:
    return (
        f'"tool_call_id":{_str(result.tool_call_id)},'
        f'"name":{_str(result.name)},"content":{_parts(result.content)},'
        f'"display_text":{_ostr(result.display_text)},'
        f'"is_error":{_scalar(result.is_error)},'
        f'"is_interrupt":{_scalar(result.is_interrupt)},'
        f'"interrupt_data":{_data(result.interrupt_data)},'
        f'"processed_content":{_data(result.processed_content)}'
    )


def _message_fields(message: Message) -> str:
    calls = message.tool_calls
    results = message.tool_results
    return (
        f'"role":{_str(message.role)},"content":{_parts(message.content)},'
        '"tool_calls":['
        + ",".join(["{" + _call_fields(call) + "}" for call in calls])
        + '],"tool_results":['
        + ",".join(["{" + _result_fields(result) + "}" for result in results])
        + f'],"status":{_str(message.status)},'
        f'"metadata":{_data(message.metadata)}'
    )


def _message(message: Message) -> str:
    return "{" + _message_fields(message) + "}"


def _usage_fields(usage: TokenUsage) -> str:
    return (
        f'"input_tokens":{_int(usage.input_tokens)},'
        f'"output_tokens":{_int(usage.output_tokens)},'
        f'"raw":{_data(usage.raw)},"cumulative":{_scalar(usage.cumulative)}'
    )


def _partial_call_fields(partial: PartialToolCall) -> str:
    return (
        f'"index":{_int(partial.index)},"id":{_ostr(partial.id)},'
        f'"name":{_str(partial.name)},'
        f'"partial_arguments":{_str(partial.partial_arguments)}'
    )


def _delta(delta: MessageDelta) -> str:
    call, usage = delta.tool_call, delta.usage
    return (
        f'{{"type":"MessageDelta","text":{_str(delta.text)},'
        f'"thinking":{_str(delta.thinking)},"tool_call":'
        + ("null" if call is None else "{" + _partial_call_fields(call) + "}")
        + ',"usage":'
        + ("null" if usage is None else "{" + _usage_fields(usage) + "}")
        + f',"status":{_ostr(delta.status)}}}'
    )


def _response(response: ChatResponse) -> str:
    usage, reason = response.token_usage, response.finish_reason
    return (
        '{"type":"ChatResponse","message":'
        + _message(response.message)
        + f',"id":{_scalar(response.id)},"model_name":{_scalar(response.model_name)}'
        + ',"token_usage":'
        + ("null" if usage is None else "{" + _usage_fields(usage) + "}")
        + ',"finish_reason":'
        + ("null" if reason is None else _scalar(reason.value))
        + f',"metadata":{_data(response.metadata)}}}'
    )


def _tool(tool: Tool) -> str:
    return (
        f'{{"type":"Tool","name":{_scalar(tool.name)},'
        f'"description":{_scalar(tool.description)},'
        f'"parameters_schema":{_data(tool.parameters_schema)},'
        f'"display_text":{_scalar(tool.display_text)},'
        f'"concurrent":{_scalar(tool.concurrent)}}}'
    )


def _model(model: object) -> str:
    name = getattr(model, "model", None)
    return (
        f'{{"type":"ChatModel","class":{_str(type(model).__qualname__)},'
        f'"name":{_str(name) if isinstance(name, str) else "null"}}}'
    )


#: How many tools a recorder keeps the text of (cleared when full).
_MAX_TOOLS: Final = 256

_WRITERS: Final[dict[type, Callable[[Any], str]]] = {
    MessageDelta: _delta,
    ToolCall: lambda call: '{"type":"ToolCall",' + _call_fields(call) + "}",
    ToolResult: lambda result: '{"type":"ToolResult",' + _result_fields(result) + "}",
    Message: lambda message: '{"type":"Message",' + _message_fields(message) + "}",
    TokenUsage: lambda usage: '{"type":"TokenUsage",' + _usage_fields(usage) + "}",
    ChatResponse: _response,
    PartialResponse: lambda partial: (
        f'{{"type":"PartialResponse","text":{_str(partial.text)}}}'
    ),
    PartialThinking: lambda partial: (
        f'{{"type":"PartialThinking","text":{_str(partial.text)}}}'
    ),
    PartialToolCall: lambda partial: (
        '{"type":"PartialToolCall",' + _partial_call_fields(partial) + "}"
    ),
    ReviewContext: lambda review: (
        '{"type":"ReviewContext","human_decision":'
        + _scalar(review.human_decision)
        + f',"custom_context":{_data(review.custom_context)}}}'
    ),
}


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


# --- the time -------------------------------------------------------------------------


class _Clock:
    """``datetime.now(UTC).isoformat()``, with the date and time of the current
    second formatted once per second. One per recorder: it is used under the
    recorder's lock."""

    __slots__ = ("_prefix", "_second")

    def __init__(self) -> None:
        self._second = -1
        self._prefix = ""

    def now(self) -> str:
        """Now."""
        return self.text(time.time_ns())

    def text(self, ns: int) -> str:
        """The time ``ns`` nanoseconds after the epoch, to the microsecond below."""
        second, micro = divmod(ns // 1000, 1_000_000)
        if second != self._second:
            stamp = datetime.datetime.fromtimestamp(second, _UTC)
            self._prefix = stamp.isoformat()[:-6]  # without "+00:00"
            self._second = second
        if micro:
            return f"{self._prefix}.{micro:06d}+00:00"
        return self._prefix + "+00:00"


# --- records ------------------------------------------------------------------------


class RecordText:
    """Writes records as JSON lines for one recorder (its encoder's chain state).

    Args:
        encoder: the recorder's reference encoder: its ``runs`` hold which
            messages each run's records carried, shared by both paths; values
            without a writer here are encoded by it.
        contexts: the events whose ``context`` argument is not recorded.
    """

    __slots__ = (
        "_chains",
        "_clock",
        "_contexts",
        "_encoder",
        "_ids",
        "_ids_text",
        "_models",
        "_plans",
        "_sent",
        "_tools",
    )

    def __init__(self, encoder: ReferenceEncoder, contexts: frozenset[str]) -> None:
        self._encoder = encoder
        self._clock = _Clock()
        self._sent = encoder.runs.sent
        self._contexts = contexts
        self._plans: dict[
            tuple[str, Sequence[str]], tuple[str, bool, tuple[tuple[int, str], ...]]
        ] = {}
        self._ids: tuple[str | None, str | None, str | None] | None = None
        self._ids_text = ""
        # run id -> (the messages tuple and failure count, the chain's text)
        self._chains: dict[str | None, tuple[tuple[Message, ...], int, str]] = {}
        # id(tool) -> (the tool, its text): a Tool is frozen, and a run hands the
        # same Tool objects to event after event. Its schema is recorded as it was
        # when first seen in the run (a schema is the caller's data; it is not
        # changed while tools run). Cleared when a run ends.
        self._tools: dict[int, tuple[Tool, str]] = {}
        # model classes the reference path described as a ChatModel (the check is a
        # runtime Protocol's, which is slow).
        self._models: set[type] = set()

    def line(
        self,
        name: str,
        params: Sequence[str],
        args: Sequence[Any],
        seq: int,
        run_id: str | None,
        invocation_id: str | None,
        parent_id: str | None,
    ) -> str | None:
        """The record's JSON line, or None when an argument is not data the
        reference path would encode (it then raises the error)."""
        plan = self._plans.get((name, params))
        if plan is None:
            plan = self._plans[name, params] = self._plan(name, params)
        event_text, chained, rest = plan
        commit: tuple[Message, ...] | None = None
        chain: LLMChain | None = None
        pieces: list[str] = []
        try:
            if chained:
                chain = args[0]
                if type(chain) is not LLMChain:
                    return None  # the reference path refuses it
                messages = chain.messages
                cached = self._chains.get(run_id)
                if (
                    cached is not None
                    and cached[0] is messages
                    and cached[1] == chain.current_failure_count
                    and self._sent.get(run_id) is messages
                ):
                    pieces.append(cached[2])
                else:
                    text, commit = self._chain(chain, run_id)
                    pieces.append(text)
            for index, key in rest:
                arg = args[index]
                kind = type(arg)
                writer = _WRITERS.get(kind)
                if writer is not None:
                    text = writer(arg)
                elif kind is Tool:
                    text = self._tool(arg)
                elif kind is tuple or kind is list:
                    text = self._items(arg)
                elif kind in self._models:
                    text = _model(arg)
                elif kind is ChatRequest:
                    text = self._request(arg, chain)
                elif key == '"raw_event":':
                    text = json_text(self._encoder.raw_event(arg))
                else:  # a rarer value: the reference path's JSON, embedded
                    value = self._encoder.value(arg, run_id, chain)
                    if type(value) is dict and value.get("type") == "ChatModel":
                        self._models.add(kind)
                    text = json_text(value)
                pieces.append(key + text)
        except (Unencodable, TypeError, ValueError, AttributeError):
            return None
        if commit is not None:
            self._sent[run_id] = commit
        ids = (run_id, invocation_id, parent_id)
        if ids != self._ids:
            self._ids = ids
            self._ids_text = (
                f'"run_id":{_scalar(run_id)},"invocation_id":{_scalar(invocation_id)},'
                f'"parent_id":{_scalar(parent_id)},"time":"'
            )
        return (
            f'{{"type":"EventRecord","version":{SCHEMA_VERSION},"seq":{seq},'
            f'{event_text}{self._ids_text}{self._clock.now()}","payload":{{'
            + ",".join(pieces)
            + "}}\n"
        )

    def _plan(
        self, name: str, params: Sequence[str]
    ) -> tuple[str, bool, tuple[tuple[int, str], ...]]:
        """What ``line`` writes for event ``name``: its text, whether its first
        argument is the chain, and the other recorded arguments' positions and
        keys (a stream's cancel handle is not recorded)."""
        chained = bool(params) and params[0] == "chain"
        rest = tuple(
            (index, f'"{param}":')
            for index, param in enumerate(params)
            if not (index == 0 and chained)
            and not (param == "context" and name in self._contexts)
        )
        return f'"event":"{name}",', chained, rest

    def _items(self, items: Sequence[Any]) -> str:
        out: list[str] = []
        for item in items:
            writer = _WRITERS.get(type(item))
            if writer is None:
                raise TypeError("no writer")  # the reference path takes it
            out.append(writer(item))
        return "[" + ",".join(out) + "]"

    def _chain(
        self, chain: LLMChain, run_id: str | None
    ) -> tuple[str, tuple[Message, ...] | None]:
        messages = chain.messages
        failures = chain.current_failure_count
        sent = self._sent.get(run_id)
        if sent is messages:  # line() found no text for it in the cache
            text = (
                f'"chain":{{"type":"LLMChain","message_count":{len(messages)},'
                f'"current_failure_count":{_scalar(failures)}}}'
            )
            self._chains[run_id] = (messages, failures, text)
            return text, None
        start = 0
        if sent is not None:
            limit = min(len(sent), len(messages))
            while start < limit and sent[start] is messages[start]:
                start += 1
        text = (
            f'"chain":{{"type":"LLMChain","message_count":{len(messages)},'
            f'"current_failure_count":{_scalar(failures)},"messages_from":{start},'
            '"messages":['
            + ",".join([_message(message) for message in messages[start:]])
            + "]}"
        )
        return text, messages

    def _request(self, request: ChatRequest, chain: LLMChain | None) -> str:
        if chain is not None and request.messages is chain.messages:
            messages = '"messages_of_chain":true'
        else:
            messages = (
                '"messages":['
                + ",".join([_message(message) for message in request.messages])
                + "]"
            )
        tools = ",".join([self._tool(tool) for tool in request.tools])
        return f'{{"type":"ChatRequest",{messages},"tools":[{tools}]}}'

    def _tool(self, tool: Tool) -> str:
        if type(tool) is not Tool:  # a subclass: the reference path describes it
            return json_text(self._encoder.value(tool, None, None))
        cached = self._tools.get(id(tool))
        if cached is not None and cached[0] is tool:
            return cached[1]
        if len(self._tools) >= _MAX_TOOLS:
            self._tools.clear()
        text = _tool(tool)
        self._tools[id(tool)] = (tool, text)
        return text

    def forget(self, run_id: str | None) -> None:
        """Drop a finished run's cached chain text, and the tools' texts (a tool's
        schema is read again in the next run)."""
        self._chains.pop(run_id, None)
        self._tools.clear()

"""One bridged run: its chain snapshot and how LangChain's calls become events.

``BridgedRun`` holds what ordering needs and nothing else: the run's ``LLMChain``
snapshot (the first argument of every chain event, so ``EventRecorder``,
``OpenTelemetryHandler`` and the Redis publisher read it as they read a chain
run's), the model calls in flight, and the tool batch waiting for its results. Each
method returns the events to deliver, in the contract's order, as ``Event``
tuples; ``_deliver`` delivers them (sync or async), so the order is written once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, final

import attrs
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.tool import ToolCallChunk
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp

from ..._core._chain_callbacks import ChainCallbackHandler
from ..._core._invocation import Invocation
from ..._core._messages import (
    CompleteToolCall,
    LangHooksError,
    Message,
    MessageDelta,
    PartialThinking,
    PartialToolCall,
    ToolCall,
    ToolResult,
    trusted_partial_response,
    trusted_text_delta,
)
from ..._core._model import ChatRequest
from ..._core._result import run_result
from ..._core._stream_handler import (
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ..._core._tools import Tool
from ...chain._chain import LLMChain
from ...chain._tool_results import interrupt_data, result_of
from ._convert import (
    FrameworkModel,
    as_error,
    as_message,
    as_response,
    as_tool,
    chunk_parts,
    tool_result,
)

__all__ = [
    "CHAIN",
    "PRE",
    "STREAM",
    "BridgedRun",
    "Event",
    "new_invocation",
    "pause_data",
]

#: Where an event goes: the chain handlers (called without an invocation), the
#: streaming handlers, or ``on_tool_pre_execution`` (called in the tool's context).
CHAIN: Final = 0
STREAM: Final = 1
PRE: Final = 2
Event: TypeAlias = tuple[int, str, tuple[Any, ...]]

_C = ChainCallbackHandler
_S = StreamingChatResponseHandler
_PARTIALS: Final = frozenset(
    {"on_partial_response", "on_partial_thinking", "on_partial_tool_call"}
)


def _chain_event(method: Any, *args: Any) -> Event:
    return CHAIN, method.__name__, args


def _stream_event(method: Any, *args: Any) -> Event:
    return STREAM, method.__name__, args


@final
class _ModelCall:
    """One model attempt in flight: what its stream said so far."""

    __slots__ = (
        "handle",
        "identified",
        "ids",
        "names",
        "streamed",
        "text_context",
        "thinking_context",
        "tool_context",
    )

    def __init__(self) -> None:
        self.handle = handle = StreamingHandle()
        self.text_context = PartialResponseContext(handle=handle)
        self.thinking_context = PartialThinkingContext(handle=handle)
        self.tool_context = PartialToolCallContext(handle=handle)
        self.streamed = False
        self.identified: set[int] = set()
        self.names: dict[int, str] = {}
        self.ids: dict[int, str] = {}


@final
class BridgedRun:
    """The state of one run a framework executes (see the module)."""

    def __init__(
        self,
        invocation: Invocation,
        *,
        messages: Sequence[BaseMessage] = (),
        tools: Sequence[Tool] = (),
        model: str = "model",
        framework: str = "LangChain",
        hears: frozenset[str] | None = None,
    ) -> None:
        #: Each framework message converted so far, by its id (with the message,
        #: so the id stays its own): a model call's conversation is mostly the
        #: last one's, and converting it again each turn would cost the square.
        self.converted: dict[int, tuple[BaseMessage, Message]] = {}
        self.batches: dict[
            tuple[int, ...], tuple[tuple[BaseMessage, ...], Message]
        ] = {}
        #: The framework's tool message behind each result of the batch.
        self.sources: dict[str, ToolMessage] = {}
        #: The conversation; the snapshot catches up with it when an event that
        #: some handler hears needs it (one copy for several messages).
        self.messages = self.conversation(messages)
        self._chain = LLMChain(
            FrameworkModel(model, framework),
            tools=tools,
            messages=self.messages,
            custom_context=invocation.custom_context,
            invocation=invocation,
        )
        self.tools: dict[str, Tool] = {tool.name: tool for tool in tools}
        # What the handlers listen to, so a run builds only the events and values
        # some handler receives (None: everything).
        self.hears: Final = hears
        self.deltas: Final = hears is None or "on_llm_new_delta" in hears
        self.partials: Final = hears is None or not hears.isdisjoint(_PARTIALS)
        self.calls: dict[Any, _ModelCall] = {}
        self.failed: tuple[LangHooksError, float] | None = None
        #: The calls of the last answer, and each one's result once it has one.
        self.batch: dict[str, ToolResult | None] = {}
        self.tool_runs: dict[Any, tuple[ToolCall, Tool, Invocation]] = {}
        self.ended = False
        #: What a node's ``interrupt()`` said, when the graph paused.
        self.paused: Mapping[str, Any] | None = None
        self.lock: Final = threading.RLock()

    @property
    def chain(self) -> LLMChain:
        """The run's snapshot, with every message so far."""
        chain = self._chain
        if chain.messages is not self.messages:
            chain = self._chain = attrs.evolve(chain, messages=self.messages)
        return chain

    def _add(self, message: Message) -> None:
        self.messages = (*self.messages, message)

    def emit(self, events: list[Event], method: Any, *args: Any) -> None:
        """Append chain event ``method`` on the current snapshot, when some
        handler hears it."""
        if self.hears is None or method.__name__ in self.hears:
            events.append((CHAIN, method.__name__, (self.chain, *args)))

    @property
    def invocation(self) -> Invocation:
        """The run's invocation."""
        invocation = self._chain.invocation
        assert invocation is not None  # set in __init__
        return invocation

    # --- the run ------------------------------------------------------------------

    def start(self) -> list[Event]:
        """The run began."""
        return [_chain_event(_C.on_run_start, self.chain)]

    def complete(
        self,
        status: Literal["ok", "interrupted"] = "ok",
        interrupt_data: Mapping[str, Any] | None = None,
    ) -> list[Event]:
        """The run finished (its last event); nothing when it already ended."""
        if self.ended:
            return []
        events = self.close_batch()
        self.ended = True
        result = run_result(
            status=status, chain=self.chain, interrupt_data=interrupt_data
        )
        events.append(_chain_event(_C.on_run_complete, self.chain, result))
        return events

    def fail(self, error: BaseException) -> list[Event]:
        """The run gave up (its last event); nothing when it already ended."""
        if self.ended:
            return []
        self.ended = True
        return [_chain_event(_C.on_error, self.chain, as_error(error))]

    def use_tools(self, tools: Sequence[BaseTool | Mapping[str, Any]]) -> None:
        """The tools the model may call from now on (LangChain tools or the
        schemas bound to a model call); converted only when they change."""
        named = {_tool_name(tool): tool for tool in tools}
        if named.keys() == self.tools.keys():
            return
        self.tools = {name: as_tool(tool) for name, tool in named.items()}
        self._chain = attrs.evolve(self._chain, tools=tuple(self.tools.values()))

    def conversation(self, messages: Sequence[BaseMessage]) -> tuple[Message, ...]:
        """``messages`` as langhooks messages, converting only the new ones, with
        each run of tool messages joined into one (a batch's, as ``LLMChain``
        keeps it; the batch's own message when this run reported it)."""
        out: list[Message] = []
        tools: list[BaseMessage] = []
        for message in messages:
            if isinstance(message, ToolMessage):
                tools.append(message)
                continue
            if tools:
                out.append(self._batch_message(tools))
                tools = []
            out.append(self._converted(message))
        if tools:
            out.append(self._batch_message(tools))
        return tuple(out)

    def _converted(self, message: BaseMessage) -> Message:
        entry = self.converted.get(id(message))
        if entry is None or entry[0] is not message:
            entry = (message, as_message(message))
            self.converted[id(message)] = entry
        return entry[1]

    def _batch_message(self, tools: Sequence[BaseMessage]) -> Message:
        key = tuple(map(id, tools))
        known = self.batches.get(key)
        if known is not None and all(
            a is b for a, b in zip(known[0], tools, strict=True)
        ):
            return known[1]
        results = [r for m in tools for r in self._converted(m).tool_results]
        message = Message.tool(results)
        self.batches[key] = (tuple(tools), message)
        return message

    def use_model(self, name: str | None) -> None:
        """The name of the model the framework calls from now on."""
        model = self._chain.model
        if name and isinstance(model, FrameworkModel) and model.model != name:
            self._chain = attrs.evolve(
                self._chain, model=FrameworkModel(name, model.framework)
            )

    def tool(self, name: str) -> Tool | None:
        """The tool of that name, if the run knows it."""
        return self.tools.get(name)

    # --- model calls ----------------------------------------------------------------

    def model_start(self, key: Any, messages: Sequence[BaseMessage]) -> list[Event]:
        """A model attempt begins (a retry when the last one failed)."""
        events = self.close_batch()
        if self.failed is not None:
            error, at = self.failed
            self.failed = None
            waited = max(0.0, time.monotonic() - at)
            self.emit(events, _C.on_llm_retry, error, waited)
        conversation = self.conversation(messages)
        known = self.messages
        if len(conversation) != len(known) or any(
            a is not b for a, b in zip(conversation, known, strict=True)
        ):
            self.messages = conversation
        self.calls[key] = _ModelCall()
        if self.hears is None or "on_llm_call_start" in self.hears:
            chain = self.chain
            request = ChatRequest(messages=chain.messages, tools=chain.tools)
            self.emit(events, _C.on_llm_call_start, chain.model, request)
        return events

    def token(self, key: Any, chunk: BaseMessage | None, text: str) -> list[Event]:
        """One streamed chunk of attempt ``key``."""
        call = self.calls.get(key)
        if call is None or call.handle.is_cancelled:
            return []
        events: list[Event] = []
        if chunk is None:
            pieces: Sequence[tuple[str, str]] = [("text", text)] if text else []
        else:
            pieces = list(chunk_parts(chunk))
        for kind, piece in pieces:
            call.streamed = True
            thinking = kind == "thinking"
            if self.partials:
                if thinking:
                    partial: Any = PartialThinking(text=piece)
                    events.append(
                        (
                            STREAM,
                            "on_partial_thinking",
                            (partial, call.thinking_context),
                        )
                    )
                else:
                    partial = trusted_partial_response(piece)
                    events.append(
                        (STREAM, "on_partial_response", (partial, call.text_context))
                    )
            if self.deltas:
                delta = trusted_text_delta(piece, thinking=thinking)
                events.append((CHAIN, "on_llm_new_delta", (self.chain, (delta,))))
        if isinstance(chunk, AIMessageChunk):
            for fragment in chunk.tool_call_chunks:
                events.extend(self._fragment(call, fragment))
        return events

    def _fragment(self, call: _ModelCall, fragment: ToolCallChunk) -> list[Event]:
        index = fragment.get("index") or 0
        if fragment.get("name"):
            call.names.setdefault(index, str(fragment["name"]))
        if fragment.get("id"):
            call.ids.setdefault(index, str(fragment["id"]))
        name = call.names.get(index)
        if name is None:
            return []  # a fragment before its call's name: nothing to say yet
        call.streamed = True
        partial = PartialToolCall(
            index=index,
            id=call.ids.get(index),
            name=name,
            partial_arguments=fragment.get("args") or "",
        )
        events: list[Event] = []
        if self.deltas:
            delta = MessageDelta(tool_call=partial)
            events.append(_chain_event(_C.on_llm_new_delta, self.chain, (delta,)))
        if self.partials:
            events.append(
                _stream_event(_S.on_partial_tool_call, partial, call.tool_context)
            )
        tool = self.tools.get(name)
        if index not in call.identified and tool is not None:
            call.identified.add(index)
            pending = ToolCall(
                call_id=partial.id or f"pending-{index}", name=name, index=index
            )
            events.append(
                _chain_event(_C.on_tool_call_identified, self.chain, pending, tool)
            )
        return events

    def model_end(self, key: Any, message: BaseMessage | None) -> list[Event]:
        """Attempt ``key`` answered ``message``."""
        call = self.calls.pop(key, None)
        if call is None or not isinstance(message, AIMessage):
            return []
        response = as_response(message, self.chain.model.model)  # type: ignore[attr-defined]  # always a FrameworkModel
        answer = response.message
        self.converted[id(message)] = (message, answer)
        events: list[Event] = []
        if not call.handle.is_cancelled:
            events.extend(
                _stream_event(
                    _S.on_complete_tool_call,
                    CompleteToolCall(index=c.index, tool_call=c),
                )
                for c in answer.tool_calls
            )
            events.append(_stream_event(_S.on_complete_response, response))
        if call.streamed and self.deltas:
            end = MessageDelta(status=answer.status, usage=response.token_usage)
            self.emit(events, _C.on_llm_new_delta, (end,))
        self.emit(events, _C.on_llm_call_complete, response)
        if not call.streamed:
            self.emit(events, _C.on_llm_new_message, answer)
        for tool_call in answer.tool_calls:
            tool = self.tools.get(tool_call.name)
            if tool_call.index not in call.identified and tool is not None:
                self.emit(events, _C.on_tool_call_identified, tool_call, tool)
        self._add(answer)
        self.emit(events, _C.on_message_processed, answer)
        if response.token_usage is not None:
            self.emit(events, _C.on_llm_token_usage, response.token_usage)
        self.batch = {c.call_id: None for c in answer.tool_calls}
        return events

    def model_error(self, key: Any, error: BaseException) -> list[Event]:
        """Attempt ``key`` failed (it may be retried: the next attempt says so)."""
        call = self.calls.pop(key, None)
        if call is None:
            return []
        failure = as_error(error)
        self.failed = (failure, time.monotonic())
        events = [_chain_event(_C.on_llm_error, self.chain, failure)]
        if not call.handle.is_cancelled:
            events.append(_stream_event(_S.on_error, failure))
        return events

    # --- tools --------------------------------------------------------------------

    def tool_start(
        self, key: Any, call: ToolCall, *, announce: bool = True
    ) -> list[Event]:
        """A tool call begins running (``announce``: say it will run first)."""
        tool = self.tools.get(call.name) or as_tool({"name": call.name})
        invocation = Invocation(
            name=tool.name,
            parent_id=self.invocation.id,
            custom_context=self._chain.custom_context,
        )
        self.tool_runs[key] = (call, tool, invocation)
        events: list[Event] = []
        if announce:
            self.emit(events, _C.on_tool_execution_started, call, tool)
        if self.hears is None or "on_tool_pre_execution" in self.hears:
            events.append((PRE, "on_tool_pre_execution", (self.chain, call, tool)))
        return events

    def tool_invocation(self, key: Any) -> Invocation | None:
        """The invocation of tool run ``key``, while it runs."""
        entry = self.tool_runs.get(key)
        return None if entry is None else entry[2]

    def tool_end(self, key: Any, output: object) -> list[Event]:
        """Tool run ``key`` returned ``output``."""
        entry = self.tool_runs.pop(key, None)
        if entry is None:
            return []
        call = entry[0]
        if isinstance(output, ToolMessage):
            self.sources[call.call_id] = output
            result = attrs.evolve(
                tool_result(output), tool_call_id=call.call_id, name=call.name
            )
        else:
            result, _ = result_of(
                call, output if isinstance(output, str) else str(output), None
            )
        method = (
            _C.on_tool_execution_failed
            if result.is_error
            else _C.on_tool_execution_completed
        )
        events: list[Event] = []
        self.emit(events, method, call, result)
        return events + self.settle(call.call_id, result)

    def tool_error(self, key: Any, error: BaseException) -> list[Event]:
        """Tool run ``key`` raised ``error``."""
        entry = self.tool_runs.pop(key, None)
        if entry is None or not isinstance(error, Exception):
            return []  # a KeyboardInterrupt or the like: no tool result
        if isinstance(error, GraphBubbleUp):
            return []  # the tool paused the graph (interrupt()): not a failure
        call = entry[0]
        result, _ = result_of(call, None, error)
        events = [
            _chain_event(_C.on_tool_execution_failed, self.chain, call, result),
            _chain_event(_C.on_tool_execution_exception, self.chain, call, error),
        ]
        return events + self.settle(call.call_id, result)

    def settle(self, call_id: str, result: ToolResult) -> list[Event]:
        """Record a call's result; the batch's tool message when it was the last.

        A call the run did not see asked for (a resumed graph in a new process)
        joins the batch, which its tool node's end closes.
        """
        if call_id not in self.batch:
            self.batch[call_id] = result
            return []
        self.batch[call_id] = result
        if any(value is None for value in self.batch.values()):
            return []
        waiting = [r for r in self.batch.values() if r is not None and r.is_interrupt]
        if not waiting:
            return self.close_batch()
        events = self.interrupted(waiting)
        events += self.close_batch()
        return events + self.complete("interrupted", interrupt_data(waiting))

    def close_batch(self) -> list[Event]:
        """Add the tool message of the batch's results so far (calls that never
        reported one, such as calls another middleware answered, are left out)."""
        results = tuple(r for r in self.batch.values() if r is not None)
        self.batch = {}
        if not results:
            return []
        message = Message.tool(results)
        sources = [self.sources.pop(r.tool_call_id, None) for r in results]
        if all(sources):  # the next call's conversation has this very message
            tools = tuple(m for m in sources if m is not None)
            self.batches[tuple(map(id, tools))] = (tools, message)
        self._add(message)
        events: list[Event] = []
        self.emit(events, _C.on_tool_response_created, message)
        self.emit(events, _C.on_message_processed, message)
        return events

    def interrupted(self, results: Sequence[ToolResult]) -> list[Event]:
        """Once per batch, with every interrupted call's stand-in."""
        return [_chain_event(_C.on_tool_interrupted, self.chain, tuple(results))]

    def event(self, method: Any, *args: Any) -> Event:
        """A chain event on the current snapshot."""
        return _chain_event(method, self.chain, *args)


def new_invocation(
    name: str, parent: Invocation | None, custom_context: Mapping[str, Any] | None
) -> Invocation:
    """A run's invocation: a child of ``parent`` (the run a nested call is part of)."""
    return Invocation(
        name=name,
        parent_id=None if parent is None else parent.id,
        custom_context=custom_context,
    )


def _tool_name(tool: BaseTool | Mapping[str, Any]) -> str:
    if isinstance(tool, BaseTool):
        return tool.name
    return str(tool.get("function", tool).get("name"))


def pause_data(pending: Sequence[object]) -> Mapping[str, Any]:
    """``RunResult.interrupt_data`` for a graph's interrupts, as ``LLMChain`` gives
    it: one interrupt's value (a mapping), or ``{"interrupts": (value, ...)}``."""
    values = tuple(getattr(item, "value", item) for item in pending)
    if len(values) == 1 and isinstance(values[0], Mapping):
        return dict(values[0])
    return {"interrupts": values}

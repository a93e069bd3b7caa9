"""How the web app records the runs it drives into its backend.

PROVISIONAL: ``_Recorder`` stands in for ``langhooks.events.EventRecorder`` until that
lands; ``RecordSink`` keeps its shape (a sink taking one record at a time).
"""

from __future__ import annotations

import asyncio
import enum
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, final

import attrs
from typing_extensions import override

from .._chain_callbacks import ChainCallbackHandler, ReviewContext
from .._messages import (
    LangHooksError,
    Message,
    MessageDelta,
    TokenUsage,
    Tool,
    ToolCall,
    ToolResult,
)

if TYPE_CHECKING:
    from .._chain_callbacks import ReviewDecision
    from ..chain import LLMChain, RunResult
    from ._web_backend import MemoryBackend

__all__ = ["RecordSink"]


@attrs.frozen(kw_only=True)
class _Record:
    seq: int
    event: str
    run_id: str | None
    invocation_id: str | None
    parent_id: str | None
    time: datetime
    payload: Mapping[str, Any]


def _plain(value: Any) -> Any:
    if isinstance(value, LangHooksError):
        return {
            "type": value.type,
            "message": value.message,
            "retryable": value.retryable,
        }
    if attrs.has(type(value)):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in attrs.fields(type(value))
            if f.name not in {"exception", "chain", "function"}
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _dumps(record: _Record) -> str:
    return json.dumps({"type": "EventRecord", **_plain(record)})


def _ends_run(record: _Record) -> bool:
    if record.event == "on_error":
        return True
    return (
        record.event == "on_run_complete"
        and record.payload["result"]["status"] == "ok"
        and record.payload.get("resume") is not True
    )


class _Recorder(ChainCallbackHandler):
    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self._seq = 0

    def _emit(self, event: str, chain: LLMChain, **payload: Any) -> None:
        inv = chain.invocation
        self._seq += 1
        self._sink(
            _Record(
                seq=self._seq,
                event=event,
                run_id=None if inv is None else inv.id,
                invocation_id=None if inv is None else inv.id,
                parent_id=None,
                time=datetime.now(UTC),
                payload={k: _plain(v) for k, v in payload.items()},
            )
        )

    @override
    def on_run_start(self, chain: LLMChain) -> None:
        self._emit("on_run_start", chain)

    @override
    def on_llm_new_delta(self, chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
        self._emit("on_llm_new_delta", chain, deltas=deltas)

    @override
    def on_llm_token_usage(self, chain: LLMChain, usage: TokenUsage) -> None:
        self._emit("on_llm_token_usage", chain, usage=usage)

    @override
    def on_message_processed(self, chain: LLMChain, message: Message) -> None:
        self._emit("on_message_processed", chain, message=message)

    @override
    def on_tool_call_identified(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._emit("on_tool_call_identified", chain, call=call, tool=tool.name)

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self._emit(
            "on_tool_call_review", chain, call=call, tool=tool.name, review=review
        )
        return None

    @override
    def on_tool_execution_started(
        self, chain: LLMChain, call: ToolCall, tool: Tool
    ) -> None:
        self._emit("on_tool_execution_started", chain, call=call, tool=tool.name)

    @override
    def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._emit("on_tool_execution_completed", chain, call=call, result=result)

    @override
    def on_tool_execution_failed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        self._emit("on_tool_execution_failed", chain, call=call, result=result)

    @override
    def on_tool_interrupted(
        self, chain: LLMChain, results: Sequence[ToolResult]
    ) -> None:
        self._emit("on_tool_interrupted", chain, results=results)

    @override
    def on_llm_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._emit("on_llm_error", chain, error=error)

    @override
    def on_error(self, chain: LLMChain, error: LangHooksError) -> None:
        self._emit("on_error", chain, error=error)

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        inv = chain.invocation
        self._emit(
            "on_run_complete",
            chain,
            result={"status": result.status},
            resume=inv is not None and inv.name == "resume",
        )


@final
class RecordSink:
    """Takes one run's records (its resumed parts too) into the backend.

    The run's id is the first record's ``run_id``; every later record of the
    conversation goes to that run's stream.
    """

    def __init__(self, backend: MemoryBackend, prompt: str) -> None:
        self._backend = backend
        self._prompt = prompt
        self._first: asyncio.Future[str] | None = None
        self.run_id: str | None = None
        self.recorder = _Recorder(self.write)

    def on_first(self, future: asyncio.Future[str]) -> None:
        """Resolve ``future`` with the run id when the first record arrives."""
        self._first = future

    def write(self, record: _Record) -> None:
        """Append one record to the run's stream."""
        if self.run_id is None:
            assert record.run_id is not None
            self.run_id = record.run_id
            self._backend.create(self.run_id, self._prompt)
            self._resolve(self.run_id, None)
        self._backend.append(
            self.run_id, record.event, _dumps(record), ends=_ends_run(record)
        )

    def failed(self, exc: BaseException) -> None:
        """The run raised before its first record: the starter gets the error."""
        self._resolve(None, exc)

    def _resolve(self, run_id: str | None, exc: BaseException | None) -> None:
        future = self._first
        if future is None or future.done():
            return
        if exc is not None:
            future.get_loop().call_soon_threadsafe(_fail, future, exc)
        else:
            future.get_loop().call_soon_threadsafe(_succeed, future, run_id)


def _succeed(future: asyncio.Future[str], run_id: Any) -> None:
    if not future.done():
        future.set_result(run_id)


def _fail(future: asyncio.Future[str], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)

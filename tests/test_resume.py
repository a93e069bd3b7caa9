"""The shared resume driver (``_resume``): the heartbeat that keeps a claim, sync and
async, over MemoryRunStore's claim primitives."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from typing_extensions import override

import langhooks as lh
from langhooks._persist._resume import (
    AsyncClaimBackend,
    ClaimBackend,
    Known,
    ResumeCode,
    Saved,
    Write,
    aresume_once,
    resume_once,
)
from langhooks._persist._stores import CallKey
from langhooks.chain import Decision, LLMChain, Tool
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore, PendingRun

_CLAIM_TIMEOUT = 0.09  # a beat every 0.03 seconds


class AskFirst(lh.ChainCallbackHandler):
    """Every call waits for a human."""

    @override
    def on_tool_call_review(
        self,
        chain: LLMChain,
        call: lh.ToolCall,
        tool: lh.Tool,
        review: lh.ReviewContext,
    ) -> lh.ReviewDecision | None:
        if review.human_decision is None:
            return lh.Interrupt("May I?", {"tool": call.name})
        return None


def _saved(store: MemoryRunStore, tool: Tool) -> str:
    call = lh.ToolCall(call_id="call_1", name=tool.name, arguments={})
    model = ScriptedChatModel([ScriptedTurn(tool_calls=[call])])
    chain = LLMChain(model, tools=[tool], callbacks=[AskFirst()])
    result = chain.add_message(lh.Message.user("go")).run()
    assert result.status == "interrupted"
    return store.save(result.chain)


def _code(tool: Tool) -> ResumeCode:
    return ResumeCode(
        model=ScriptedChatModel([ScriptedTurn(text="Done.")]), tools=[tool]
    )


class FlakyClaims(ClaimBackend):
    """MemoryRunStore's claims whose first heartbeat raises."""

    def __init__(self, store: MemoryRunStore) -> None:
        self._claims = store._backend()
        self.beats = 0

    @override
    def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        return self._claims.write(write, metadata, expires_in)  # pragma: no cover

    @override
    def read(self, run_id: str) -> Saved | None:
        return self._claims.read(run_id)  # pragma: no cover - not read here

    @override
    def claim(self, run_id: str, token: str) -> Saved:
        return self._claims.claim(run_id, token)

    @override
    def heartbeat(self, run_id: str, token: str) -> bool:
        self.beats += 1
        if self.beats == 1:
            raise ConnectionError("the store is away")
        return self._claims.heartbeat(run_id, token)

    @override
    def start_call(self, run_id: str, token: str, call_id: CallKey) -> str | None:
        return self._claims.start_call(run_id, token, call_id)

    @override
    def finish_call(
        self, run_id: str, token: str, call_id: CallKey, outcome: str
    ) -> None:
        self._claims.finish_call(run_id, token, call_id, outcome)

    @override
    def settle(self, run_id: str, token: str, write: Write) -> None:
        self._claims.settle(run_id, token, write)

    @override
    def release(self, run_id: str, token: str) -> None:
        self._claims.release(run_id, token)  # pragma: no cover - not released here

    @override
    def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        return self._claims.pending(wanted, limit)  # pragma: no cover - not here

    @override
    def waiting(self, run_id: str) -> PendingRun | None:
        return self._claims.waiting(run_id)  # pragma: no cover - not here

    @override
    def delete(self, run_id: str) -> bool:
        return self._claims.delete(run_id)  # pragma: no cover - not here

    @override
    def unknown(self, run_id: str) -> lh.LangHooksError:
        return self._claims.unknown(run_id)  # pragma: no cover - not here


class AsyncFlakyClaims(AsyncClaimBackend):
    """``FlakyClaims``, awaited."""

    def __init__(self, store: MemoryRunStore) -> None:
        self._claims = FlakyClaims(store)

    @property
    def beats(self) -> int:
        return self._claims.beats

    @override
    async def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        return self._claims.write(write, metadata, expires_in)  # pragma: no cover

    @override
    async def read(self, run_id: str) -> Saved | None:
        return self._claims.read(run_id)  # pragma: no cover - not read here

    @override
    async def claim(self, run_id: str, token: str) -> Saved:
        return self._claims.claim(run_id, token)

    @override
    async def heartbeat(self, run_id: str, token: str) -> bool:
        return self._claims.heartbeat(run_id, token)

    @override
    async def start_call(self, run_id: str, token: str, call_id: CallKey) -> str | None:
        return self._claims.start_call(run_id, token, call_id)

    @override
    async def finish_call(
        self, run_id: str, token: str, call_id: CallKey, outcome: str
    ) -> None:
        self._claims.finish_call(run_id, token, call_id, outcome)

    @override
    async def settle(self, run_id: str, token: str, write: Write) -> None:
        self._claims.settle(run_id, token, write)

    @override
    async def release(self, run_id: str, token: str) -> None:
        self._claims.release(run_id, token)  # pragma: no cover - not released here

    @override
    async def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        return self._claims.pending(wanted, limit)  # pragma: no cover - not here

    @override
    async def waiting(self, run_id: str) -> PendingRun | None:
        return self._claims.waiting(run_id)  # pragma: no cover - not here

    @override
    async def delete(self, run_id: str) -> bool:
        return self._claims.delete(run_id)  # pragma: no cover - not here

    @override
    def unknown(self, run_id: str) -> lh.LangHooksError:
        return self._claims.unknown(run_id)  # pragma: no cover - not here


class TestHeartbeat:
    def test_a_failed_renewal_is_retried(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A heartbeat that raises is logged and the claim renewed at the next
        beat: the resume goes on and ends."""
        store = MemoryRunStore()
        backend = FlakyClaims(store)

        def act(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
            while backend.beats < 2:
                threading.Event().wait(0.01)
            return "done"

        tool = Tool("act", act)
        run_id = _saved(store, tool)
        result = resume_once(
            backend,
            Known(),
            run_id,
            [Decision.approve()],
            _code(tool),
            claim_timeout=_CLAIM_TIMEOUT,
        )
        assert result.status == "ok"
        assert "could not renew the claim" in caplog.text
        assert store.waiting(run_id) is None

    async def test_a_failed_async_renewal_is_retried(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The same for the async driver, whose heartbeat is a task."""
        store = MemoryRunStore()
        backend = AsyncFlakyClaims(store)

        async def act(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
            while backend.beats < 2:
                await asyncio.sleep(0.01)
            return "done"

        tool = Tool("act", act)
        run_id = _saved(store, tool)
        result = await aresume_once(
            backend,
            Known(),
            run_id,
            [Decision.approve()],
            _code(tool),
            claim_timeout=_CLAIM_TIMEOUT,
        )
        assert result.status == "ok"
        assert "could not renew the claim" in caplog.text
        assert store.waiting(run_id) is None

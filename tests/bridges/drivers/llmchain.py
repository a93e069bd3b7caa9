"""The reference: the script on ``LLMChain`` with langhooks' ``ScriptedChatModel``.

The paused run is saved with ``to_state`` to a file and resumed in the second
process with ``LLMChain.from_state`` and ``execute_tool_calls_with_decisions``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from langhooks import LangHooksError
from langhooks.chain import Decision, LLMChain, RetryPolicy, RunResult
from langhooks.models import ScriptedChatModel, ScriptedTurn

from .._driver import Place
from .._script import PROMPT, TURNS, Turn, retryable, script_tools


def _model(turns: Sequence[Turn]) -> ScriptedChatModel:
    items: list[ScriptedTurn | LangHooksError] = []
    for turn in turns:
        if turn.fail_first:
            items.append(retryable(turn.fail_first))
        items.append(
            ScriptedTurn(
                text=turn.text,
                thinking=turn.thinking,
                tool_calls=turn.calls,
                usage=turn.usage,
            )
        )
    return ScriptedChatModel(items)


_RETRY = RetryPolicy(max_attempts=2, initial_delay=0.0, jitter=0.0)


def _tools(place: Place) -> list[Any]:
    return [tool.as_langhooks(place.ledger) for tool in script_tools()]


class LLMChainDriver:
    """The reference driver (see ``tests/bridges/_driver.py``)."""

    name = "llmchain"

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        chain = LLMChain(
            _model(TURNS), tools=_tools(place), callbacks=handlers, retry=_RETRY
        ).add_message(_user())
        result: RunResult = asyncio.run(chain.arun()) if use_async else chain.run()
        assert result.status == "interrupted", result
        assert result.interrupt_data["tool_call_id"] == "call_4"
        state = result.chain.to_state()
        (place.directory / "llmchain.json").write_text(json.dumps(state))

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        state = json.loads((place.directory / "llmchain.json").read_text())
        saved = LLMChain.from_state(state, _model(()), tools=_tools(place))
        answered = sum(1 for m in saved.messages if m.role == "assistant")
        chain = LLMChain.from_state(
            state,
            _model(TURNS[answered:]),
            tools=_tools(place),
            callbacks=handlers,
            retry=_RETRY,
        )
        calls = chain.pending_tool_calls
        decisions = [Decision.approve()] * len(calls)
        if use_async:
            result = asyncio.run(_aresume(chain, calls, decisions))
        else:
            result = chain.execute_tool_calls_with_decisions(calls, decisions)
            assert result.status == "ok", result
            result = result.chain.run()
        assert result.status == "ok", result
        return result.chain.messages[-1].text


async def _aresume(
    chain: LLMChain, calls: Sequence[Any], decisions: Sequence[Decision]
) -> RunResult:
    result = await chain.aexecute_tool_calls_with_decisions(calls, decisions)
    assert result.status == "ok", result
    return await result.chain.arun()


def _user() -> Any:
    from langhooks import Message

    return Message.user(PROMPT)


DRIVER = LLMChainDriver()

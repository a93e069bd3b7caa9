"""The agent every run-store test (and its worker processes) uses.

A booking agent whose calls all wait for a human. Its tool writes a line to the log
file named in the run's ``custom_context`` when a call starts and when it ends, so
any process can count how often each call was started. A worker started with
``LANGHOOKS_TEST_HANG=<call id>`` hangs inside that call (until it is killed).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from typing_extensions import override

import langhooks as lh
from langhooks.chain import LLMChain, Tool
from langhooks.models import ScriptedChatModel, ScriptedTurn

__all__ = [
    "ASYNC_TOOLS",
    "TOOLS",
    "AskFirst",
    "answer_model",
    "log_lines",
    "resume_agent",
    "silent_agent",
    "starts",
    "waiting_chain",
]

ANSWER = "All booked."


def _log(context: lh.ToolContext, line: str) -> None:
    path = Path(str(context.custom_context["log"]))
    with path.open("a", encoding="utf-8") as log:
        log.write(f"{line}\n")
        log.flush()
        os.fsync(log.fileno())


def _hangs(context: lh.ToolContext) -> bool:
    return os.environ.get("LANGHOOKS_TEST_HANG") == context.call.call_id


def book(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
    """Book; takes ``arguments["seconds"]``; logs its start and end."""
    call_id = context.call.call_id
    _log(context, f"start {call_id} {os.getpid()}")
    if _hangs(context):
        _log(context, f"hang {call_id}")
        time.sleep(3600)
    time.sleep(float(arguments.get("seconds", 0)))
    _log(context, f"end {call_id}")
    return f"booked {call_id}"


async def abook(arguments: Mapping[str, Any], context: lh.ToolContext) -> str:
    """The async twin of ``book``."""
    call_id = context.call.call_id
    _log(context, f"start {call_id} {os.getpid()}")
    if _hangs(context):
        _log(context, f"hang {call_id}")
        await asyncio.sleep(3600)
    await asyncio.sleep(float(arguments.get("seconds", 0)))
    _log(context, f"end {call_id}")
    return f"booked {call_id}"


TOOLS = [Tool("book", book)]
ASYNC_TOOLS = [Tool("book", abook)]


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
            return lh.Interrupt("May I book?", {"call": call.call_id})
        return None


def waiting_chain(log: Path, *, calls: int = 1, seconds: float = 0.0) -> LLMChain:
    """A run interrupted at ``calls`` bookings (``call_1``, ``call_2``, ...)."""
    asked = [
        lh.ToolCall(call_id=f"call_{n}", name="book", arguments={"seconds": seconds})
        for n in range(1, calls + 1)
    ]
    model = ScriptedChatModel([ScriptedTurn(tool_calls=asked)])
    chain = LLMChain(
        model, tools=TOOLS, callbacks=[AskFirst()], custom_context={"log": str(log)}
    )
    result = chain.add_message(lh.Message.user("Book, please.")).run()
    assert result.status == "interrupted"
    return result.chain


def answer_model() -> ScriptedChatModel:
    """The model a resumed run continues on: it answers."""
    return ScriptedChatModel([ScriptedTurn(text=ANSWER)])


def log_lines(log: Path) -> list[str]:
    """The tool's log (empty when nothing ran)."""
    return log.read_text().splitlines() if log.exists() else []


def starts(log: Path) -> list[str]:
    """The call ids started, one per start, in order."""
    return [line.split()[1] for line in log_lines(log) if line.startswith("start ")]


def resume_agent() -> LLMChain:
    """What ``langhooks runs approve --agent`` goes on with: the answering model
    and the booking tool."""
    return LLMChain(answer_model(), tools=TOOLS)


def silent_agent() -> LLMChain:
    """An agent whose model has nothing to say: a resumed run fails."""
    return LLMChain(ScriptedChatModel([]), tools=TOOLS)

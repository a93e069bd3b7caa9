"""Strands Agents: an ``Agent`` on ``ScriptedStrandsModel`` with
``LangHooksHookProvider``.

The paused agent lives in a ``FileSessionManager`` session in the test's
directory (Strands persists the interrupt state with the conversation), and the
second process resumes it with ``interrupt_responses`` on a new agent restored
from the same session. ``agent(...)`` is the sync entry point, ``invoke_async``
the async one. The failed model call is retried by Strands'
``ModelRetryStrategy`` (no delay).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tests.bridges._support import need_module

need_module("strands", "strands")

from opentelemetry.instrumentation.threading import ThreadingInstrumentor  # noqa: E402
from strands import Agent, ModelRetryStrategy  # noqa: E402
from strands.interrupt import Interrupt  # noqa: E402
from strands.session.file_session_manager import FileSessionManager  # noqa: E402
from strands.tools.tools import PythonAgentTool  # noqa: E402

from langhooks.chain import Decision  # noqa: E402
from langhooks.integrations.strands import (  # noqa: E402
    LangHooksHookProvider,
    interrupt_responses,
)

from .._driver import Place  # noqa: E402
from .._script import PROMPT, TURNS, ScriptTool, script_tools  # noqa: E402
from .._strands_model import ScriptedStrandsModel  # noqa: E402


def strands_tool(tool: ScriptTool, place: Place) -> PythonAgentTool:
    """A script tool as a Strands tool (a raising tool raises: Strands answers
    the model with the error)."""
    run = tool.run

    def call(tool_use: Any, **_: Any) -> Any:
        text = run(tool_use["input"], place.ledger)
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "success",
            "content": [{"text": text}],
        }

    spec = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": {"json": dict(tool.parameters)},
    }
    return PythonAgentTool(tool.name, spec, call)  # type: ignore[arg-type]  # a ToolSpec dict


def agent(
    place: Place,
    handlers: Sequence[Any],
    *,
    turns: Sequence[Any] = TURNS,
    model: Any = None,
    session: bool = True,
) -> Agent:
    """An agent of the script with the bridge attached."""
    return Agent(
        model=model or ScriptedStrandsModel(turns),
        tools=[strands_tool(t, place) for t in script_tools()],
        hooks=[LangHooksHookProvider(*handlers)],
        callback_handler=None,
        retry_strategy=ModelRetryStrategy(max_attempts=2, initial_delay=0, max_delay=0),
        session_manager=(
            FileSessionManager(
                session_id=place.thread, storage_dir=str(place.directory)
            )
            if session
            else None
        ),
    )


@contextmanager
def threads_left_alone() -> Iterator[None]:
    """Undo what making a Strands agent does to the whole process: its tracer
    instruments ``threading`` (OpenTelemetry context copied into every new
    thread), which would change how other tests' spans nest."""
    try:
        yield
    finally:
        ThreadingInstrumentor().uninstrument()


class StrandsDriver:
    """Strands + LangHooksHookProvider (see ``tests/bridges/_driver.py``)."""

    name = "strands"

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        with threads_left_alone():
            bot = agent(place, handlers)
            result = asyncio.run(bot.invoke_async(PROMPT)) if use_async else bot(PROMPT)
        assert result.stop_reason == "interrupt", result
        (pause,) = result.interrupts or ()
        assert pause.reason["tool_call_id"] == "call_4", pause
        # What the approval inbox keeps for the human (and the second process).
        (place.directory / "interrupts.json").write_text(json.dumps([pause.to_dict()]))

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        bot = agent(place, handlers)
        saved = json.loads((place.directory / "interrupts.json").read_text())
        paused = [Interrupt(**fields) for fields in saved]
        prompt = interrupt_responses(paused, {"call_4": Decision.approve()})
        result = asyncio.run(bot.invoke_async(prompt)) if use_async else bot(prompt)
        assert result.stop_reason == "end_turn", result
        return str(result).strip()


DRIVER = StrandsDriver()

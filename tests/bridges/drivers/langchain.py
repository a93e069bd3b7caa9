"""LangChain 1.x: ``create_agent`` with ``LangHooksMiddleware``.

The model is ``tests/bridges/_langchain_model.ScriptedChatModel`` (streaming); the
failed model call is retried by ``ModelRetryMiddleware`` (inside ours, so the bridge
sees each attempt). The paused
run is checkpointed with ``PostgresSaver`` (``AsyncPostgresSaver`` for the async
runs) in the test's own schema.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tests.bridges._support import need_module

need_module("langchain", "langchain")
need_module("langgraph.checkpoint.postgres", "langchain")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import ModelRetryMiddleware  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402

from langhooks.chain import Decision  # noqa: E402
from langhooks.integrations.langchain import (  # noqa: E402
    LangHooksMiddleware,
    resume_command,
)

from .._driver import Place  # noqa: E402
from .._langchain_model import ScriptedChatModel  # noqa: E402
from .._script import PROMPT, TURNS, ScriptTool, script_tools  # noqa: E402


def _tool(tool: ScriptTool, place: Place) -> StructuredTool:
    run = tool.run

    def call(**arguments: Any) -> str:
        return run(arguments, place.ledger)

    return StructuredTool.from_function(
        func=call,
        name=tool.name,
        description=tool.description,
        args_schema=dict(tool.parameters),
    )


def _agent(place: Place, handlers: Sequence[Any], checkpointer: Any) -> Any:
    return create_agent(
        ScriptedChatModel(turns=list(TURNS), streaming=True),
        [_tool(t, place) for t in script_tools()],
        middleware=[
            LangHooksMiddleware(*handlers),
            ModelRetryMiddleware(
                max_retries=1, initial_delay=0.0, jitter=False, on_failure="error"
            ),
        ],
        checkpointer=checkpointer,
    )


@contextmanager
def _saver(place: Place) -> Iterator[Any]:
    with PostgresSaver.from_conn_string(place.postgres) as saver:
        saver.setup()
        yield saver


def _config(place: Place) -> dict[str, Any]:
    return {"configurable": {"thread_id": place.thread}}


_INPUT = {"messages": [{"role": "user", "content": PROMPT}]}
_APPROVE = {"call_4": Decision.approve()}


class LangChainDriver:
    """create_agent + LangHooksMiddleware (see ``tests/bridges/_driver.py``)."""

    name = "langchain"

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        if use_async:
            result = asyncio.run(self._astart(place, handlers))
        else:
            with _saver(place) as saver:
                result = _agent(place, handlers, saver).invoke(_INPUT, _config(place))
        (pause,) = result["__interrupt__"]
        assert pause.value["tool_call_id"] == "call_4", pause

    async def _astart(self, place: Place, handlers: Sequence[Any]) -> Any:
        async with AsyncPostgresSaver.from_conn_string(place.postgres) as saver:
            await saver.setup()
            agent = _agent(place, handlers, saver)
            return await agent.ainvoke(_INPUT, _config(place))

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        if use_async:
            result = asyncio.run(self._aresume(place, handlers))
        else:
            with _saver(place) as saver:
                agent = _agent(place, handlers, saver)
                paused = agent.get_state(_config(place)).interrupts
                result = agent.invoke(resume_command(paused, _APPROVE), _config(place))
        assert "__interrupt__" not in result, result
        return str(result["messages"][-1].content)

    async def _aresume(self, place: Place, handlers: Sequence[Any]) -> Any:
        async with AsyncPostgresSaver.from_conn_string(place.postgres) as saver:
            agent = _agent(place, handlers, saver)
            paused = (await agent.aget_state(_config(place))).interrupts
            return await agent.ainvoke(resume_command(paused, _APPROVE), _config(place))


DRIVER = LangChainDriver()

"""LangGraph: a graph of its own (model, review, tools) observed through
``LangHooksCallbackHandler``.

The callback handler is observation only, so the graph reviews the calls itself,
the LangGraph way: a ``review`` node applies the script's rules (denies
``delete_file``, rewrites a shouted city, ``interrupt()``s ``transfer_money`` until a
human approves). The model node retries through LangGraph's own ``RetryPolicy``;
``ToolNode(handle_tool_errors=True)`` turns the raising tool into an error message.
The graph checkpoints with ``PostgresSaver`` (``AsyncPostgresSaver``) in the test's
schema.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from tests.bridges._support import need_module

need_module("langgraph.checkpoint.postgres", "langchain")

from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langgraph.checkpoint.postgres import PostgresSaver  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402
from langgraph.types import Command, RetryPolicy, interrupt  # noqa: E402

from langhooks.integrations.langchain import (  # noqa: E402
    AsyncLangHooksCallbackHandler,
    LangHooksCallbackHandler,
)

from .._driver import Place  # noqa: E402
from .._langchain_model import ScriptedChatModel  # noqa: E402
from .._script import PROMPT, TURNS, Reviewer, script_tools  # noqa: E402
from .langchain import _tool  # noqa: E402


def _review(state: MessagesState) -> dict[str, Any]:
    """The script's review rules, as a LangGraph node."""
    answer = state["messages"][-1]
    assert isinstance(answer, AIMessage)
    kept, denied = [], []
    for call in answer.tool_calls:
        if call["name"] == "delete_file":
            denied.append(
                ToolMessage(
                    "The tool call was denied: deleting system files is not allowed",
                    tool_call_id=call["id"],
                    name=call["name"],
                    status="error",
                )
            )
            continue
        if call["name"] == "get_weather" and call["args"]["city"] != "Paris":
            call = {**call, "args": {"city": str(call["args"]["city"]).title()}}
        if call["name"] == "transfer_money":
            human = interrupt({"tool_call_id": call["id"], "message": "approve"})
            assert human == "approve", human
        kept.append(call)
    revised = answer.model_copy(update={"tool_calls": kept})
    return {"messages": [revised, *denied]}


def _after_model(state: MessagesState) -> str:
    answer = state["messages"][-1]
    return "review" if isinstance(answer, AIMessage) and answer.tool_calls else END


def _graph(place: Place, checkpointer: Any, *, use_async: bool = False) -> Any:
    tools = [_tool(t, place) for t in script_tools()]
    model = ScriptedChatModel(turns=list(TURNS), streaming=True).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def acall_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    retry = RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False)
    builder = StateGraph(MessagesState)
    node = acall_model if use_async else call_model
    builder.add_node("model", node, retry_policy=retry)
    builder.add_node("review", _review)
    builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", _after_model, ["review", END])
    builder.add_edge("review", "tools")
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=checkpointer)


@contextmanager
def _saver(place: Place) -> Iterator[Any]:
    with PostgresSaver.from_conn_string(place.postgres) as saver:
        saver.setup()
        yield saver


def _config(place: Place, callback: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": place.thread}, "callbacks": [callback]}


_INPUT = {"messages": [{"role": "user", "content": PROMPT}]}


def _observers(handlers: Sequence[Any]) -> list[Any]:
    return [h for h in handlers if not isinstance(h, Reviewer)]


class LangGraphDriver:
    """A LangGraph graph + LangHooksCallbackHandler (see ``_driver.py``)."""

    name = "langgraph"

    # The graph reviews in its own node; the script's Reviewer would make the
    # observation-only callback refuse the calls it does not allow (fail closed).

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        if use_async:
            result = asyncio.run(self._astart(place, handlers))
        else:
            with _saver(place) as saver:
                callback = LangHooksCallbackHandler(*_observers(handlers))
                result = _graph(place, saver).invoke(_INPUT, _config(place, callback))
        (pause,) = result["__interrupt__"]
        assert pause.value["tool_call_id"] == "call_4", pause

    async def _astart(self, place: Place, handlers: Sequence[Any]) -> Any:
        async with AsyncPostgresSaver.from_conn_string(place.postgres) as saver:
            await saver.setup()
            callback = AsyncLangHooksCallbackHandler(*_observers(handlers))
            return await _graph(place, saver, use_async=True).ainvoke(
                _INPUT, _config(place, callback)
            )

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        if use_async:
            result = asyncio.run(self._aresume(place, handlers))
        else:
            with _saver(place) as saver:
                callback = LangHooksCallbackHandler(*_observers(handlers))
                result = _graph(place, saver).invoke(
                    Command(resume="approve"), _config(place, callback)
                )
        assert "__interrupt__" not in result, result
        return str(result["messages"][-1].content)

    async def _aresume(self, place: Place, handlers: Sequence[Any]) -> Any:
        async with AsyncPostgresSaver.from_conn_string(place.postgres) as saver:
            callback = AsyncLangHooksCallbackHandler(*_observers(handlers))
            return await _graph(place, saver, use_async=True).ainvoke(
                Command(resume="approve"), _config(place, callback)
            )


DRIVER = LangGraphDriver()

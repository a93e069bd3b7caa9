"""Typing contract: the frontend apps and the bridges' warning as a user wires
them (checked by mypy and pyright, never run)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, assert_type

from starlette.applications import Starlette

from langhooks import Message, ToolContext
from langhooks.chain import LLMChain, Tool
from langhooks.integrations import agui, ui_messages
from langhooks.integrations.agui import SharedState, create_agui_app, shared_state
from langhooks.integrations.langchain import BridgeWarning
from langhooks.integrations.redis import AsyncRedisRunStore
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ScriptedChatModel


async def add_to_cart(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """An async tool that changes the page's state (the app runs it with arun())."""
    state = shared_state()
    assert_type(state, SharedState | None)
    if state is not None:
        state.update({"cart": [arguments["item"]]})
    return "added"


def agent(messages: Sequence[Message]) -> LLMChain:
    chain = LLMChain(ScriptedChatModel([]), tools=[Tool("add_to_cart", add_to_cart)])
    return chain.add_messages(messages)


def apps(store: AsyncRedisRunStore) -> tuple[Starlette, Starlette]:
    """Both apps take an async store, the driver choice and the cancel option."""
    agui = create_agui_app(
        agent=agent, store=store, run_async=None, cancel_on_disconnect=False
    )
    ui = create_ui_message_app(agent=agent, store=store, run_async=True)
    return agui, ui


def strict() -> None:
    """A bridge's fail-closed warning is a UserWarning to filter."""
    warnings.simplefilter("error", BridgeWarning)
    assert issubclass(BridgeWarning, UserWarning)


def frontend_tools() -> list[Tool]:
    """A tool the client runs is a Tool, the same from either module."""
    pick = ui_messages.client_tool(
        "pick_color",
        description="Set the page's colour.",
        parameters_schema={"type": "object", "properties": {}},
    )
    assert_type(pick, Tool)
    assert agui.client_tool is ui_messages.client_tool
    return [pick, agui.client_tool("ask_user")]

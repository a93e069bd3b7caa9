"""Chain events are fired through the interface's own methods, type-checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from langhooks import ChainCallbackHandler, Message, ToolCall, ToolResult
from langhooks.chain import LLMChain
from langhooks.chain._operations import Fire, fire
from langhooks.models import ScriptedChatModel

CHAIN = LLMChain(ScriptedChatModel([]))
CALL = ToolCall(call_id="c", name="get_weather", arguments={})
RESULT = ToolResult(tool_call_id="c", name="get_weather", content="sunny")


class TestFire:
    """fire(Interface.on_event, *args) names the event and keeps its arguments."""

    def test_names_the_event_of_the_method(self) -> None:
        """The operation carries the method's name and the arguments, in order."""
        op = fire(ChainCallbackHandler.on_tool_execution_completed, CHAIN, CALL, RESULT)
        assert op == Fire("on_tool_execution_completed", (CHAIN, CALL, RESULT))

    def test_keywords_are_refused(self) -> None:
        """Event parameters are positional-only, so a keyword is an error."""
        with pytest.raises(TypeError, match="positional arguments only"):
            fire(
                ChainCallbackHandler.on_message_processed,  # type: ignore[arg-type]
                CHAIN,
                message=Message.user("x"),
            )

    def test_swapped_arguments_are_a_type_error(self) -> None:
        """mypy rejects a firing site whose arguments do not fit the event; the
        ignore below fails CI (warn_unused_ignores) if that ever stops."""
        if TYPE_CHECKING:
            fire(ChainCallbackHandler.on_tool_execution_completed, CHAIN, RESULT, CALL)  # type: ignore[arg-type]

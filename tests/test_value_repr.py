"""The value types' shared ``__repr__`` gives the text attrs would generate."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from langhooks import (
    Allow,
    ChatResponse,
    ContentPart,
    Deny,
    FinishReason,
    Interrupt,
    Invocation,
    Message,
    MessageDelta,
    PartialResponse,
    PartialToolCall,
    ReviewContext,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    UpdateArguments,
)
from langhooks._core._values import _value_repr

CALL = ToolCall(call_id="c1", name="lookup", arguments={"q": "Paris"}, index=0)
TOOL = Tool("lookup", lambda arguments, context: "ok", description="Look it up.")
SAMPLES: list[object] = [
    Message.user("What is the weather?"),
    Message.assistant("Let me check.", tool_calls=[CALL]),
    ContentPart.text("hi"),
    CALL,
    ToolResult(
        tool_call_id="c1",
        name="lookup",
        content="boom",
        is_error=True,
        exception=ValueError("boom"),
    ),
    PartialResponse(text="Hel"),
    PartialToolCall(index=0, id="c1", name="lookup", partial_arguments='{"q"'),
    TokenUsage(input_tokens=3, output_tokens=4),
    MessageDelta(text="Hi"),
    ChatResponse(
        message=Message.assistant("Hi"),
        finish_reason=FinishReason.STOP,
        token_usage=TokenUsage(input_tokens=1, output_tokens=2),
    ),
    Invocation(name="run", custom_context={"user": "ada"}),
    TOOL,
    ToolContext(call=CALL, invocation=Invocation(name="lookup")),
    Allow(),
    UpdateArguments({"q": "Lyon"}),
    Deny("not today"),
    Interrupt("ask a person"),
    ReviewContext(human_decision="approve"),
]


def attrs_repr(value: Any) -> str:
    """The repr attrs generates, from a twin class with attrs' own ``__repr__``."""
    fields = attrs.fields(type(value))
    twin = attrs.make_class(
        type(value).__name__,
        {f.name: attrs.field(repr=f.repr, alias=f.name) for f in fields},
        frozen=True,
    )
    return repr(twin(**{f.name: getattr(value, f.name) for f in fields}))


class TestValueRepr:
    @pytest.mark.parametrize("value", SAMPLES, ids=lambda v: type(v).__name__)
    def test_same_text_as_attrs(self, value: object) -> None:
        """A value's repr is the text attrs' generated __repr__ gives for it."""
        assert type(value).__repr__ is _value_repr
        assert repr(value) == attrs_repr(value)

    def test_value_inside_itself(self) -> None:
        """A value met again inside its own repr is shown as "...", as attrs does."""

        @attrs.frozen(repr=False)
        class Box:
            __repr__ = _value_repr

            items: list[Any]

        @attrs.frozen
        class AttrsBox:
            items: list[Any]

        box, attrs_box = Box([1]), AttrsBox([1])
        box.items.append(box)
        attrs_box.items.append(attrs_box)
        assert repr(box) == "Box(items=[1, ...])"
        assert repr(attrs_box) == "AttrsBox(items=[1, ...])"

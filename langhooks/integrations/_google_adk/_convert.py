"""ADK's (google-genai's) contents as langhooks messages, and human decisions as
the ``adk_request_confirmation`` answers that resume a paused run: pure
translations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.adk.events.event import Event
from google.adk.tools.base_tool import BaseTool
from google.genai import types

from ..._core._messages import ContentPart, Message, TokenUsage, ToolCall, ToolResult
from ...chain._decision import Decision

__all__ = [
    "CONFIRMATION",
    "DECISION_KEY",
    "confirmations",
    "message_of",
    "messages_of",
    "pieces",
    "spec_of",
    "tool_call_of",
    "usage_of",
]

#: The function ADK's tool confirmation asks the client to answer.
CONFIRMATION = "adk_request_confirmation"

#: The key of a confirmation's payload under which ``confirmations`` tells the
#: bridge what the human decided.
DECISION_KEY = "langhooks_decision"


def tool_call_of(call: types.FunctionCall, index: int) -> ToolCall:
    """A function call as a ``ToolCall`` (``index``: its place in the answer)."""
    return ToolCall(
        call_id=call.id or f"pending-{index}",
        name=call.name or "",
        arguments=dict(call.args or {}),
        index=index,
    )


def usage_of(
    usage: types.GenerateContentResponseUsageMetadata | None,
) -> TokenUsage | None:
    """A response's usage; thinking tokens count as output (as for Gemini)."""
    if usage is None:
        return None
    output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return TokenUsage(input_tokens=usage.prompt_token_count or 0, output_tokens=output)


def pieces(content: types.Content | None) -> Iterable[tuple[str, Any]]:
    """A content's parts as ``("thinking"|"text", str)`` or ``("call", FunctionCall)``,
    in order (other parts carry nothing a handler is told)."""
    for part in (content.parts or []) if content is not None else []:
        if part.function_call is not None:
            yield "call", part.function_call
        elif part.text:
            yield ("thinking" if part.thought else "text"), part.text


def message_of(content: types.Content | None) -> Message:
    """A model content as the assistant message."""
    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    for kind, value in pieces(content):
        if kind == "call":
            calls.append(tool_call_of(value, len(calls)))
        elif kind == "thinking":
            parts.append(ContentPart.thinking(value))
        else:
            parts.append(ContentPart.text(value))
    return Message(role="assistant", content=parts, tool_calls=calls)


def _results(parts: Sequence[types.Part]) -> list[ToolResult]:
    return [
        ToolResult(
            tool_call_id=part.function_response.id or "",
            name=part.function_response.name or "",
            content=str(part.function_response.response),
        )
        for part in parts
        if part.function_response is not None
    ]


def messages_of(contents: Iterable[types.Content]) -> list[Message]:
    """A request's contents as langhooks messages."""
    out: list[Message] = []
    for content in contents:
        parts = content.parts or []
        results = _results(parts)
        if results:
            out.append(Message.tool(results))
        elif content.role == "model":
            out.append(message_of(content))
        else:
            text = "".join(part.text or "" for part in parts)
            out.append(Message.user(text))
    return out


def spec_of(tool: BaseTool) -> tuple[str, str, Mapping[str, Any]]:
    """An ADK tool as ``(name, description, schema)``: its declared parameters as
    JSON schema (empty when it declares none)."""
    declaration = tool._get_declaration()  # the schema the model is sent
    schema: Mapping[str, Any] = {}
    if declaration is not None:
        if declaration.parameters_json_schema is not None:
            schema = declaration.parameters_json_schema
        elif declaration.parameters is not None:
            schema = declaration.parameters.model_dump(mode="json", exclude_none=True)
    return tool.name, tool.description, schema


def confirmations(
    events: Sequence[Event], decisions: Mapping[str, Decision]
) -> types.Content:
    """The user message that answers ADK's confirmation requests for interrupted
    calls: ``decisions`` maps the interrupted call's id to the human's decision.

    ``Decision.approve()`` and ``Decision.edit(arguments)`` confirm the call,
    ``Decision.reject(reason)`` declines it; the bridge's review then sees
    ``human_decision`` "approve", "edit" or "reject".

    Args:
        events: the session's events (``session.events``), where the requests are.
        decisions: the human's decision per interrupted call id.

    Raises:
        ValueError: a call in ``decisions`` has no pending confirmation request.
    """
    requests: dict[str, str] = {}
    for event in events:
        for call in event.get_function_calls():
            if call.name == CONFIRMATION and call.args:
                original = call.args.get("originalFunctionCall") or {}
                requests[str(original.get("id"))] = call.id or ""
    parts: list[types.Part] = []
    for call_id, decision in decisions.items():
        if call_id not in requests:
            raise ValueError(
                f"no confirmation request for tool call {call_id!r} in these events: "
                f"pass the paused session's events and the id of a call it interrupted"
            )
        payload = {
            DECISION_KEY: {
                "kind": decision.kind,
                "arguments": None
                if decision.arguments is None
                else dict(decision.arguments),
                "reason": decision.reason,
            }
        }
        answer = {"confirmed": decision.kind != "reject", "payload": payload}
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=requests[call_id], name=CONFIRMATION, response=answer
                )
            )
        )
    return types.Content(role="user", parts=parts)

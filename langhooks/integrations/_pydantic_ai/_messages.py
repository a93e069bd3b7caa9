"""pydantic-ai's messages as langhooks messages, and langhooks decisions as
pydantic-ai's deferred tool results: pure translations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic_ai import messages as pai
from pydantic_ai.tools import DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.usage import RequestUsage

from ..._core._messages import (
    ContentPart,
    Message,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from ...chain._decision import Decision

__all__ = [
    "deferred_tool_results",
    "message_of_response",
    "messages_of",
    "tool_call_of",
    "usage_of",
]

#: The metadata key under which ``deferred_tool_results`` tells the bridge what
#: the human decided (pydantic-ai hands it back as ``ctx.tool_call_metadata``).
DECISION_KEY = "langhooks_decision"


def tool_call_of(part: pai.ToolCallPart, index: int) -> ToolCall:
    """A pydantic-ai tool call as a ``ToolCall`` (``index``: its place among the
    response's calls)."""
    return ToolCall(
        call_id=part.tool_call_id,
        name=part.tool_name,
        arguments=part.args_as_dict(),
        index=index,
    )


def usage_of(usage: RequestUsage) -> TokenUsage | None:
    """A response's usage (None when it reports none)."""
    if not usage.input_tokens and not usage.output_tokens:
        return None
    return TokenUsage(
        input_tokens=usage.input_tokens, output_tokens=usage.output_tokens
    )


def message_of_response(response: pai.ModelResponse) -> Message:
    """A model response as the assistant message: thinking and text parts in
    order, and its tool calls (an output tool's call among them)."""
    content: list[ContentPart] = []
    calls: list[ToolCall] = []
    for part in response.parts:
        if isinstance(part, pai.TextPart) and part.content:
            content.append(ContentPart.text(part.content))
        elif isinstance(part, pai.ThinkingPart) and part.content:
            content.append(ContentPart.thinking(part.content))
        elif isinstance(part, pai.ToolCallPart):
            calls.append(tool_call_of(part, len(calls)))
    return Message(role="assistant", content=content, tool_calls=calls)


def _request_messages(request: pai.ModelRequest) -> Iterable[Message]:
    results: list[ToolResult] = []
    for part in request.parts:
        if isinstance(part, pai.SystemPromptPart):
            yield Message.system(part.content)
        elif isinstance(part, pai.UserPromptPart):
            text = part.content if isinstance(part.content, str) else str(part.content)
            yield Message.user(text)
        elif isinstance(part, pai.ToolReturnPart):
            results.append(
                ToolResult(
                    tool_call_id=part.tool_call_id,
                    name=part.tool_name,
                    content=part.model_response_str(wrap_if_error=False),
                    is_error=part.outcome in ("failed", "retried"),
                )
            )
    if results:
        yield Message.tool(results)


def messages_of(history: Sequence[pai.ModelMessage]) -> list[Message]:
    """A pydantic-ai message history as langhooks messages."""
    out: list[Message] = []
    for message in history:
        if isinstance(message, pai.ModelRequest):
            out.extend(_request_messages(message))
        else:
            out.append(message_of_response(message))
    return out


def deferred_tool_results(decisions: Mapping[str, Decision]) -> DeferredToolResults:
    """Human decisions on interrupted calls, by tool call id, as the
    ``DeferredToolResults`` that resume the run.

    ``Decision.approve()`` approves, ``Decision.edit(arguments)`` approves with
    the new arguments, ``Decision.reject(reason)`` denies with ``reason``; the
    bridge's review then sees ``human_decision`` "approve" or "edit".
    """
    results = DeferredToolResults()
    for call_id, decision in decisions.items():
        if decision.kind == "reject":
            results.approvals[call_id] = ToolDenied(decision.reason)
            continue
        arguments = None if decision.arguments is None else dict(decision.arguments)
        results.approvals[call_id] = ToolApproved(override_args=arguments)
        results.metadata[call_id] = {DECISION_KEY: decision.kind}
    return results

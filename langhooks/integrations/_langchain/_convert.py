"""LangChain's values as langhooks values: messages, chunks, usage, errors, tools.

Pure functions (no events, no state), used by the callback handler and the
middleware alike.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final, final

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from typing_extensions import override

from ..._core._messages import (
    ChatResponse,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from ..._core._model import ChatRequest
from ..._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ..._core._tools import Tool, ToolContext
from ...models._errors import classify_error

__all__ = [
    "FrameworkModel",
    "as_error",
    "as_message",
    "as_response",
    "as_tool",
    "chunk_parts",
    "model_name",
    "tool_result",
]

_LENGTH: Final = frozenset({"length", "max_tokens", "MAX_TOKENS"})
_FILTERED: Final = frozenset({"content_filter", "SAFETY", "refusal"})


@final
class FrameworkModel:
    """The ``ChatModel`` handlers see for a model the framework calls.

    Handlers read it (``on_llm_call_start``'s ``model``, ``chain.model``: its
    ``model`` name and class); it cannot be streamed by langhooks, which never
    calls the framework's model itself.
    """

    __slots__ = ("framework", "model")

    def __init__(self, model: str, framework: str) -> None:
        self.model: Final = model
        self.framework: Final = framework

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Refused: the framework calls its model, not langhooks.

        Raises:
            LangHooksError: always ("invalid_request").
        """
        raise self._refusal()

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Refused, as ``stream``.

        Raises:
            LangHooksError: always ("invalid_request").
        """
        raise self._refusal()

    def _refusal(self) -> LangHooksError:
        return LangHooksError(
            "invalid_request",
            f"{self!r} stands for a model that {self.framework} calls; langhooks "
            f"cannot stream it (build an LLMChain with a langhooks model instead)",
        )

    @override
    def __repr__(self) -> str:
        return f"FrameworkModel({self.model!r}, framework={self.framework!r})"


def model_name(model: object, params: Mapping[str, Any] | None = None) -> str | None:
    """What a LangChain model (or a model call's invocation params) calls itself."""
    for source in (params or {}, vars(model) if hasattr(model, "__dict__") else {}):
        for key in ("model_name", "model", "model_id"):
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    kind = (params or {}).get("_type") or getattr(model, "_llm_type", None)
    return str(kind) if kind else None


def _text_of(content: str | list[str | dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """``("text" | "thinking", text)`` for each part of a message's content."""
    if isinstance(content, str):
        if content:
            yield "text", content
        return
    for block in content:
        if isinstance(block, str):
            if block:
                yield "text", block
            continue
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            yield "text", str(block["text"])
        elif kind == "reasoning" and block.get("reasoning"):
            yield "thinking", str(block["reasoning"])
        elif kind == "thinking" and block.get("thinking"):
            yield "thinking", str(block["thinking"])


def chunk_parts(chunk: BaseMessage) -> Iterator[tuple[str, str]]:
    """The text and thinking pieces of one streamed chunk, in order."""
    return _text_of(chunk.content)


def _content(content: str | list[str | dict[str, Any]]) -> tuple[ContentPart, ...]:
    return tuple(
        ContentPart.thinking(text) if kind == "thinking" else ContentPart.text(text)
        for kind, text in _text_of(content)
    )


def _calls(message: AIMessage) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(
            call_id=call.get("id") or f"call-{index}",
            name=call["name"],
            arguments=call.get("args") or {},
            index=index,
        )
        for index, call in enumerate(message.tool_calls)
    )


def tool_result(message: ToolMessage) -> ToolResult:
    """A LangChain tool message as the result of its call."""
    return ToolResult(
        tool_call_id=message.tool_call_id,
        name=message.name or "tool",
        content=_content(message.content) or (ContentPart.text(""),),
        is_error=message.status == "error",
    )


def as_message(message: BaseMessage) -> Message:
    """One LangChain message as a langhooks message (a ToolMessage as a tool
    message of one result)."""
    if isinstance(message, AIMessage):
        return Message(
            role="assistant",
            content=_content(message.content),
            tool_calls=_calls(message),
        )
    if isinstance(message, ToolMessage):
        return Message.tool([tool_result(message)])
    if message.type == "system":
        return Message(role="system", content=_content(message.content))
    return Message(role="user", content=_content(message.content))


def _usage(message: AIMessage) -> TokenUsage | None:
    usage = message.usage_metadata
    if not usage:
        return None
    return TokenUsage(
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        raw=dict(usage),
    )


def _finish(message: AIMessage, calls: tuple[ToolCall, ...]) -> FinishReason:
    if calls:
        return FinishReason.TOOL_EXECUTION
    metadata = message.response_metadata
    reason = metadata.get("finish_reason") or metadata.get("stop_reason")
    if reason in _LENGTH:
        return FinishReason.LENGTH
    if reason in _FILTERED:
        return FinishReason.CONTENT_FILTER
    return FinishReason.STOP


def as_response(message: AIMessage, fallback_model: str) -> ChatResponse:
    """A model's answer as the ``ChatResponse`` ``LLMChain`` would have."""
    converted = as_message(message)
    metadata = message.response_metadata
    name = metadata.get("model_name") or metadata.get("model") or fallback_model
    return ChatResponse(
        message=converted,
        id=message.id,
        model_name=str(name),
        token_usage=_usage(message),
        finish_reason=_finish(message, converted.tool_calls),
    )


def as_error(error: BaseException) -> LangHooksError:
    """What a framework's exception is in langhooks' terms."""
    if isinstance(error, LangHooksError):
        return error
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return classify_error(
            status=status, code=None, message=str(error), original=error
        )
    return LangHooksError(
        "stream_error", f"{type(error).__name__}: {error}", original=error
    )


def _run_tool(tool: BaseTool) -> Any:
    def run(arguments: Mapping[str, Any], _context: ToolContext) -> str:
        output = tool.invoke(dict(arguments))
        return output if isinstance(output, str) else json.dumps(output, default=str)

    return run


def as_tool(tool: BaseTool | Mapping[str, Any]) -> Tool:
    """A LangChain tool (or a bound tool's schema) as the ``Tool`` handlers see:
    its name, description and parameters as the model is given them."""
    if isinstance(tool, BaseTool):
        function: Mapping[str, Any] = convert_to_openai_tool(tool)["function"]
        run = _run_tool(tool)
    else:
        function = tool.get("function", tool)
        run = _schema_only
    return Tool(
        str(function["name"]),
        run,
        description=str(function.get("description", "")),
        parameters_schema=dict(function.get("parameters") or {}),
    )


def _schema_only(_arguments: Mapping[str, Any], context: ToolContext) -> str:
    raise LangHooksError(
        "invalid_request",
        f"tool {context.call.name!r} is only known by its schema to langhooks; "
        f"the framework runs it",
    )

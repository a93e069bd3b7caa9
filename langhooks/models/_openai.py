"""OpenAI models on the official ``openai`` SDK: Chat Completions and Responses.

Both work with any OpenAI-compatible server through ``base_url`` (vLLM, Ollama's
``/v1``, DeepSeek, gateways). The SDK's own retries are off: the runtime retries,
and every failure reaches the handler.
"""

from __future__ import annotations

import json
from typing import Any

from typing_extensions import override

from .._core._messages import ContentPart, LangHooksError, Message, ToolCall
from .._core._model import ChatRequest
from .._core._tools import Tool
from ._sdk import SDKChatModel, sdk_http_client
from ._tool_schema import function_tools, tool_schema
from ._transport import mapping_items, require

__all__ = [
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "chat_completions_messages",
    "responses_input",
    "responses_tools",
]


def _unsupported(part: ContentPart, provider: str) -> LangHooksError:
    return LangHooksError(
        "invalid_request",
        f"{provider} requests cannot carry a {part.type!r} content part; "
        "send text or image_url parts",
    )


def _chat_content(message: Message) -> str | list[dict[str, Any]]:
    parts = [p for p in message.content if p.type != "thinking"]
    if all(p.type == "text" for p in parts):
        return "".join(p.content for p in parts)
    content: list[dict[str, Any]] = []
    for part in parts:
        if part.type == "text":
            content.append({"type": "text", "text": part.content})
        elif part.type == "image_url":
            content.append({"type": "image_url", "image_url": {"url": part.content}})
        else:
            raise _unsupported(part, "OpenAI")
    return content


def chat_completions_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """``messages`` as Chat Completions request messages.

    A tool message becomes one ``role: "tool"`` message per result; thinking is not
    sent back (OpenAI-compatible reasoning servers reject or ignore it), except
    the ``reasoning_details`` an OpenRouter stream kept in the message metadata.

    Raises:
        LangHooksError: a message holds content the API cannot take.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            wire.extend(
                {
                    "role": "tool",
                    "tool_call_id": result.tool_call_id,
                    "content": result.text,
                }
                for result in message.tool_results
            )
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            details = mapping_items(message.metadata.get("reasoning_details"))
            if details:
                # OpenRouter: the signed reasoning goes back with the turn.
                entry["reasoning_details"] = details
            if message.tool_calls:
                entry["content"] = message.text or None
                entry["tool_calls"] = [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(dict(call.arguments)),
                        },
                    }
                    for call in message.tool_calls
                ]
            wire.append(entry)
        else:
            wire.append({"role": message.role, "content": _chat_content(message)})
    return wire


def _responses_content(message: Message) -> str | list[dict[str, Any]]:
    parts = [p for p in message.content if p.type != "thinking"]
    if all(p.type == "text" for p in parts):
        return "".join(p.content for p in parts)
    content: list[dict[str, Any]] = []
    for part in parts:
        if part.type == "text":
            content.append({"type": "input_text", "text": part.content})
        elif part.type == "image_url":
            content.append({"type": "input_image", "image_url": part.content})
        else:
            raise _unsupported(part, "OpenAI Responses")
    return content


def responses_input(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """``messages`` as Responses API input items.

    Assistant tool calls become ``function_call`` items and tool results
    ``function_call_output`` items, both keyed by the call's ``call_id``; the
    reasoning items a streamed answer kept in ``metadata["reasoning_items"]`` go
    back before it, as the API expects. The calls listed in
    ``metadata["custom_tool_calls"]`` go back as ``custom_tool_call`` items (their
    input from ``arguments["input"]``) and their results as
    ``custom_tool_call_output``.

    Raises:
        LangHooksError: a message holds content the API cannot take.
    """
    items: list[dict[str, Any]] = []
    custom: set[str] = set()  # the ids of custom (freeform) tool calls so far
    for message in messages:
        if message.role == "tool":
            items.extend(
                {
                    "type": "custom_tool_call_output"
                    if result.tool_call_id in custom
                    else "function_call_output",
                    "call_id": result.tool_call_id,
                    "output": result.text,
                }
                for result in message.tool_results
            )
        elif message.role == "assistant":
            items.extend(mapping_items(message.metadata.get("reasoning_items")))
            if message.text:
                items.append(
                    {"type": "message", "role": "assistant", "content": message.text}
                )
            kept = message.metadata.get("custom_tool_calls")
            if isinstance(kept, (list, tuple)):
                custom.update(call_id for call_id in kept if isinstance(call_id, str))
            items.extend(_responses_call(call, custom) for call in message.tool_calls)
        else:
            items.append(
                {
                    "type": "message",
                    "role": message.role,
                    "content": _responses_content(message),
                }
            )
    return items


def _responses_call(call: ToolCall, custom: set[str]) -> dict[str, Any]:
    """An assistant tool call as a Responses input item: a ``custom_tool_call``
    (its freeform input back from ``arguments["input"]``) or a ``function_call``."""
    if call.call_id in custom:
        return {
            "type": "custom_tool_call",
            "call_id": call.call_id,
            "name": call.name,
            "input": str(call.arguments.get("input", "")),
        }
    return {
        "type": "function_call",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": json.dumps(dict(call.arguments)),
    }


def responses_tools(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    """``tools`` as Responses API function tools."""
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool_schema(tool),
            "strict": False,
        }
        for tool in tools
    ]


class _OpenAIModel(SDKChatModel):
    """The clients both OpenAI models share."""

    @override
    def _new_clients(self, options: dict[str, Any]) -> tuple[Any, Any]:
        openai = require("openai", "openai")
        try:
            return (
                openai.OpenAI(**options, http_client=sdk_http_client(openai)),
                openai.AsyncOpenAI(
                    **options, http_client=sdk_http_client(openai, True)
                ),
            )
        except openai.OpenAIError as exc:
            raise LangHooksError(
                "authentication",
                f"cannot create the OpenAI client: {exc} (pass api_key=, any string "
                "for a local server that needs none)",
                original=exc,
            ) from exc

    def _with_options(
        self, params: dict[str, Any], max_tokens_key: str
    ) -> dict[str, Any]:
        """``params`` with the model's output limit, temperature and extras."""
        if self.max_tokens is not None:
            params[max_tokens_key] = self.max_tokens
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.extra_params:
            # In the JSON body as given: a field this SDK version does not know
            # (or a compatible server's own option) still goes through.
            params["extra_body"] = dict(self.extra_params)
        return params


class OpenAIChatModel(_OpenAIModel):
    """A Chat Completions model on the official ``openai`` SDK.

    Args:
        model: the model name, for example ``"gpt-4o"``.
        base_url: an OpenAI-compatible server (``http://localhost:8000/v1`` for
            vLLM, ``http://localhost:11434/v1`` for Ollama); OpenAI by default.
        api_key: the key; ``OPENAI_API_KEY`` by default.
        max_tokens: the output limit (``max_tokens``), if any.
        temperature: the sampling temperature, if any.
        timeout: seconds before connecting or reading times out.
        extra_params: more request fields, sent as given (``reasoning_effort``,
            ``tool_choice``, a compatible server's own options, ...).

    Raises:
        ImportError: the ``openai`` extra is not installed.
        LangHooksError: the client cannot be created (no API key).
    """

    _format = "openai-chat"

    @override
    def _resource(self, client: Any) -> Any:
        return client.chat.completions

    @override
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": chat_completions_messages(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = function_tools(request.tools)
        return self._with_options(params, "max_tokens")


class OpenAIResponsesModel(_OpenAIModel):
    """A Responses API model on the official ``openai`` SDK.

    Args:
        model: the model name, for example ``"gpt-5"``.
        base_url: an OpenAI-compatible server with a Responses API.
        api_key: the key; ``OPENAI_API_KEY`` by default.
        max_tokens: the output limit (``max_output_tokens``), if any.
        temperature: the sampling temperature, if any.
        timeout: seconds before connecting or reading times out.
        extra_params: more request fields, sent as given (``reasoning``,
            ``include``, ``store``, ...).

    Raises:
        ImportError: the ``openai`` extra is not installed.
        LangHooksError: the client cannot be created (no API key).
    """

    _format = "openai-responses"

    @override
    def _resource(self, client: Any) -> Any:
        return client.responses

    @override
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "input": responses_input(request.messages),
            "stream": True,
        }
        if request.tools:
            params["tools"] = responses_tools(request.tools)
        return self._with_options(params, "max_output_tokens")

"""The Anthropic Messages model on the official ``anthropic`` SDK.

The SDK's own retries are off: the runtime retries, and every failure reaches the
handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from typing_extensions import override

from .._core._messages import LangHooksError, Message
from .._core._model import ChatRequest
from .._core._tools import Tool
from ._sdk import SDKChatModel, sdk_http_client
from ._tool_schema import tool_schema
from ._transport import mapping_items, require

__all__ = ["AnthropicChatModel", "anthropic_messages", "anthropic_tools"]

DEFAULT_MAX_TOKENS: Final = 4096


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "text":
            blocks.append({"type": "text", "text": part.content})
        elif part.type == "image_url":
            blocks.append(
                {"type": "image", "source": {"type": "url", "url": part.content}}
            )
        elif part.type != "thinking":
            raise LangHooksError(
                "invalid_request",
                f"Anthropic requests cannot carry a {part.type!r} content part; "
                "send text or image_url parts",
            )
    return blocks


def _thinking_blocks(message: Message) -> list[dict[str, Any]]:
    """The assistant's thinking blocks, echoed back as the stream delivered them.

    Anthropic requires the signed thinking (and redacted thinking) of a turn that
    called tools to be sent back unchanged: the stream adapter keeps them in
    ``metadata["thinking_blocks"]``. Thinking without a signature cannot be
    verified by the API, so it is left out.
    """
    blocks = mapping_items(message.metadata.get("thinking_blocks"))
    if blocks:
        return blocks
    signature = message.metadata.get("thinking_signature")
    if isinstance(signature, str) and signature and message.thinking:
        return [
            {"type": "thinking", "thinking": message.thinking, "signature": signature}
        ]
    return []


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks = _thinking_blocks(message)
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.call_id,
            "name": call.name,
            "input": dict(call.arguments),
        }
        for call in message.tool_calls
    )
    return blocks


def anthropic_messages(
    messages: tuple[Message, ...],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``messages`` as the Messages API's ``system`` blocks and ``messages``.

    System messages go to ``system``; tool results become ``tool_result`` blocks in
    a user turn; consecutive turns of one role are merged into one.

    Raises:
        LangHooksError: a message holds content the API cannot take.
    """
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.extend(_user_blocks(message))
            continue
        if message.role == "tool":
            role = "user"
            blocks: list[dict[str, Any]] = [
                {
                    "type": "tool_result",
                    "tool_use_id": result.tool_call_id,
                    "content": result.text,
                    "is_error": result.is_error,
                }
                for result in message.tool_results
            ]
        elif message.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(message)
        else:
            role, blocks = "user", _user_blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def anthropic_tools(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    """``tools`` as Messages API tool definitions."""
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool_schema(tool),
        }
        for tool in tools
    ]


class AnthropicChatModel(SDKChatModel):
    """A Messages API model on the official ``anthropic`` SDK.

    Args:
        model: the model name, for example ``"claude-sonnet-4-5"``.
        base_url: another endpoint for the API (a proxy, a test server).
        api_key: the key; ``ANTHROPIC_API_KEY`` by default.
        max_tokens: the output limit the API requires (4096 by default).
        temperature: the sampling temperature, if any.
        timeout: seconds before connecting or reading times out.
        extra_params: more request fields, sent as given (``thinking``,
            ``tool_choice``, ``metadata``, ...).

    Raises:
        ImportError: the ``anthropic`` extra is not installed.
        LangHooksError: the client cannot be created (no API key).
    """

    _format = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        timeout: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=timeout,
            extra_params=extra_params,
        )

    @override
    def _new_clients(self, options: dict[str, Any]) -> tuple[Any, Any]:
        anthropic = require("anthropic", "anthropic")
        try:
            return (
                anthropic.Anthropic(**options, http_client=sdk_http_client(anthropic)),
                anthropic.AsyncAnthropic(
                    **options, http_client=sdk_http_client(anthropic, True)
                ),
            )
        except anthropic.AnthropicError as exc:  # pragma: no cover - see below
            # Older SDKs refuse a missing key here; current ones defer it to the
            # first request, where it becomes a non-retryable stream_error that
            # names the problem.
            raise LangHooksError(
                "authentication",
                f"cannot create the Anthropic client: {exc} (pass api_key=)",
                original=exc,
            ) from exc

    @override
    def _resource(self, client: Any) -> Any:
        return client.messages

    @override
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        system, messages = anthropic_messages(request.messages)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = anthropic_tools(request.tools)
        extra = dict(self.extra_params)
        if self.temperature is not None:
            extra.setdefault("temperature", self.temperature)
        if extra:
            # In the JSON body as given: a field this SDK version does not know
            # (or a compatible server's own option) still goes through.
            params["extra_body"] = extra
        return params

"""The Ollama model: the native ``/api/chat`` NDJSON stream, over httpx."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from .._core._messages import ChatResponse, LangHooksError, Message
from .._core._model import ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._formats import StreamFormat
from ._ollama_async import aopen_chat
from ._ollama_sync import open_chat
from ._run_async import arun_stream
from ._run_sync import run_stream
from ._tool_schema import function_tools
from ._transport import model_name, require

__all__ = ["OllamaChatModel", "ollama_messages"]

DEFAULT_BASE_URL: Final = "http://localhost:11434"
# Loading a model can take minutes before the first line; connecting cannot.
_DEFAULT_TIMEOUT: Final = 600.0
_CONNECT_TIMEOUT: Final = 10.0
_DATA_URL_MARK: Final = ";base64,"


def _images(message: Message) -> list[str]:
    images: list[str] = []
    for part in message.content:
        if part.type == "image_url" and _DATA_URL_MARK in part.content:
            images.append(part.content.split(_DATA_URL_MARK, 1)[1])
        elif part.type not in ("text", "thinking"):
            raise LangHooksError(
                "invalid_request",
                f"Ollama requests take text and base64 data: URL images, not a "
                f"{part.type!r} part {part.content[:40]!r}",
            )
    return images


def ollama_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """``messages`` as ``/api/chat`` messages.

    Tool results become one ``role: "tool"`` message each (with ``tool_name`` and
    ``tool_call_id``); tool call arguments are sent as JSON objects; an assistant's
    thinking goes back in ``thinking``.

    Raises:
        LangHooksError: a message holds content Ollama cannot take.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            wire.extend(
                {
                    "role": "tool",
                    "content": result.text,
                    "tool_name": result.name,
                    "tool_call_id": result.tool_call_id,
                }
                for result in message.tool_results
            )
            continue
        entry: dict[str, Any] = {"role": message.role, "content": message.text}
        images = _images(message)
        if images:
            entry["images"] = images
        if message.thinking:
            entry["thinking"] = message.thinking
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.call_id,
                    "function": {
                        "index": call.index,
                        "name": call.name,
                        "arguments": dict(call.arguments),
                    },
                }
                for call in message.tool_calls
            ]
        wire.append(entry)
    return wire


class OllamaChatModel:
    """A model served by Ollama, through its native ``/api/chat`` stream.

    Args:
        model: the model name, for example ``"qwen3:8b"``.
        base_url: the Ollama server (``http://localhost:11434`` by default).
        think: ask for thinking (``True``/``False``, or a level such as
            ``"high"`` for models that take one); the model's default if None.
        temperature: the sampling temperature, if any.
        max_tokens: the output limit (``options.num_predict``), if any.
        timeout: seconds before a read times out (10 minutes by default: loading
            a model can take a while).
        extra_params: more request fields, sent as given (``keep_alive``,
            ``format``, ``options``, ...).

    Raises:
        ImportError: the ``ollama`` extra (httpx) is not installed.
    """

    _format: StreamFormat = "ollama"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        think: bool | Literal["low", "medium", "high", "max"] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        httpx = require("httpx", "ollama")
        self.model: Final = model_name(model)
        self.base_url: Final = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.think: Final = think
        self.temperature: Final = temperature
        self.max_tokens: Final = max_tokens
        self.extra_params: Final[Mapping[str, Any]] = dict(extra_params or {})
        self._timeout: Any = httpx.Timeout(
            timeout if timeout is not None else _DEFAULT_TIMEOUT,
            connect=_CONNECT_TIMEOUT if timeout is None else timeout,
        )
        self._httpx: Any = httpx
        self._url: Final = f"{self.base_url}/api/chat"

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": ollama_messages(request.messages),
            "stream": True,
        }
        if request.tools:
            payload["tools"] = function_tools(request.tools)
        if self.think is not None:
            payload["think"] = self.think
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["num_predict"] = self.max_tokens
        if options:
            payload["options"] = options
        payload.update(self.extra_params)
        return payload

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Stream one response into ``handler`` and return it.

        Args:
            request: the conversation and the tools.
            handler: receives the stream's events.
            handle: a cancel handle the caller holds before the first token.

        Returns:
            The response (status "cancelled" if the handle was cancelled).

        Raises:
            LangHooksError: the request or the stream failed; ``handler.on_error``
                was called first.
        """

        handle = handle if handle is not None else StreamingHandle()
        return run_stream(
            self._format,
            handler,
            handle,
            lambda: open_chat(
                self._httpx, self._url, self._payload(request), self._timeout, handle
            ),
        )

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``stream``; a sync handler is called inline.

        Raises:
            LangHooksError: the request or the stream failed; ``handler.on_error``
                was called first.
        """

        handle = handle if handle is not None else StreamingHandle()
        return await arun_stream(
            self._format,
            handler,
            handle,
            lambda: aopen_chat(
                self._httpx, self._url, self._payload(request), self._timeout, handle
            ),
        )

"""What the models on an official provider SDK share.

``OpenAIChatModel``, ``OpenAIResponsesModel`` and ``AnthropicChatModel`` differ only
in the SDK they load, the API resource they stream from, and how a ``ChatRequest``
becomes that API's parameters; the options, the clients (with the SDK's own retries
off) and the streaming through ``run_stream`` / ``arun_stream`` are this one class.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, ClassVar, Final, cast

from .._core._messages import ChatResponse
from .._core._model import ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._drive import StreamFormat
from ._transport import AsyncBody, Body, arun_stream, model_name, run_stream

__all__ = ["SDKChatModel"]


class SDKChatModel:
    """A chat model streaming through an official provider SDK.

    Subclasses set ``_format`` and implement ``_new_clients``, ``_resource`` and
    ``_params`` (or ``_open`` and ``_aopen``, for an SDK without
    ``with_streaming_response``).
    """

    _format: ClassVar[StreamFormat]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        self.model: Final = model_name(model)
        self.max_tokens: Final = max_tokens
        self.temperature: Final = temperature
        self.extra_params: Final[Mapping[str, Any]] = dict(extra_params or {})
        options: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key,
            "max_retries": 0,  # the runtime retries; every failure must be seen
        }
        if timeout is not None:
            options["timeout"] = timeout
        self._client, self._async_client = self._new_clients(options)

    def _new_clients(self, options: dict[str, Any]) -> tuple[Any, Any]:
        """The SDK's sync and async clients built with ``options``."""
        raise NotImplementedError

    def _resource(self, client: Any) -> Any:
        """The API resource of ``client`` whose ``create`` streams a response."""
        raise NotImplementedError

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        """``request`` as the API's ``create`` parameters."""
        raise NotImplementedError

    def _open(self, client: Any, request: ChatRequest) -> AbstractContextManager[Body]:
        """Send ``request`` with ``client``: its streamed HTTP response, unread.

        The openai and anthropic SDKs hand the raw response over through
        ``with_streaming_response``; a model on another SDK overrides this.
        """
        resource = self._resource(client).with_streaming_response
        return cast(
            "AbstractContextManager[Body]", resource.create(**self._params(request))
        )

    def _aopen(
        self, client: Any, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncBody]:
        """The async twin of ``_open``."""
        resource = self._resource(client).with_streaming_response
        return cast(
            "AbstractAsyncContextManager[AsyncBody]",
            resource.create(**self._params(request)),
        )

    @property
    def base_url(self) -> str:
        """The server the model talks to."""
        return str(self._client.base_url)

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

        return run_stream(
            self._format, handler, handle, lambda: self._open(self._client, request)
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

        return await arun_stream(
            self._format,
            handler,
            handle,
            lambda: self._aopen(self._async_client, request),
        )

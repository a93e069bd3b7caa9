"""What the models on an official provider SDK share.

``OpenAIChatModel``, ``OpenAIResponsesModel`` and ``AnthropicChatModel`` differ only
in the SDK they load, the API resource they stream from, and how a ``ChatRequest``
becomes that API's parameters; the options, the clients (with the SDK's own retries
off) and the streaming through ``run_stream`` / ``arun_stream`` are this one class.

A stream is opened with the API's plain ``create(..., stream=True)``, the call an
instrumentation patching the SDK (``opentelemetry-instrumentation-openai-v2`` and
its kin) knows how to wrap, and its bytes are read from the HTTP response the SDK's
stream object (or the wrapper around it) holds. Closing goes through the object's
own exit (``__exit__``/``__aexit__``, else ``close()``, awaited when it returns an
awaitable), so a wrapper ends its span, and then the HTTP response itself is
closed, whatever the wrapper did.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, ClassVar, Final

from .._core._messages import ChatResponse
from .._core._model import ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from ._formats import StreamFormat
from ._raw_async import asdk_body
from ._raw_sync import sdk_body
from ._run_async import AsyncBody, aerror_body_hook, arun_stream
from ._run_sync import Body, error_body_hook, run_stream
from ._transport import model_name

__all__ = ["SDKChatModel", "sdk_http_client"]


def sdk_http_client(sdk: Any, asynchronous: bool = False) -> Any:
    """The HTTP client an official SDK's client gets: the SDK's own default one
    (its timeouts, limits and redirects) with ``error_body_hook``.

    Args:
        sdk: the ``openai`` or ``anthropic`` module.
        asynchronous: the async client's (``DefaultAsyncHttpxClient``).
    """
    if asynchronous:
        return sdk.DefaultAsyncHttpxClient(event_hooks={"response": [aerror_body_hook]})
    return sdk.DefaultHttpxClient(event_hooks={"response": [error_body_hook]})


class SDKChatModel:
    """A chat model streaming through an official provider SDK.

    Subclasses set ``_format`` and implement ``_new_clients``, ``_resource`` and
    ``_params`` (or ``_open`` and ``_aopen``, for an SDK whose ``create`` does not
    stream an HTTP response).
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
        """``request`` as the API's ``create`` parameters (with ``stream=True``)."""
        raise NotImplementedError

    def _open(self, client: Any, request: ChatRequest) -> AbstractContextManager[Body]:
        """Send ``request`` with ``client``: its streamed HTTP response, unread.

        The API's plain ``create(..., stream=True)`` is called (see the module
        docstring); a model on an SDK without one overrides this.
        """
        return sdk_body(self._resource(client).create(**self._params(request)))

    def _aopen(
        self, client: Any, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncBody]:
        """The async twin of ``_open``."""
        return _AsyncOpening(self._resource(client).create(**self._params(request)))

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


class _AsyncOpening:
    """An async ``create(...)`` awaited on entering, then its stream's body.

    ``arun_stream`` calls ``open_body()`` synchronously and enters what it gets:
    the coroutine of the async client's ``create`` is awaited there.
    """

    __slots__ = ("_body", "_creating")

    def __init__(self, creating: Any) -> None:
        self._creating = creating
        self._body: Any = None

    async def __aenter__(self) -> AsyncBody:
        stream = await self._creating
        self._body = asdk_body(stream)
        body: AsyncBody = await self._body.__aenter__()
        return body

    async def __aexit__(self, *exc_info: object) -> None:
        # Only called once __aenter__ returned, so the body is there.
        await self._body.__aexit__(None, None, None)

"""The Mistral chat model on the official ``mistralai`` SDK.

Mistral's stream is Chat-Completions-shaped: the SDK sends the request
(``chat.stream``) and its httpx response is read by langhooks' SSE decoder and
the ``openai-chat`` adapter (which knows Mistral's ``content`` arrays of
``thinking`` and ``text`` parts), never the SDK's iterator. The SDK's retries
are off: the runtime retries, and every failure reaches the handler.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from .._core._messages import Message
from .._core._model import ChatRequest
from ._openai import chat_completions_messages
from ._raw_async import amistral_body
from ._raw_sync import mistral_body
from ._run_async import AsyncBody, aerror_body_hook
from ._run_sync import Body, error_body_hook
from ._sdk import SDKChatModel
from ._tool_schema import function_tools
from ._transport import require

if TYPE_CHECKING:
    import mistralai.client

__all__ = ["MistralChatModel", "mistral_messages"]


def mistral_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """``messages`` as Mistral chat messages: Chat Completions' shape, each tool
    result also naming its tool (Mistral asks for ``name``).

    Raises:
        LangHooksError: a message holds content the API cannot take.
    """
    wire = chat_completions_messages(messages)
    names = {
        result.tool_call_id: result.name
        for message in messages
        for result in message.tool_results
    }
    for entry in wire:
        if entry["role"] == "tool":
            entry["name"] = names[entry["tool_call_id"]]
    return wire


class MistralChatModel(SDKChatModel):
    """A Mistral chat model on the official ``mistralai`` SDK.

    Args:
        model: the model name, for example ``"mistral-small-latest"``.
        api_key: the key; ``MISTRAL_API_KEY`` by default.
        base_url: another endpoint for the API (a proxy, a test server).
        client: a ``mistralai.client.Mistral`` to use instead (``api_key`` and
            ``base_url`` are then its own).
        max_tokens: the output limit, if any.
        temperature: the sampling temperature, if any.
        timeout: seconds before connecting or reading times out.
        extra_params: more keyword arguments for the SDK's ``chat.stream``
            (``reasoning_effort``, ``prompt_mode``, ``tool_choice``, ...).

    Raises:
        ImportError: the ``mistral`` extra is not installed.
    """

    _format = "openai-chat"
    # OpenAI's wire format, Mistral's service (OpenTelemetry's provider name).
    _provider_name = "mistral_ai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: mistralai.client.Mistral | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        self._given = client
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
        sdk = require("mistralai.client", "mistral")
        given = self._given
        if given is not None:
            if not isinstance(given, sdk.Mistral):
                raise TypeError(
                    "client must be a mistralai.client.Mistral, got "
                    f"{type(given).__name__}"
                )
            return given, given
        # The SDK reads through httpx2.
        httpx = require("httpx2", "mistral")
        kwargs: dict[str, Any] = {
            "api_key": options["api_key"] or os.environ.get("MISTRAL_API_KEY"),
            "server_url": options["base_url"],
            "client": httpx.Client(
                event_hooks={"response": [error_body_hook]}, follow_redirects=True
            ),
            "async_client": httpx.AsyncClient(
                event_hooks={"response": [aerror_body_hook]}, follow_redirects=True
            ),
        }
        if "timeout" in options:
            kwargs["timeout_ms"] = int(options["timeout"] * 1000)
        client = sdk.Mistral(**kwargs)
        return client, client

    @property
    @override
    def base_url(self) -> str:
        """The server the model talks to."""
        return str(self._client.sdk_configuration.get_server_details()[0])

    @override
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        utils = require("mistralai.client.utils", "mistral")
        params: dict[str, Any] = {
            "model": self.model,
            "messages": mistral_messages(request.messages),
            # No retries, also for a client passed in, whatever its own setting.
            "retries": utils.RetryConfig("none", None, False),
        }
        if request.tools:
            params["tools"] = function_tools(request.tools)
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            params["temperature"] = self.temperature
        params.update(self.extra_params)
        return params

    @override
    def _open(self, client: Any, request: ChatRequest) -> AbstractContextManager[Body]:
        return mistral_body(client, self._params(request))

    @override
    def _aopen(
        self, client: Any, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncBody]:
        return amistral_body(client, self._params(request))

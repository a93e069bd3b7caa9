"""The Cohere v2 Chat model on the official ``cohere`` SDK.

The SDK sends the request (``v2.with_raw_response.chat_stream``) and hands over
its httpx response unread; langhooks' SSE decoder and the ``cohere`` adapter read
it, the same path ``replay_stream`` takes. The SDK's retries are off: the runtime
retries, and every failure reaches the handler.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from .._core._messages import ContentPart, LangHooksError, Message
from .._core._model import ChatRequest
from ._raw import status_error
from ._run_async import AsyncBody, aerror_body_hook
from ._run_sync import Body, error_body_hook
from ._sdk import SDKChatModel
from ._tool_schema import function_tools
from ._transport import AsyncHTTPBody, require

if TYPE_CHECKING:
    import cohere

__all__ = ["CohereChatModel", "cohere_messages"]


def _content(content: tuple[ContentPart, ...]) -> str | list[dict[str, Any]]:
    parts = [p for p in content if p.type != "thinking"]
    if all(p.type == "text" for p in parts):
        return "".join(p.content for p in parts)
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if part.type == "text":
            blocks.append({"type": "text", "text": part.content})
        elif part.type == "image_url":
            blocks.append({"type": "image_url", "image_url": {"url": part.content}})
        else:
            raise LangHooksError(
                "invalid_request",
                f"Cohere requests cannot carry a {part.type!r} content part; "
                "send text or image_url parts",
            )
    return blocks


def cohere_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """``messages`` as Cohere v2 chat messages.

    An assistant turn that called tools goes back with its ``tool_plan`` (kept by
    the stream in ``metadata["tool_plan"]``) and its ``tool_calls``; a tool message
    becomes one ``role: "tool"`` message per result.

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
            entry: dict[str, Any] = {"role": "assistant"}
            if message.text:
                entry["content"] = message.text
            plan = message.metadata.get("tool_plan")
            if message.tool_calls:
                if isinstance(plan, str) and plan:
                    entry["tool_plan"] = plan
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
            wire.append({"role": message.role, "content": _content(message.content)})
    return wire


class CohereChatModel(SDKChatModel):
    """A Cohere v2 Chat model on the official ``cohere`` SDK.

    Args:
        model: the model name, for example ``"command-a-03-2025"``.
        api_key: the key; ``CO_API_KEY`` by default.
        base_url: another endpoint for the API (a proxy, a test server).
        client: a ``cohere.ClientV2`` to use instead (``api_key``, ``base_url``
            and ``timeout`` are then its own; ``astream`` opens an
            ``AsyncClientV2`` with its key and URL).
        max_tokens: the output limit, if any.
        temperature: the sampling temperature, if any.
        timeout: seconds before connecting or reading times out.
        extra_params: more request fields, sent in the JSON body as given
            (``{"thinking": {"type": "enabled"}}``, ``tool_choice``, ...).

    Raises:
        ImportError: the ``cohere`` extra is not installed.
        LangHooksError: the client cannot be created (no API key).
    """

    _format = "cohere"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: cohere.ClientV2 | None = None,
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
        cohere = require("cohere", "cohere")
        httpx = require("httpx", "cohere")
        given = self._given
        if given is not None:
            if not isinstance(given, cohere.ClientV2):
                raise TypeError(
                    f"client must be a cohere.ClientV2, got {type(given).__name__}"
                )
            wrapper = given._client_wrapper
            options["base_url"] = wrapper.get_base_url()
            options["api_key"] = wrapper._token  # a str, or a callable giving one
        kwargs: dict[str, Any] = {
            "api_key": options["api_key"],
            "max_retries": 0,  # the runtime retries; every failure must be seen
            "timeout": options.get("timeout"),
        }
        if options["base_url"] is not None:
            kwargs["base_url"] = options["base_url"]
        try:
            sync = given or cohere.ClientV2(
                **kwargs,
                httpx_client=httpx.Client(
                    event_hooks={"response": [error_body_hook]},
                    follow_redirects=True,
                ),
            )
            asynchronous = cohere.AsyncClientV2(
                **kwargs,
                httpx_client=httpx.AsyncClient(
                    event_hooks={"response": [aerror_body_hook]},
                    follow_redirects=True,
                ),
            )
        except cohere.core.api_error.ApiError as exc:
            raise LangHooksError(
                "authentication",
                f"cannot create the Cohere client: {exc} (pass api_key=)",
                original=exc,
            ) from exc
        return sync, asynchronous

    @property
    @override
    def base_url(self) -> str:
        """The server the model talks to."""
        return str(self._client._client_wrapper.get_base_url())

    @override
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": cohere_messages(request.messages),
            # max_retries: also for a client passed in, whatever its own setting.
            "request_options": {"max_retries": 0},
        }
        if request.tools:
            params["tools"] = function_tools(request.tools)
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.extra_params:
            # In the JSON body as given, whatever this SDK version knows.
            params["request_options"]["additional_body_parameters"] = dict(
                self.extra_params
            )
        return params

    @override
    def _open(self, client: Any, request: ChatRequest) -> AbstractContextManager[Body]:
        return _opened(client, self._params(request))

    @override
    def _aopen(
        self, client: Any, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncBody]:
        return _aopened(client, self._params(request))


@contextlib.contextmanager
def _opened(client: Any, params: dict[str, Any]) -> Iterator[Body]:
    cohere = require("cohere", "cohere")
    try:
        opened = client.v2.with_raw_response.chat_stream(**params)
        raw = opened.__enter__()
    except cohere.core.api_error.ApiError as exc:
        # A client passed in has no error hook: the SDK read the error itself.
        raise status_error(exc.status_code, exc.headers, exc.body) from exc
    try:
        yield raw.response
    finally:
        opened.__exit__(None, None, None)


@contextlib.asynccontextmanager
async def _aopened(client: Any, params: dict[str, Any]) -> AsyncIterator[AsyncBody]:
    async with client.v2.with_raw_response.chat_stream(**params) as raw:
        yield AsyncHTTPBody(raw.response)

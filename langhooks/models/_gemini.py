"""The Gemini API model on Google's official ``google-genai`` SDK.

The SDK builds the request (its base URL, API version, key header, or Vertex AI's
credentials) and sends it on its own httpx client; the response body is read by
langhooks' SSE decoder and the ``gemini`` adapter, the same path ``replay_stream``
takes, never the SDK's iterator. The SDK's retries are off: the runtime retries,
and every failure reaches the handler.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Any, Final

from typing_extensions import override

from .._core._messages import ContentPart, LangHooksError, Message
from .._core._model import ChatRequest
from .._core._tools import Tool
from ._raw_async import aresponse_body
from ._raw_sync import response_body
from ._run_async import AsyncBody
from ._run_sync import Body
from ._sdk import SDKChatModel
from ._tool_schema import tool_schema
from ._transport import require

if TYPE_CHECKING:
    import google.genai

__all__ = ["GeminiChatModel", "gemini_contents", "gemini_tools"]

# A call id langhooks made up for a call Gemini sent without one.
_MADE_UP_ID: Final = re.compile(r"call_\d+")
_DATA_URL: Final = re.compile(r"data:([^;,]+);base64,(.*)", re.S)


def _media_part(url: str) -> dict[str, Any]:
    found = _DATA_URL.fullmatch(url)
    if found is not None:
        return {"inlineData": {"mimeType": found[1], "data": found[2]}}
    return {"fileData": {"fileUri": url}}


def _parts(content: tuple[ContentPart, ...]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.type == "text":
            parts.append({"text": part.content})
        elif part.type == "image_url":
            parts.append(_media_part(part.content))
        elif part.type != "thinking":
            raise LangHooksError(
                "invalid_request",
                f"Gemini requests cannot carry a {part.type!r} content part; "
                "send text or image_url parts",
            )
    return parts


def _model_parts(message: Message) -> list[dict[str, Any]]:
    """An assistant message as Gemini ``model`` parts, with the thought
    signatures the stream kept (Gemini requires a call's back with it)."""
    parts: list[dict[str, Any]] = []
    signature = message.metadata.get("thinking_signature")
    if message.text:
        part: dict[str, Any] = {"text": message.text}
        if isinstance(signature, str) and signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    kept = message.metadata.get("thought_signatures")
    signatures: Mapping[str, Any] = kept if isinstance(kept, Mapping) else {}
    for call in message.tool_calls:
        function: dict[str, Any] = {"name": call.name, "args": dict(call.arguments)}
        if not _MADE_UP_ID.fullmatch(call.call_id):
            function["id"] = call.call_id
        part = {"functionCall": function}
        call_signature = signatures.get(call.call_id)
        if isinstance(call_signature, str) and call_signature:
            part["thoughtSignature"] = call_signature
        parts.append(part)
    return parts


def gemini_contents(
    messages: tuple[Message, ...],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``messages`` as Gemini's ``systemInstruction`` and ``contents``.

    System messages go to ``systemInstruction``; the assistant is the ``model``
    role; tool results become ``functionResponse`` parts of a ``user`` turn
    (``{"result": text}``, or ``{"error": text}`` for a failed call); consecutive
    turns of one role are merged into one.

    Raises:
        LangHooksError: a message holds content the API cannot take.
    """
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.extend(_parts(message.content))
            continue
        if message.role == "tool":
            role = "user"
            parts: list[dict[str, Any]] = []
            for result in message.tool_results:
                response: dict[str, Any] = {"name": result.name}
                if not _MADE_UP_ID.fullmatch(result.tool_call_id):
                    response["id"] = result.tool_call_id
                response["response"] = (
                    {"error": result.text}
                    if result.is_error
                    else {"result": result.text}
                )
                parts.append({"functionResponse": response})
        elif message.role == "assistant":
            role, parts = "model", _model_parts(message)
        else:
            role, parts = "user", _parts(message.content)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return ({"parts": system} if system else None), contents


def gemini_tools(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    """``tools`` as one Gemini tool of ``functionDeclarations`` (JSON Schema)."""
    return [
        {
            "functionDeclarations": [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parametersJsonSchema": tool_schema(tool),
                }
                for tool in tools
            ]
        }
    ]


class GeminiChatModel(SDKChatModel):
    """A Gemini API model on Google's official ``google-genai`` SDK.

    Args:
        model: the model name, for example ``"gemini-2.5-flash"``.
        api_key: the key; ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY`` by default.
        base_url: another endpoint for the API (a proxy, a test server).
        client: a ``google.genai.Client`` to use instead (a Vertex AI one, say);
            ``api_key`` and ``base_url`` are then not used.
        max_tokens: the output limit (``maxOutputTokens``), if any.
        temperature: the sampling temperature, if any.
        timeout: seconds before connecting or reading times out.
        extra_params: more request fields, merged into the JSON body as given
            (``{"generationConfig": {"thinkingConfig": {"includeThoughts":
            True}}}``, ``safetySettings``, ``toolConfig``, ...).

    Raises:
        ImportError: the ``gemini`` extra is not installed.
        LangHooksError: the client cannot be created (no API key).
    """

    _format = "gemini"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: google.genai.Client | None = None,
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
        genai = require("google.genai", "gemini")
        client = self._given
        if client is None:
            types = genai.types
            http: dict[str, Any] = {
                # One attempt: the runtime retries, so every failure is seen.
                "retry_options": types.HttpRetryOptions(attempts=1),
            }
            if options["base_url"] is not None:
                http["base_url"] = options["base_url"]
            if "timeout" in options:
                http["timeout"] = int(options["timeout"] * 1000)
            try:
                client = genai.Client(
                    api_key=options["api_key"], http_options=types.HttpOptions(**http)
                )
            except ValueError as exc:
                raise LangHooksError(
                    "authentication",
                    f"cannot create the Gemini client: {exc} (pass api_key=)",
                    original=exc,
                ) from exc
        elif not isinstance(client, genai.Client):
            raise TypeError(
                f"client must be a google.genai.Client, got {type(client).__name__}"
            )
        return client, client

    @property
    @override
    def base_url(self) -> str:
        """The server the model talks to."""
        return str(self._client._api_client._http_options.base_url)

    @override
    def _params(self, request: ChatRequest) -> dict[str, Any]:
        system, contents = gemini_contents(request.messages)
        body: dict[str, Any] = {"contents": contents}
        if system is not None:
            body["systemInstruction"] = system
        if request.tools:
            body["tools"] = gemini_tools(request.tools)
        config: dict[str, Any] = {}
        if self.max_tokens is not None:
            config["maxOutputTokens"] = self.max_tokens
        if self.temperature is not None:
            config["temperature"] = self.temperature
        extra = dict(self.extra_params)
        given = extra.pop("generationConfig", None)
        if isinstance(given, Mapping):
            config.update(given)
        if config:
            body["generationConfig"] = config
        body.update(extra)
        return body

    def _request(self, client: Any, request: ChatRequest) -> tuple[Any, Any]:
        """The SDK's API client and the httpx request it would send."""
        api = client._api_client
        transformers = require("google.genai._transformers", "gemini")
        path = f"{transformers.t_model(api, self.model)}:streamGenerateContent?alt=sse"
        built = api._build_request("post", path, self._params(request))
        headers = dict(built.headers)
        if api.vertexai and not api.api_key:  # pragma: no cover - needs Google auth
            headers["Authorization"] = f"Bearer {api._access_token()}"
        return api, {
            "method": "POST",
            "url": built.url,
            "content": json.dumps(built.data).encode(),
            "headers": headers,
            "timeout": built.timeout,
        }

    @override
    def _open(self, client: Any, request: ChatRequest) -> AbstractContextManager[Body]:
        api, parts = self._request(client, request)
        http = api._httpx_client
        return response_body(
            lambda: http.send(http.build_request(**parts), stream=True)
        )

    @override
    def _aopen(
        self, client: Any, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncBody]:
        api, parts = self._request(client, request)
        http = api._async_httpx_client
        return aresponse_body(
            lambda: http.send(http.build_request(**parts), stream=True)
        )

"""The Bedrock ConverseStream model on ``boto3``'s ``bedrock-runtime`` client.

boto3 signs and sends the request (credentials, region, endpoint as the user's
AWS configuration says); the response body, the binary eventstream, is read
raw and goes through langhooks' own frame decoder and the ``"bedrock"``
adapter, the path ``replay_stream`` takes, not botocore's event parser. The
client made here has botocore's retries off (one attempt): the chain retries,
and every failure reaches the handler.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any, Final, Protocol

from .._core._messages import ChatResponse, LangHooksError, Message
from .._core._model import ChatRequest
from .._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
    StreamingHandle,
)
from .._core._tools import Tool
from ._adapters.bedrock import bedrock_error
from ._formats import StreamFormat
from ._run_async import arun_stream
from ._run_sync import run_stream
from ._tool_schema import tool_schema
from ._transport import mapping_items, model_name, require

__all__ = [
    "BedrockChatModel",
    "bedrock_messages",
    "bedrock_tools",
]

# What one read asks the connection for: whatever has arrived, up to this much.
_READ_SIZE: Final = 64 * 1024
_IMAGE_FORMATS: Final = frozenset({"png", "jpeg", "gif", "webp"})


def _image_block(url: str) -> dict[str, Any]:
    """A ``data:image/...;base64,`` URL as a Converse image block."""
    head, comma, data = url.partition(",")
    kind = head.removeprefix("data:image/").removesuffix(";base64")
    if not (comma and head.startswith("data:image/") and head.endswith(";base64")):
        kind = ""
    if kind == "jpg":
        kind = "jpeg"
    if kind not in _IMAGE_FORMATS:
        raise LangHooksError(
            "invalid_request",
            "Bedrock takes images as bytes: give an image_url part as a "
            "data:image/(png|jpeg|gif|webp);base64,... URL",
        )
    try:
        image = base64.b64decode(data, validate=True)
    except binascii.Error as exc:
        raise LangHooksError(
            "invalid_request", f"an image data URL is not valid base64: {exc}"
        ) from exc
    return {"image": {"format": kind, "source": {"bytes": image}}}


def _user_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if part.type == "text":
            blocks.append({"text": part.content})
        elif part.type == "image_url":
            blocks.append(_image_block(part.content))
        elif part.type != "thinking":
            raise LangHooksError(
                "invalid_request",
                f"Bedrock requests cannot carry a {part.type!r} content part; "
                "send text or image_url parts",
            )
    return blocks


def _reasoning_blocks(message: Message) -> list[dict[str, Any]]:
    """The assistant's signed reasoning, sent back as the stream delivered it.

    Bedrock (for Claude) requires the signed reasoning of a turn that called
    tools to come back unchanged; the adapter keeps it in
    ``metadata["thinking_blocks"]`` (Anthropic's shape, so a conversation can move
    between the two). Reasoning without a signature cannot be verified, so it is
    left out.
    """
    blocks = mapping_items(message.metadata.get("thinking_blocks"))
    if not blocks:
        signature = message.metadata.get("thinking_signature")
        if isinstance(signature, str) and signature and message.thinking:
            blocks = [
                {
                    "type": "thinking",
                    "thinking": message.thinking,
                    "signature": signature,
                }
            ]
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "redacted_thinking" and block.get("data"):
            try:
                data = base64.b64decode(str(block["data"]), validate=True)
            except binascii.Error:
                continue  # not what a stream delivered: nothing to send back
            out.append({"reasoningContent": {"redactedContent": data}})
        elif block.get("type") == "thinking" and block.get("signature"):
            text = {
                "text": str(block.get("thinking", "")),
                "signature": str(block["signature"]),
            }
            out.append({"reasoningContent": {"reasoningText": text}})
    return out


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks = _reasoning_blocks(message)
    if message.text:
        blocks.append({"text": message.text})
    blocks.extend(
        {
            "toolUse": {
                "toolUseId": call.call_id,
                "name": call.name,
                "input": dict(call.arguments),
            }
        }
        for call in message.tool_calls
    )
    return blocks


def bedrock_messages(
    messages: tuple[Message, ...],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``messages`` as Converse's ``system`` blocks and ``messages``.

    System messages go to ``system``; tool results become ``toolResult`` blocks in
    a user turn; consecutive turns of one role are merged into one (Converse
    wants them alternating).

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
                    "toolResult": {
                        "toolUseId": result.tool_call_id,
                        "content": [{"text": result.text}],
                        "status": "error" if result.is_error else "success",
                    }
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


def bedrock_tools(tools: tuple[Tool, ...]) -> dict[str, Any]:
    """``tools`` as Converse's ``toolConfig``."""
    specs: list[dict[str, Any]] = []
    for tool in tools:
        spec: dict[str, Any] = {
            "name": tool.name,
            "inputSchema": {"json": tool_schema(tool)},
        }
        if tool.description:  # Bedrock refuses an empty description
            spec["description"] = tool.description
        specs.append({"toolSpec": spec})
    return {"tools": specs}


def _client_error(exc: Exception) -> LangHooksError | None:
    """The ``LangHooksError`` for an exception boto3 raised opening the stream;
    None for one botocore does not define (the transport classifies it)."""
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):  # botocore's ClientError: an HTTP error
        error = response.get("Error") or {}
        meta = response.get("ResponseMetadata") or {}
        status = meta.get("HTTPStatusCode")
        return bedrock_error(
            str(error.get("Code") or "") or None,
            str(error.get("Message") or "") or str(exc),
            status=status if isinstance(status, int) else None,
            headers=meta.get("HTTPHeaders"),
            original=exc,
        )
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = f"{type(exc).__name__}: {exc}"
    if names & {"ConnectTimeoutError", "ReadTimeoutError"}:
        return LangHooksError(
            "timeout", f"the request timed out ({text})", original=exc
        )
    if names & {"EndpointConnectionError", "ConnectionClosedError", "HTTPClientError"}:
        return LangHooksError(
            "connection", f"the connection failed: {text}", original=exc
        )
    if names & {"NoCredentialsError", "PartialCredentialsError"}:
        return LangHooksError(
            "authentication",
            f"no AWS credentials: {exc} (configure them as boto3 reads them)",
            original=exc,
        )
    if "ParamValidationError" in names:
        return LangHooksError(
            "invalid_request", f"Bedrock refused the request: {exc}", original=exc
        )
    return None  # for the transport's own classification


def _read_error(exc: Exception) -> LangHooksError:
    """The ``LangHooksError`` for a failure reading the body (urllib3's)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = f"{type(exc).__name__}: {exc}"
    if names & {"ReadTimeoutError", "TimeoutError"}:
        return LangHooksError("timeout", f"the stream timed out ({text})", original=exc)
    return LangHooksError("connection", f"the connection failed: {text}", original=exc)


def _socket_of(raw: object) -> Any:
    """The socket under a urllib3 response (through http.client's reader)."""
    reader = getattr(getattr(raw, "_fp", None), "fp", None)
    return getattr(getattr(reader, "raw", None), "_sock", None)


def _shut(sock: Any) -> None:
    """Shut ``sock`` down (safe from any thread: a blocked read wakes)."""
    if sock is None:  # pragma: no cover - a urllib3 without http.client's reader
        return
    # OSError: already closed, so there is nothing to wake.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class ConverseStreamClient(Protocol):
    """What the model calls on a boto3 ``bedrock-runtime`` client (a client typed
    by ``boto3-stubs`` is one too)."""

    def converse_stream(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]:
        """Send a ConverseStream request; the response holds its event stream."""
        ...


class _Stream:
    """One ConverseStream response: opened on ``__enter__``, its body read raw.

    A cancel of the handle shuts the socket down, from any thread, so a blocked
    read wakes and the server sees the connection close.
    """

    def __init__(
        self,
        client: ConverseStreamClient,
        params: Mapping[str, Any],
        handle: StreamingHandle,
    ) -> None:
        self._client = client
        self._params = params
        self._handle = handle
        self._raw: Any = None
        self._socket: Any = None
        self._lock = threading.Lock()
        self._closed = False
        self._drained = False
        self.headers: Mapping[str, str] = {}

    def __enter__(self) -> _Stream:
        try:
            response = self._client.converse_stream(**self._params)
        except Exception as exc:
            error = _client_error(exc)
            if error is None:
                raise
            raise error from exc
        meta = response.get("ResponseMetadata") or {}
        self.headers = dict(meta.get("HTTPHeaders") or {})
        self._raw = response["stream"]._raw_stream
        self._socket = _socket_of(self._raw)
        self._handle.add_cancel_callback(self._shutdown)
        return self

    def _shutdown(self) -> None:
        with self._lock:
            if not self._closed:
                _shut(self._socket)

    def iter_bytes(self) -> Iterator[bytes]:
        """The body as it arrives."""
        try:
            yield from self._raw.stream(_READ_SIZE)
        except Exception as exc:
            raise _read_error(exc) from exc
        self._drained = True

    def close(self) -> None:
        """Close the response: release its connection when the body was read to
        its end; otherwise (cancelled, failed, or ended by its last event) shut
        the connection, so the server sees it close now."""
        with self._lock:
            self._closed = True
        if self._drained:
            self._raw.release_conn()
            return
        _shut(self._socket)
        self._raw.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _AsyncStream:
    """``_Stream`` for ``astream``: boto3 is synchronous, so the request and each
    read run in a worker thread while the handler runs in the event loop."""

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream
        self.headers: Mapping[str, str] = {}

    async def __aenter__(self) -> _AsyncStream:
        await asyncio.to_thread(self._stream.__enter__)
        self.headers = self._stream.headers
        return self

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives, each read in a worker thread."""
        chunks = self._stream.iter_bytes()
        while True:
            chunk = await asyncio.to_thread(next, chunks, None)
            if chunk is None:
                return
            yield chunk

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stream.close()


class BedrockChatModel:
    """A Bedrock model through the Converse API (``converse_stream``) on boto3.

    Args:
        model: the model or inference profile id, for example
            ``"us.anthropic.claude-sonnet-4-5-20250929-v1:0"``.
        client: a ``bedrock-runtime`` client to use (its own configuration,
            retries included, is kept); one is made from the default AWS
            configuration otherwise, with botocore's retries off.
        region: the AWS region for the client made here (``AWS_REGION`` or the
            AWS config file by default).
        endpoint_url: another endpoint for the client made here (a VPC
            endpoint, a proxy, a test server).
        max_tokens: ``inferenceConfig.maxTokens``, if any.
        temperature: ``inferenceConfig.temperature``, if any.
        extra_params: more ``converse_stream`` arguments, sent as given
            (``additionalModelRequestFields`` for thinking, ``guardrailConfig``,
            ``inferenceConfig`` keys, ...).

    Raises:
        ImportError: the ``bedrock`` extra (boto3) is not installed.
        LangHooksError: the client cannot be made (no region configured).
        ValueError: ``model`` is empty.
        TypeError: ``region`` or ``endpoint_url`` given with ``client``.
    """

    _format: StreamFormat = "bedrock"

    def __init__(
        self,
        model: str,
        *,
        client: ConverseStreamClient | None = None,
        region: str | None = None,
        endpoint_url: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        self.model: Final = model_name(model)
        self.max_tokens: Final = max_tokens
        self.temperature: Final = temperature
        self.extra_params: Final[Mapping[str, Any]] = dict(extra_params or {})
        if client is not None:
            if region is not None or endpoint_url is not None:
                raise TypeError(
                    "region and endpoint_url configure the client made here: give "
                    "them to your own client instead"
                )
            self.client: ConverseStreamClient = client
            return
        boto3 = require("boto3", "bedrock")
        config = require("botocore.config", "bedrock").Config(
            # The runtime retries (its events fire); botocore must not.
            retries={"total_max_attempts": 1, "mode": "standard"}
        )
        try:
            self.client = boto3.session.Session().client(
                "bedrock-runtime",
                region_name=region,
                endpoint_url=endpoint_url,
                config=config,
            )
        except Exception as exc:  # botocore's NoRegionError, a bad endpoint URL
            raise LangHooksError(
                "invalid_request",
                f"cannot create the bedrock-runtime client: {exc} (pass region= "
                "or set AWS_REGION)",
                original=exc,
            ) from exc

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        system, messages = bedrock_messages(request.messages)
        params: dict[str, Any] = {"modelId": self.model, "messages": messages}
        if system:
            params["system"] = system
        if request.tools:
            params["toolConfig"] = bedrock_tools(request.tools)
        inference: dict[str, Any] = {}
        if self.max_tokens is not None:
            inference["maxTokens"] = self.max_tokens
        if self.temperature is not None:
            inference["temperature"] = self.temperature
        extra = dict(self.extra_params)
        given = extra.pop("inferenceConfig", None)
        if isinstance(given, Mapping):
            inference.update(given)
        if inference:
            params["inferenceConfig"] = inference
        params.update(extra)
        return params

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
        handle = StreamingHandle() if handle is None else handle

        def open_body() -> _Stream:
            return _Stream(self.client, self._params(request), handle)

        return run_stream(self._format, handler, handle, open_body)

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``stream``; a sync handler is called inline.

        boto3 has no async client: the request and each read of the body run in
        a worker thread, the handler in the event loop.

        Raises:
            LangHooksError: the request or the stream failed; ``handler.on_error``
                was called first.
        """
        handle = StreamingHandle() if handle is None else handle

        def open_body() -> _AsyncStream:
            return _AsyncStream(_Stream(self.client, self._params(request), handle))

        return await arun_stream(self._format, handler, handle, open_body)

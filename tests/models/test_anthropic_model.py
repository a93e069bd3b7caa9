"""AnthropicChatModel through the official anthropic SDK against a local HTTP server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from langhooks import (
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    StreamingHandle,
    Tool,
    ToolCall,
    ToolResult,
)
from langhooks.models import AnthropicChatModel, ChatRequest

from . import AsyncRecorder, Recorder, local_fixture
from ._server import (
    WEATHER_TOOL,
    FixtureServer,
    Reply,
    cancel_from_thread,
    first_bytes_until,
    http_reply,
    stalled_reply,
    stream_reply,
    weather_request,
)

STREAM = "anthropic_thinking_tool.sse"
HEADERS = "anthropic_200_stream_headers.http"
TEXT = "I'll check the current weather in Paris for you."


REQUEST = weather_request("Weather in Paris?")


def model(server: FixtureServer, **options: Any) -> AnthropicChatModel:
    return AnthropicChatModel(
        "claude-test-model", base_url=server.url, api_key="sk-ant-test", **options
    )


class TestRequest:
    def test_translates_system_turns_tool_use_results_and_schemas(
        self, server: FixtureServer
    ) -> None:
        """System goes top-level, tool results are user tool_result blocks."""
        server.add(stream_reply(STREAM))
        thinking = {"type": "thinking", "thinking": "Let me see.", "signature": "c2ln"}
        redacted = {"type": "redacted_thinking", "data": "ZW5j"}
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message(
                    role="assistant",
                    content=[
                        ContentPart.thinking("Let me see."),
                        ContentPart.text("Checking."),
                    ],
                    tool_calls=[
                        ToolCall(
                            call_id="toolu_1",
                            name="get_weather",
                            arguments={"city": "Paris"},
                        )
                    ],
                    metadata={"thinking_blocks": (thinking, redacted)},
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="toolu_1",
                            name="get_weather",
                            content="boom",
                            is_error=True,
                        )
                    ]
                ),
                Message(
                    role="user",
                    content=[
                        ContentPart.text("And here?"),
                        ContentPart(type="image_url", content="https://x.test/a.png"),
                    ],
                ),
            ],
            tools=[*REQUEST.tools, Tool("no_args", WEATHER_TOOL.function)],
        )
        model(server, max_tokens=99, temperature=0.1, extra_params={"top_k": 5}).stream(
            request, Recorder()
        )
        sent = server.requests[0]
        body = sent.json
        assert sent.path == "/v1/messages"
        # The key travels as x-api-key (older SDKs) or a bearer token (newer ones).
        key = sent.headers.get("x-api-key") or sent.headers["authorization"]
        assert key.endswith("sk-ant-test")
        assert sent.headers["x-stainless-retry-count"] == "0"
        assert (body["model"], body["max_tokens"], body["stream"]) == (
            "claude-test-model",
            99,
            True,
        )
        assert (body["temperature"], body["top_k"]) == (0.1, 5)
        assert body["system"] == [{"type": "text", "text": "Be brief."}]
        assert body["messages"] == [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Weather in Paris?"}],
            },
            {
                "role": "assistant",
                "content": [
                    thinking,
                    redacted,
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "boom",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And here?"},
                    {
                        "type": "image",
                        "source": {"type": "url", "url": "https://x.test/a.png"},
                    },
                ],
            },
        ]
        assert body["tools"] == [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": {"type": "object", "properties": {"city": {}}},
            },
            {
                "name": "no_args",
                "description": "",
                "input_schema": {"type": "object", "properties": {}},
            },
        ]

    def test_thinking_signature_without_blocks(self, server: FixtureServer) -> None:
        """A message with only ``thinking_signature`` echoes one signed block."""
        server.add(stream_reply(STREAM))
        message = Message(
            role="assistant",
            content=[ContentPart.thinking("Hm."), ContentPart.text("Hi.")],
            metadata={"thinking_signature": "c2ln"},
        )
        model(server).stream(ChatRequest([Message.user("hi"), message]), Recorder())
        body = server.requests[0].json
        assert "system" not in body
        assert "tools" not in body
        assert "temperature" not in body
        assert body["max_tokens"] == 4096
        assert body["messages"][1]["content"] == [
            {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"},
            {"type": "text", "text": "Hi."},
        ]

    def test_unsigned_thinking_is_not_sent(self, server: FixtureServer) -> None:
        """Thinking the API cannot verify (no signature) is left out."""
        server.add(stream_reply(STREAM))
        message = Message(
            role="assistant",
            content=[ContentPart.thinking("Hm."), ContentPart.text("Hi.")],
        )
        user = Message(
            role="user", content=[ContentPart.thinking("?"), ContentPart.text("Go")]
        )
        call = ToolCall(call_id="toolu_2", name="get_weather")
        request = ChatRequest([user, message, Message.assistant("", [call])])
        model(server, timeout=5.0).stream(request, Recorder())
        messages = server.requests[0].json["messages"]
        assert messages[0]["content"] == [{"type": "text", "text": "Go"}]
        assert messages[1]["content"] == [
            {"type": "text", "text": "Hi."},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}},
        ]

    def test_unsupported_content_fails_before_sending(
        self, server: FixtureServer
    ) -> None:
        """A file part is an invalid_request error reported once; nothing is sent."""
        recorder = Recorder()
        part = ContentPart(type="file", content="f")
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(
                ChatRequest([Message(role="user", content=[part])]), recorder
            )
        assert raised.value.type == "invalid_request"
        assert recorder.errors == [raised.value]
        assert server.requests == []

    def test_model_name_must_be_a_string(self) -> None:
        """An empty model name is rejected at construction."""
        with pytest.raises(ValueError, match="model"):
            AnthropicChatModel("", api_key="k")

    def test_base_url_is_kept(self, server: FixtureServer) -> None:
        """``base_url`` points the SDK at another endpoint."""
        assert model(server).base_url.startswith(server.url)


class TestStreaming:
    def test_thinking_tool_fixture_end_to_end(self, server: FixtureServer) -> None:
        """Thinking, text, the tool call, usage, headers and rate limits arrive."""
        server.add(stream_reply(STREAM, headers_from=HEADERS))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        message = response.message
        assert message.thinking.startswith("The user is asking for the current weather")
        assert message.text == TEXT
        assert recorder.text == TEXT
        assert [(c.call_id, c.name, dict(c.arguments)) for c in message.tool_calls] == [
            (
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "get_weather",
                {"city": "Paris", "unit": "celsius"},
            )
        ]
        assert len(message.metadata["thinking_signature"]) == 400
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage is not None
        assert response.token_usage.input_tokens == 612 + 2048
        assert response.token_usage.output_tokens == 163
        assert "unmapped_raw_event" in recorder.names  # the ping
        assert recorder.names[-1] == "complete_response"
        headers = response.metadata["response_headers"]
        assert headers["request-id"] == "req_011CX4fGq7Rz2pVtN9bKc3Lm"
        ratelimit = response.metadata["ratelimit"]
        assert ratelimit["input_tokens_remaining"] == 1999000
        assert ratelimit["tokens_reset"] == "2026-01-01T10:00:01Z"

    def test_thinking_round_trips(self, server: FixtureServer) -> None:
        """The streamed message, sent back, carries its signed thinking block."""
        server.add(stream_reply(STREAM), stream_reply(STREAM))
        first = model(server).stream(REQUEST, Recorder())
        model(server).stream(
            ChatRequest([*REQUEST.messages, first.message]), Recorder()
        )
        blocks = server.requests[1].json["messages"][1]["content"]
        assert blocks[0]["type"] == "thinking"
        assert blocks[0]["thinking"] == first.message.thinking
        assert len(blocks[0]["signature"]) == 400
        assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use"]

    async def test_async_stream_with_an_async_handler(
        self, server: FixtureServer
    ) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(STREAM, headers_from=HEADERS))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == TEXT
        assert recorder.names.count("complete_tool_call") == 1
        assert recorder.names[-1] == "complete_response"
        assert response.metadata["response_headers"]["request-id"].startswith("req_")


class TestErrors:
    def test_rate_limit_fixture(self, server: FixtureServer) -> None:
        """A 429 is rate_limited with retry-after, headers and parsed limits."""
        server.add(http_reply("anthropic_429_rate_limit.http"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable, error.retry_after) == (
            "rate_limited",
            True,
            23.0,
        )
        assert error.message.startswith("This request would exceed the rate limit")
        assert error.metadata["status_code"] == 429
        headers = error.metadata["response_headers"]
        assert headers["anthropic-ratelimit-input-tokens-remaining"] == "0"
        ratelimit = error.metadata["ratelimit"]
        assert (ratelimit["input_tokens_remaining"], ratelimit["retry_after"]) == (
            0,
            23.0,
        )
        assert recorder.events == [("error", error)]

    def test_overloaded_fixture(self, server: FixtureServer) -> None:
        """A 529 is a retryable overloaded error."""
        server.add(http_reply("anthropic_529_overloaded.http"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("overloaded", True)
        assert raised.value.message.startswith("Overloaded")
        assert recorder.errors == [raised.value]

    def test_authentication_error(self, server: FixtureServer) -> None:
        """A 401 is a non-retryable authentication error."""
        body = {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        }
        server.add(
            Reply(
                status=401,
                headers=(("content-type", "application/json"),),
                body=json.dumps(body).encode(),
            )
        )
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("authentication", False)

    def test_in_stream_error_event(self, server: FixtureServer) -> None:
        """An ``event: error`` after a 200 is classified by its type and raised."""
        data = local_fixture(STREAM).read_bytes()
        head = data[: first_bytes_until(data, b"\n\n", count=3)]
        error = (
            b"event: error\ndata: "
            b'{"type": "error", "error": {"type": "overloaded_error", '
            b'"message": "Overloaded"}}\n\n'
        )
        server.add(
            Reply(headers=(("content-type", "text/event-stream"),), body=head + error)
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "overloaded"
        assert recorder.errors == [raised.value]

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(STREAM).read_bytes()
        cut = first_bytes_until(data, b"\n\n", count=10)
        server.add(stream_reply(STREAM, drop_after=cut))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.text == "I'll check"
        assert recorder.errors == [raised.value]
        assert recorder.names[-1] == "error"

    async def test_async_overloaded(self, server: FixtureServer) -> None:
        """``astream`` classifies HTTP errors the same way."""
        server.add(http_reply("anthropic_529_overloaded.http"))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "overloaded"
        assert recorder.events == [("error", raised.value)]


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        server.add(stream_reply(STREAM, trickle=b": keep-alive\n\n"))
        recorder = Recorder(cancel_after=1)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert [n for n in recorder.names if n != "unmapped_raw_event"] == [
            "partial_thinking"
        ]
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread(self, server: FixtureServer) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        server.add(stalled_reply(STREAM, 5))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = model(server).stream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert "complete_response" not in recorder.names
        assert "error" not in recorder.names
        assert all(h is handle for h in recorder.handles)
        assert server.disconnected.wait(20)

    async def test_async_cancel_from_another_thread(
        self, server: FixtureServer
    ) -> None:
        """``astream`` stops on a cancel from another thread and closes the socket."""
        server.add(stalled_reply(STREAM, 5))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = await model(server).astream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert "complete_response" not in recorder.names
        assert server.disconnected.wait(20)

"""OpenAIChatModel through the official openai SDK against a local HTTP server."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingHandle,
    Tool,
    ToolCall,
    ToolResult,
)
from langhooks.models import ChatRequest, OpenAIChatModel

from . import AsyncRecorder, Recorder, local_fixture
from ._server import (
    FixtureServer,
    Reply,
    cancel_from_thread,
    first_bytes_until,
    http_reply,
    stalled_reply,
    stream_reply,
    unused_port,
)

HEADERS = "openai_200_stream_headers.http"
TOOLS = "openai_chat_tools.sse"
TEXT = "I'll check the weather in Edinburgh and the latest AAPL price for you."


def _weather(arguments: Any, context: Any) -> str:
    return "sunny"


REQUEST = ChatRequest(
    [Message.system("Be brief."), Message.user("Weather in Edinburgh?")],
    tools=[
        Tool(
            "get_weather",
            _weather,
            description="Current weather for a city.",
            parameters_schema={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        ),
        Tool("get_time", _weather),
    ],
)


def model(server: FixtureServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "gpt-4o", base_url=f"{server.url}/v1", api_key="sk-test", **options
    )


def error_reply(status: int, code: str, kind: str) -> Reply:
    body = {"error": {"message": f"{code} happened", "type": kind, "code": code}}
    return Reply(
        status=status,
        headers=(("content-type", "application/json"), ("x-request-id", "req_1")),
        body=json.dumps(body).encode(),
    )


class TestRequest:
    def test_translates_messages_tool_calls_results_and_schemas(
        self, server: FixtureServer
    ) -> None:
        """The body carries every message, one tool message per result, and schemas."""
        server.add(stream_reply(TOOLS))
        call = ToolCall(
            call_id="call_1", name="get_weather", arguments={"city": "Oslo"}
        )
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message(
                    role="assistant",
                    content=[
                        ContentPart.thinking("hmm"),
                        ContentPart.text("Checking."),
                    ],
                    tool_calls=[call, ToolCall(call_id="call_2", name="get_time")],
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="call_1", name="get_weather", content="9C"
                        ),
                        ToolResult(
                            tool_call_id="call_2", name="get_time", content="noon"
                        ),
                    ]
                ),
                Message.assistant("It is 9C."),
                Message(
                    role="user",
                    content=[
                        ContentPart.text("And this?"),
                        ContentPart(type="image_url", content="https://x.test/a.png"),
                    ],
                ),
            ],
            tools=REQUEST.tools,
        )
        model(server, max_tokens=50, temperature=0.5, extra_params={"seed": 7}).stream(
            request, Recorder()
        )
        body = server.requests[0].json
        assert server.requests[0].path == "/v1/chat/completions"
        assert body["model"] == "gpt-4o"
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
        assert (body["max_tokens"], body["temperature"], body["seed"]) == (50, 0.5, 7)
        assert body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Edinburgh?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"city": "Oslo"}',
                        },
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "9C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            {"role": "assistant", "content": "It is 9C."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "And this?"},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                ],
            },
        ]
        assert body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ]

    def test_assistant_tool_calls_without_text_send_null_content(
        self, server: FixtureServer
    ) -> None:
        """An assistant turn that only calls tools has ``content: null``."""
        server.add(stream_reply(TOOLS))
        call = ToolCall(call_id="call_1", name="get_weather", arguments={})
        model(server).stream(
            ChatRequest([Message.user("hi"), Message.assistant("", [call])]), Recorder()
        )
        assert server.requests[0].json["messages"][1]["content"] is None
        assert "tools" not in server.requests[0].json

    def test_reasoning_details_are_sent_back(self, server: FixtureServer) -> None:
        """The reasoning details an OpenRouter stream kept go back with the turn."""
        server.add(stream_reply(TOOLS))
        detail = {"type": "reasoning.text", "text": "Hm.", "signature": "sig"}
        turn = Message(
            role="assistant", content="Hi.", metadata={"reasoning_details": [detail]}
        )
        model(server).stream(ChatRequest([Message.user("hi"), turn]), Recorder())
        assert server.requests[0].json["messages"][1] == {
            "role": "assistant",
            "content": "Hi.",
            "reasoning_details": [detail],
        }

    def test_sdk_retries_are_off_and_the_key_is_sent(
        self, server: FixtureServer
    ) -> None:
        """One request per call, with the API key; the SDK never retries."""
        server.add(error_reply(500, "server_error", "server_error"))
        with pytest.raises(LangHooksError):
            model(server).stream(REQUEST, Recorder())
        assert len(server.requests) == 1
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"
        assert server.requests[0].headers["x-stainless-retry-count"] == "0"

    def test_unsupported_content_fails_before_sending(
        self, server: FixtureServer
    ) -> None:
        """A file part is an invalid_request error reported once; nothing is sent."""
        recorder = Recorder()
        request = ChatRequest(
            [Message(role="user", content=[ContentPart(type="file", content="f")])]
        )
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(request, recorder)
        assert raised.value.type == "invalid_request"
        assert recorder.errors == [raised.value]
        assert server.requests == []

    def test_missing_api_key_is_an_authentication_error(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without a key anywhere the model says how to pass one."""
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(LangHooksError, match="api_key") as raised:
            OpenAIChatModel("gpt-4o")
        assert raised.value.type == "authentication"

    def test_model_name_must_be_a_string(self) -> None:
        """An empty model name is rejected at construction."""
        with pytest.raises(ValueError, match="model"):
            OpenAIChatModel("", api_key="k")

    def test_base_url_is_kept(self, server: FixtureServer) -> None:
        """``base_url`` points the SDK at any OpenAI-compatible server."""
        assert model(server).base_url.startswith(f"{server.url}/v1")


class TestStreaming:
    def test_tool_call_fixture_end_to_end(self, server: FixtureServer) -> None:
        """Text, two complete tool calls, usage, headers and rate limits arrive."""
        server.add(stream_reply(TOOLS, headers_from=HEADERS))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        assert recorder.text == TEXT
        assert response.message.text == TEXT
        calls = response.message.tool_calls
        assert [(c.call_id, c.name, dict(c.arguments)) for c in calls] == [
            (
                "call_Qx3mVb7LhT2nK9pWcR4sYfZd",
                "get_weather",
                {"city": "Edinburgh", "units": "c"},
            ),
            (
                "call_8HdN2fLkPq5tWz1XmJv6RcBe",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ]
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (149, 71)
        assert recorder.names.count("complete_tool_call") == 2
        assert recorder.names[-1] == "complete_response"
        assert recorder.events[-1][1] is response
        headers = response.metadata["response_headers"]
        assert headers["x-request-id"] == "req_5b2f0c8e41d94a7c9e3b6d1f0a2c4e68"
        assert headers["x-ratelimit-remaining-tokens"] == "799862"
        ratelimit = response.metadata["ratelimit"]
        assert (ratelimit["tokens_remaining"], ratelimit["requests_reset"]) == (
            799862,
            0.012,
        )
        assert server.disconnected.is_set() is False

    def test_reasoning_content_of_compatible_servers_is_thinking(
        self, server: FixtureServer
    ) -> None:
        """DeepSeek-style ``reasoning_content`` streams as thinking, then the answer."""
        server.add(stream_reply("openai_compat_reasoning_content.sse"))
        recorder = Recorder()
        response = model(server).stream(
            ChatRequest([Message.user("9.11 or 9.8?")]), recorder
        )
        assert response.message.thinking == (
            "We need to compare 9.11 and 9.8. 9.8 is 9.80, "
            "and 0.80 > 0.11, so 9.8 is larger."
        )
        assert response.message.text == "9.8 is greater than 9.11."
        assert response.finish_reason is FinishReason.STOP
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (17, 64)
        assert recorder.names[0] == "partial_thinking"

    def test_in_stream_error_is_reported_once_and_raised(
        self, server: FixtureServer
    ) -> None:
        """A ``data: {"error": ...}`` after a 200 ends the stream with one on_error."""
        server.add(stream_reply("openai_chat_error_midstream.sse"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert recorder.text == "Here is a short summary"
        assert recorder.errors == [raised.value]
        assert recorder.names[-1] == "error"
        assert "complete_response" not in recorder.names

    async def test_async_stream_with_an_async_handler(
        self, server: FixtureServer
    ) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(TOOLS, headers_from=HEADERS))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == TEXT
        assert len(response.message.tool_calls) == 2
        assert recorder.names.count("complete_tool_call") == 2
        assert recorder.names[-1] == "complete_response"
        assert response.metadata["response_headers"]["x-request-id"].startswith("req_")

    async def test_async_stream_with_a_sync_handler(
        self, server: FixtureServer
    ) -> None:
        """``astream`` calls a sync handler inline."""
        server.add(stream_reply(TOOLS))
        recorder = Recorder()
        response = await model(server).astream(REQUEST, recorder)
        assert recorder.text == TEXT
        assert recorder.names[-1] == "complete_response"
        assert response.finish_reason is FinishReason.TOOL_EXECUTION


class TestErrors:
    def test_rate_limit_fixture(self, server: FixtureServer) -> None:
        """A 429 is rate_limited and retryable, with headers and parsed limits."""
        server.add(http_reply("openai_429_rate_limit.http"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable) == ("rate_limited", True)
        assert "Rate limit reached" in error.message
        assert error.metadata["status_code"] == 429
        assert (
            error.metadata["response_headers"]["x-ratelimit-reset-tokens"] == "50.529s"
        )
        ratelimit = error.metadata["ratelimit"]
        assert (ratelimit["tokens_remaining"], ratelimit["tokens_reset"]) == (
            4735,
            50.529,
        )
        # The fixture has no retry-after header; the reset time is in ratelimit.
        assert error.retry_after is None
        assert recorder.events == [("error", error)]

    @pytest.mark.parametrize(
        ("status", "code", "kind", "expected", "retryable"),
        [
            (401, "invalid_api_key", "invalid_request_error", "authentication", False),
            (400, "invalid_value", "invalid_request_error", "invalid_request", False),
            (
                503,
                "server_is_overloaded",
                "service_unavailable_error",
                "overloaded",
                True,
            ),
        ],
    )
    def test_http_errors_are_classified(
        self,
        server: FixtureServer,
        status: int,
        code: str,
        kind: str,
        expected: str,
        retryable: bool,
    ) -> None:
        """Each HTTP error status maps to its LangHooksError type, reported once."""
        server.add(error_reply(status, code, kind))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == (expected, retryable)
        assert raised.value.message.startswith(f"{code} happened")
        assert recorder.errors == [raised.value]

    def test_plain_string_error_body(self, server: FixtureServer) -> None:
        """A compatible server's ``{"error": "..."}`` body gives the message."""
        server.add(Reply(status=500, body=b'{"error": "engine crashed"}'))
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("stream_error", True)
        assert raised.value.message.startswith("engine crashed")

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(TOOLS).read_bytes()
        server.add(
            stream_reply(TOOLS, drop_after=first_bytes_until(data, b"\n\n", count=4))
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert raised.value.retryable is True
        assert recorder.text == "I'll check the"
        assert recorder.names[-1] == "error"
        assert recorder.errors == [raised.value]

    def test_connection_refused(self) -> None:
        """Nothing listening is a retryable connection error."""
        recorder = Recorder()
        refused = OpenAIChatModel(
            "gpt-4o", base_url=f"http://127.0.0.1:{unused_port()}/v1", api_key="k"
        )
        with pytest.raises(LangHooksError) as raised:
            refused.stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.errors == [raised.value]

    def test_read_timeout_mid_stream(self, server: FixtureServer) -> None:
        """A server that stops sending mid-stream is a timeout error."""
        server.add(stalled_reply(TOOLS, 3))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server, timeout=0.3).stream(REQUEST, recorder)
        assert raised.value.type == "timeout"
        assert recorder.errors == [raised.value]

    async def test_async_rate_limit(self, server: FixtureServer) -> None:
        """``astream`` classifies HTTP errors the same way."""
        server.add(http_reply("openai_429_rate_limit.http"))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "rate_limited"
        assert recorder.events == [("error", raised.value)]

    async def test_async_connection_dropped(self, server: FixtureServer) -> None:
        """``astream`` reports a cut connection once and raises it."""
        server.add(stream_reply(TOOLS, drop_after=900))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.names.count("error") == 1


class Explodes(Recorder):
    """A handler whose text callback raises: the user's own bug."""

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        raise KeyError("handler bug")


class TestHandlerExceptions:
    def test_a_handler_exception_propagates_unchanged(
        self, server: FixtureServer
    ) -> None:
        """The handler's own exception is not wrapped, and the connection closes."""
        server.add(stream_reply(TOOLS, trickle=b": keep-alive\n\n"))
        recorder = Explodes()
        with pytest.raises(KeyError, match="handler bug"):
            model(server).stream(REQUEST, recorder)
        assert "error" not in recorder.names
        assert server.disconnected.wait(20)


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        server.add(stream_reply(TOOLS, trickle=b": keep-alive\n\n"))
        recorder = Recorder(cancel_after=2)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_response", "partial_response"]
        assert response.message.text == "I'll check"
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread_while_blocked_reading(
        self, server: FixtureServer
    ) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        server.add(stalled_reply(TOOLS, 3))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = model(server).stream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert "complete_response" not in recorder.names
        assert "error" not in recorder.names
        assert server.disconnected.wait(20)

    def test_early_handle_is_the_streams_handle(self, server: FixtureServer) -> None:
        """The handle passed in is the one every partial's context carries."""
        server.add(stream_reply(TOOLS))
        recorder = Recorder()
        handle = StreamingHandle()
        model(server).stream(REQUEST, recorder, handle=handle)
        assert recorder.handles
        assert all(h is handle for h in recorder.handles)
        handle.cancel()  # after the end: nothing left to close, nothing called
        assert recorder.names[-1] == "complete_response"

    def test_cancel_before_the_first_token(self, server: FixtureServer) -> None:
        """A handle cancelled before the call sends nothing and calls nothing."""
        handle = StreamingHandle()
        handle.cancel()
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder, handle=handle)
        assert response.message.status == "cancelled"
        assert recorder.events == []
        assert server.requests == []

    async def test_async_cancel_from_another_thread(
        self, server: FixtureServer
    ) -> None:
        """``astream`` stops on a cancel from another thread and closes the socket."""
        server.add(stalled_reply(TOOLS, 3))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = await model(server).astream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert set(recorder.names) == {"partial_response"}
        assert server.disconnected.wait(20)

    async def test_async_cancel_before_the_first_token(
        self, server: FixtureServer
    ) -> None:
        """An async call with a cancelled handle returns at once."""
        handle = StreamingHandle()
        handle.cancel()
        response = await model(server).astream(REQUEST, AsyncRecorder(), handle=handle)
        assert response.message.status == "cancelled"
        assert server.requests == []

    @pytest.mark.parametrize("use_async", [False, True])
    async def test_cancel_while_waiting_for_headers(
        self, server: FixtureServer, use_async: bool
    ) -> None:
        """A cancel before the response starts ends the call as cancelled, silently."""
        release = threading.Event()
        server.add(Reply(status=500, body=b"{}", release=release))
        handle = StreamingHandle()
        recorder = Recorder()

        def cancel_then_answer() -> None:
            while not server.requests:
                release.wait(0.01)
            handle.cancel()
            release.set()

        thread = threading.Thread(target=cancel_then_answer)
        thread.start()
        if use_async:
            response = await model(server).astream(REQUEST, recorder, handle=handle)
        else:
            response = model(server).stream(REQUEST, recorder, handle=handle)
        thread.join()
        assert response.message.status == "cancelled"
        assert recorder.events == []

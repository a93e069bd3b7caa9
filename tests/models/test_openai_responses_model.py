"""OpenAIResponsesModel through the official openai SDK against a local HTTP server."""

from __future__ import annotations

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
from langhooks.models import ChatRequest, OpenAIResponsesModel

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

STREAM = "openai_responses.sse"
HEADERS = "openai_200_stream_headers.http"
TEXT = "Let me check the current weather in Paris."
SUMMARY = (
    "**Checking the weather**\n\n"
    "The user asks about Paris; I'll call get_weather with city Paris."
)


REQUEST = weather_request("Weather in Paris?")


def model(server: FixtureServer, **options: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        "gpt-5", base_url=f"{server.url}/v1", api_key="sk-test", **options
    )


class TestRequest:
    def test_translates_input_items_and_tools(self, server: FixtureServer) -> None:
        """Messages become input items; calls and results are keyed by call_id."""
        server.add(stream_reply(STREAM))
        reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message(
                    role="assistant",
                    content="Checking.",
                    tool_calls=[
                        ToolCall(
                            call_id="call_1",
                            name="get_weather",
                            arguments={"city": "Paris"},
                        )
                    ],
                    metadata={"reasoning_items": (reasoning,)},
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="call_1", name="get_weather", content="9C"
                        )
                    ]
                ),
                Message(
                    role="user",
                    content=[
                        ContentPart.text("And this?"),
                        ContentPart(type="image_url", content="https://x.test/a.png"),
                    ],
                ),
            ],
            tools=[*REQUEST.tools, Tool("no_args", WEATHER_TOOL.function)],
        )
        options = {"max_tokens": 64, "temperature": 0.2}
        model(server, **options, extra_params={"store": False}).stream(
            request, Recorder()
        )
        sent = server.requests[0]
        body = sent.json
        assert sent.path == "/v1/responses"
        assert (body["model"], body["stream"], body["store"]) == ("gpt-5", True, False)
        assert (body["max_output_tokens"], body["temperature"]) == (64, 0.2)
        assert body["input"] == [
            {"type": "message", "role": "system", "content": "Be brief."},
            {"type": "message", "role": "user", "content": "Weather in Paris?"},
            reasoning,
            {"type": "message", "role": "assistant", "content": "Checking."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "9C"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "And this?"},
                    {"type": "input_image", "image_url": "https://x.test/a.png"},
                ],
            },
        ]
        assert body["tools"] == [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {}}},
                "strict": False,
            },
            {
                "type": "function",
                "name": "no_args",
                "description": "",
                "parameters": {"type": "object", "properties": {}},
                "strict": False,
            },
        ]

    def test_minimal_request(self, server: FixtureServer) -> None:
        """Without tools or options only the input, model and stream are sent."""
        server.add(stream_reply(STREAM))
        call = ToolCall(call_id="call_1", name="get_weather")
        request = ChatRequest([Message.user("hi"), Message.assistant("", [call])])
        model(server).stream(request, Recorder())
        body = server.requests[0].json
        assert set(body) == {"model", "input", "stream"}
        assert [item["type"] for item in body["input"]] == ["message", "function_call"]

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


class TestStreaming:
    def test_fixture_end_to_end(self, server: FixtureServer) -> None:
        """Summary thinking, text, the function call and usage arrive."""
        server.add(stream_reply(STREAM, headers_from=HEADERS))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        message = response.message
        assert message.thinking == SUMMARY
        assert message.text == TEXT
        assert recorder.text == TEXT
        assert [(c.call_id, c.name, dict(c.arguments)) for c in message.tool_calls] == [
            ("call_Vn4pR8tY2mKq6sXw9bZc1LdH", "get_weather", {"city": "Paris"})
        ]
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage is not None
        assert response.token_usage.input_tokens == 86
        assert response.token_usage.output_tokens == 131
        assert recorder.names[-1] == "complete_response"
        assert response.metadata["response_headers"]["x-request-id"].startswith("req_")
        assert response.metadata["ratelimit"]

    def test_reasoning_items_round_trip(self, server: FixtureServer) -> None:
        """The reasoning item a stream kept is sent back before the answer."""
        server.add(stream_reply(STREAM), stream_reply(STREAM))
        first = model(server).stream(REQUEST, Recorder())
        model(server).stream(
            ChatRequest([*REQUEST.messages, first.message]), Recorder()
        )
        items = server.requests[1].json["input"]
        assert [item["type"] for item in items[2:]] == [
            "reasoning",
            "message",
            "function_call",
        ]

    def test_custom_tool_calls_go_back_as_custom_items(
        self, server: FixtureServer
    ) -> None:
        """A custom tool call and its result go back as custom_tool_call items."""
        server.add(stream_reply(STREAM))
        calls = [
            ToolCall(call_id="c1", name="sql", arguments={"input": "SELECT 1"}),
            ToolCall(call_id="f1", name="get_weather", arguments={}),
        ]
        turn = Message(
            role="assistant",
            content="",
            tool_calls=calls,
            metadata={"custom_tool_calls": ("c1", 5)},
        )
        results = Message.tool(
            [
                ToolResult(tool_call_id="c1", name="sql", content="1"),
                ToolResult(tool_call_id="f1", name="get_weather", content="9C"),
            ]
        )
        model(server).stream(
            ChatRequest([Message.user("q"), turn, results]), Recorder()
        )
        assert server.requests[0].json["input"][1:] == [
            {
                "type": "custom_tool_call",
                "call_id": "c1",
                "name": "sql",
                "input": "SELECT 1",
            },
            {
                "type": "function_call",
                "call_id": "f1",
                "name": "get_weather",
                "arguments": "{}",
            },
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "1"},
            {"type": "function_call_output", "call_id": "f1", "output": "9C"},
        ]

    async def test_async_stream(self, server: FixtureServer) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(STREAM))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == TEXT
        assert recorder.names.count("complete_tool_call") == 1
        assert recorder.names[-1] == "complete_response"


class TestErrors:
    def test_rate_limit(self, server: FixtureServer) -> None:
        """A 429 is rate_limited and retryable, with the headers."""
        server.add(http_reply("openai_429_rate_limit.http"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("rate_limited", True)
        assert raised.value.metadata["response_headers"]["x-request-id"]
        assert recorder.errors == [raised.value]

    def test_in_stream_error_event(self, server: FixtureServer) -> None:
        """A nested ``error`` event after a 200 is classified and raised."""
        data = local_fixture(STREAM).read_bytes()
        error = (
            b"event: error\ndata: "
            b'{"type":"error","sequence_number":2,"error":{"type":"too_many_requests",'
            b'"code":"too_many_requests","message":"Too Many Requests","param":null}}'
            b"\n\n"
        )
        body = data[: first_bytes_until(data, b"\n\n", count=2)] + error
        server.add(Reply(headers=(("content-type", "text/event-stream"),), body=body))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "rate_limited"
        assert recorder.errors == [raised.value]

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(STREAM).read_bytes()
        cut = first_bytes_until(data, b"\n\n", count=17)
        server.add(stream_reply(STREAM, drop_after=cut))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert "partial_thinking" in recorder.names
        assert recorder.errors == [raised.value]
        assert recorder.names[-1] == "error"


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        server.add(stream_reply(STREAM, trickle=b": keep-alive\n\n"))
        recorder = Recorder(cancel_after=1)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_thinking"]
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread(self, server: FixtureServer) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        server.add(stalled_reply(STREAM, 6))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = model(server).stream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert set(recorder.names) == {"partial_thinking"}
        assert server.disconnected.wait(20)

    async def test_async_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """``astream`` honours a cancel from a sync callback and closes the socket."""
        server.add(stream_reply(STREAM, trickle=b": keep-alive\n\n"))
        recorder = Recorder(cancel_after=2)
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_thinking", "partial_thinking"]
        assert server.disconnected.wait(20)

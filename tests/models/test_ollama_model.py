"""OllamaChatModel over httpx against a local HTTP server speaking /api/chat."""

from __future__ import annotations

import json
import threading
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
from langhooks.models import ChatRequest, OllamaChatModel

from . import AsyncRecorder, Recorder, local_fixture
from ._server import (
    WEATHER_TOOL,
    FixtureServer,
    Reply,
    cancel_from_thread,
    first_bytes_until,
    stalled_reply,
    stream_reply,
    unused_port,
    weather_request,
)

NDJSON = "application/x-ndjson"
CHAT = "ollama_chat.ndjson"
TOOLS = "ollama_chat_tools.ndjson"
TIMES = "\u00d7"  # the multiplication sign the fixture uses
THINKING = (
    f"Okay, the user asks for 17 {TIMES} 23. 17 {TIMES} 20 = 340, "
    f"17 {TIMES} 3 = 51, total 391."
)
ANSWER = f"17 {TIMES} 23 = **391**"


REQUEST = weather_request("What is 17 x 23?")


def model(server: FixtureServer, **options: Any) -> OllamaChatModel:
    return OllamaChatModel("qwen3:8b", base_url=f"{server.url}/", **options)


def ndjson(name: str, **changes: Any) -> Reply:
    return stream_reply(name, content_type=NDJSON, **changes)


class TestRequest:
    def test_translates_messages_tool_calls_results_and_options(
        self, server: FixtureServer
    ) -> None:
        """Messages, tool calls (object arguments), tool results and options go out."""
        server.add(ndjson(TOOLS))
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message(
                    role="assistant",
                    content=[ContentPart.thinking("Two calls."), ContentPart.text("")],
                    tool_calls=[
                        ToolCall(
                            call_id="call_a",
                            name="get_weather",
                            arguments={"city": "Tokyo"},
                        ),
                        ToolCall(
                            call_id="call_b",
                            name="get_weather",
                            arguments={"city": "Paris"},
                            index=1,
                        ),
                    ],
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="call_a", name="get_weather", content="9C"
                        ),
                        ToolResult(
                            tool_call_id="call_b", name="get_weather", content="12C"
                        ),
                    ]
                ),
                Message(
                    role="user",
                    content=[
                        ContentPart.text("And this?"),
                        ContentPart(
                            type="image_url", content="data:image/png;base64,QUJD"
                        ),
                    ],
                ),
            ],
            tools=[*REQUEST.tools, Tool("no_args", WEATHER_TOOL.function)],
        )
        model(
            server,
            think=True,
            temperature=0.3,
            max_tokens=100,
            extra_params={"keep_alive": "5m"},
        ).stream(request, Recorder())
        sent = server.requests[0]
        body = sent.json
        assert sent.path == "/api/chat"
        assert (body["model"], body["stream"], body["think"]) == (
            "qwen3:8b",
            True,
            True,
        )
        assert body["options"] == {"temperature": 0.3, "num_predict": 100}
        assert body["keep_alive"] == "5m"
        assert body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 17 x 23?"},
            {
                "role": "assistant",
                "content": "",
                "thinking": "Two calls.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "function": {
                            "index": 0,
                            "name": "get_weather",
                            "arguments": {"city": "Tokyo"},
                        },
                    },
                    {
                        "id": "call_b",
                        "function": {
                            "index": 1,
                            "name": "get_weather",
                            "arguments": {"city": "Paris"},
                        },
                    },
                ],
            },
            {
                "role": "tool",
                "content": "9C",
                "tool_name": "get_weather",
                "tool_call_id": "call_a",
            },
            {
                "role": "tool",
                "content": "12C",
                "tool_name": "get_weather",
                "tool_call_id": "call_b",
            },
            {"role": "user", "content": "And this?", "images": ["QUJD"]},
        ]
        assert body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": {"type": "object", "properties": {"city": {}}},
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "no_args",
                    "description": "",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ]

    def test_minimal_request(self, server: FixtureServer) -> None:
        """Without tools or options only the model, messages and stream are sent."""
        server.add(ndjson(CHAT))
        model(server).stream(ChatRequest([Message.user("hi")]), Recorder())
        assert set(server.requests[0].json) == {"model", "messages", "stream"}

    def test_linked_images_are_refused(self, server: FixtureServer) -> None:
        """Ollama takes inline images only: a URL is an invalid_request error."""
        part = ContentPart(type="image_url", content="https://x.test/a.png")
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(
                ChatRequest([Message(role="user", content=[part])]), recorder
            )
        assert raised.value.type == "invalid_request"
        assert recorder.errors == [raised.value]
        assert server.requests == []

    def test_default_base_url_and_model_check(self) -> None:
        """The default server is the local Ollama; an empty model name is refused."""
        assert OllamaChatModel("llama3").base_url == "http://localhost:11434"
        with pytest.raises(ValueError, match="model"):
            OllamaChatModel("")


class TestStreaming:
    def test_thinking_fixture_end_to_end(self, server: FixtureServer) -> None:
        """Thinking then the answer, with usage and the response headers."""
        server.add(ndjson(CHAT))
        recorder = Recorder()
        response = model(server).stream(ChatRequest([Message.user("17x23?")]), recorder)
        assert response.message.thinking == THINKING
        assert response.message.text == ANSWER
        assert recorder.text == ANSWER
        assert response.finish_reason is FinishReason.STOP
        assert response.token_usage is not None
        assert response.token_usage.input_tokens == 18
        assert response.token_usage.output_tokens == 34
        assert response.metadata["response_headers"]["content-type"] == NDJSON
        assert recorder.names[-1] == "complete_response"

    def test_tool_fixture_end_to_end(self, server: FixtureServer) -> None:
        """Two complete tool calls; Ollama's "stop" becomes TOOL_EXECUTION."""
        server.add(ndjson(TOOLS))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        calls = response.message.tool_calls
        assert [(c.call_id, c.name, dict(c.arguments)) for c in calls] == [
            ("call_4xq9m2rd", "get_weather", {"city": "Tokyo"}),
            ("call_p7t1w8zc", "get_weather", {"city": "Paris"}),
        ]
        assert response.message.text == ""
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert recorder.names.count("complete_tool_call") == 2

    def test_last_line_without_newline(self, server: FixtureServer) -> None:
        """A body whose final line lacks its newline still completes."""
        data = local_fixture(CHAT).read_bytes().rstrip(b"\n")
        server.add(Reply(headers=(("content-type", NDJSON),), body=data))
        response = model(server).stream(REQUEST, Recorder())
        assert response.message.text == ANSWER

    def test_body_ending_before_done_is_an_error(self, server: FixtureServer) -> None:
        """A stream that closes cleanly before its ``done`` line is one error."""
        data = local_fixture(CHAT).read_bytes()
        body = data[: first_bytes_until(data, b"\n", count=4)].rstrip(b"\n")
        server.add(Reply(headers=(("content-type", NDJSON),), body=body))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "stream_error"
        assert recorder.names.count("partial_thinking") == 4
        assert recorder.errors == [raised.value]

    async def test_async_body_ending_before_done(self, server: FixtureServer) -> None:
        """``astream`` reports a stream cut short of its ``done`` line once."""
        data = local_fixture(CHAT).read_bytes()
        body = data[: first_bytes_until(data, b"\n", count=4)]
        server.add(Reply(headers=(("content-type", NDJSON),), body=body))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "stream_error"
        assert recorder.names.count("error") == 1

    async def test_async_stream(self, server: FixtureServer) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(ndjson(TOOLS))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert len(response.message.tool_calls) == 2
        assert recorder.names.count("complete_tool_call") == 2
        assert recorder.names[-1] == "complete_response"


class TestHandlerType:
    """A handler the model cannot drive is refused before anything is sent."""

    def test_async_handler_to_stream_sends_no_request(
        self, server: FixtureServer
    ) -> None:
        """stream() refuses an async handler without making the request."""
        server.add(ndjson(CHAT))
        with pytest.raises(TypeError, match="AsyncStreamDriver"):
            model(server).stream(REQUEST, AsyncRecorder())  # type: ignore[arg-type]
        assert server.requests == []

    async def test_non_handler_to_astream_sends_no_request(
        self, server: FixtureServer
    ) -> None:
        """astream() refuses a non-handler without making the request."""
        server.add(ndjson(CHAT))
        with pytest.raises(TypeError, match="handler must be"):
            await model(server).astream(REQUEST, object())  # type: ignore[arg-type]
        assert server.requests == []


class TestErrors:
    def test_http_error_with_an_error_body(self, server: FixtureServer) -> None:
        """A 404 ``{"error": ...}`` is an invalid_request error with that message."""
        body = json.dumps({"error": "model 'nope' not found"}).encode()
        server.add(Reply(status=404, headers=(("content-type", NDJSON),), body=body))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "invalid_request"
        assert raised.value.message.startswith("model 'nope' not found")
        assert raised.value.metadata["status_code"] == 404
        assert recorder.errors == [raised.value]

    def test_overloaded_with_a_plain_body(self, server: FixtureServer) -> None:
        """A 503 with a non-JSON body is overloaded, and keeps the body as message."""
        server.add(Reply(status=503, body=b"server busy"))
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("overloaded", True)
        assert raised.value.message.startswith("server busy")

    def test_rate_limited_with_an_empty_body(self, server: FixtureServer) -> None:
        """A 429 with no body still classifies, from the status and retry-after."""
        server.add(Reply(status=429, headers=(("retry-after", "2"),)))
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retry_after) == ("rate_limited", 2.0)

    def test_mid_stream_error_line(self, server: FixtureServer) -> None:
        """A ``{"error": ...}`` line after a 200 is reported once and raised."""
        data = local_fixture(CHAT).read_bytes()
        body = data[: first_bytes_until(data, b"\n", count=3)]
        body += b'{"error":"an error was encountered while running the model"}\n'
        server.add(Reply(headers=(("content-type", NDJSON),), body=body))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert recorder.names.count("partial_thinking") == 3
        assert recorder.errors == [raised.value]

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(CHAT).read_bytes()
        server.add(ndjson(CHAT, drop_after=first_bytes_until(data, b"\n", count=5)))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.names.count("partial_thinking") == 5
        assert recorder.errors == [raised.value]

    def test_connection_refused(self) -> None:
        """Nothing listening is a retryable connection error."""
        refused = OllamaChatModel(
            "qwen3:8b", base_url=f"http://127.0.0.1:{unused_port()}"
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            refused.stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("connection", True)
        assert recorder.errors == [raised.value]

    def test_no_response_in_time(self, server: FixtureServer) -> None:
        """A server that never answers is a timeout error."""
        release = threading.Event()
        server.add(Reply(release=release))
        recorder = Recorder()
        try:
            with pytest.raises(LangHooksError) as raised:
                model(server, timeout=0.3).stream(REQUEST, recorder)
        finally:
            release.set()
        assert (raised.value.type, raised.value.retryable) == ("timeout", True)
        assert recorder.errors == [raised.value]

    async def test_async_http_error(self, server: FixtureServer) -> None:
        """``astream`` reads the error body and classifies it the same way."""
        body = json.dumps({"error": "bad"}).encode()
        server.add(Reply(status=400, body=body))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "invalid_request"
        assert recorder.events == [("error", raised.value)]

    async def test_async_connection_dropped(self, server: FixtureServer) -> None:
        """``astream`` reports a cut connection once and raises it."""
        server.add(ndjson(CHAT, drop_after=700))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.names.count("error") == 1


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        server.add(ndjson(CHAT, trickle=b"\n"))
        recorder = Recorder(cancel_after=2)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_thinking", "partial_thinking"]
        assert response.message.thinking == "Okay,"
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread(self, server: FixtureServer) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        server.add(stalled_reply(CHAT, 4))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = model(server).stream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert set(recorder.names) == {"partial_thinking"}
        assert all(h is handle for h in recorder.handles)
        assert server.disconnected.wait(20)

    async def test_async_cancel_from_another_thread(
        self, server: FixtureServer
    ) -> None:
        """``astream`` stops on a cancel from another thread and closes the socket."""
        server.add(stalled_reply(CHAT, 4))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = await model(server).astream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert server.disconnected.wait(20)

    @pytest.mark.parametrize("use_async", [False, True])
    async def test_cancel_while_the_model_loads(
        self, server: FixtureServer, use_async: bool
    ) -> None:
        """A cancel before the first byte (Ollama still loading the model) closes
        the connection at once: the call returns while the server still waits."""
        release = threading.Event()
        server.add(ndjson(CHAT, release=release))
        handle = StreamingHandle()
        recorder = Recorder()

        def cancel_once_requested() -> None:
            while not server.requests:
                release.wait(0.01)
            handle.cancel()

        thread = threading.Thread(target=cancel_once_requested)
        thread.start()
        try:
            if use_async:
                response = await model(server).astream(REQUEST, recorder, handle=handle)
            else:
                response = model(server).stream(REQUEST, recorder, handle=handle)
        finally:
            thread.join()
            release.set()  # the model is loaded: the server answers a closed socket
        assert response.message.status == "cancelled"
        assert recorder.events == []
        assert server.disconnected.wait(20)

    async def test_async_cancelled_before_start(self, server: FixtureServer) -> None:
        """A cancelled handle makes ``astream`` return at once without a request."""
        handle = StreamingHandle()
        handle.cancel()
        response = await model(server).astream(REQUEST, AsyncRecorder(), handle=handle)
        assert response.message.status == "cancelled"
        assert server.requests == []

"""GeminiChatModel through the official google-genai SDK against a local HTTP server."""

from __future__ import annotations

from typing import Any

import pytest
from google import genai

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
from langhooks.chain import LLMChain, RetryPolicy
from langhooks.models import ChatRequest, GeminiChatModel

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
    unused_port,
    weather_request,
)

STREAM = "gemini_thinking_tool.sse"
ANSWER = "gemini_text.sse"
RATE_LIMIT = "gemini_429_resource_exhausted.http"
REQUEST = weather_request("Weather in Paris?")
CALL_SIGNATURE = "CiQBjz1rX2dlbWluaS1zaWduYXR1cmUtZm9yLXRoZS1jYWxs"


def model(server: FixtureServer, **options: Any) -> GeminiChatModel:
    return GeminiChatModel(
        model="gemini-2.5-flash", api_key="test-key", base_url=server.url, **options
    )


class TestRequest:
    def test_translates_turns_signatures_results_and_tools(
        self, server: FixtureServer
    ) -> None:
        """System instruction, model turns with signatures, functionResponses."""
        server.add(stream_reply(ANSWER))
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message(
                    role="assistant",
                    content=[
                        ContentPart.thinking("Hm."),
                        ContentPart.text("Checking."),
                    ],
                    tool_calls=[
                        ToolCall(
                            call_id="fc_1", name="get_weather", arguments={"city": "P"}
                        ),
                        ToolCall(call_id="call_1", name="get_weather", index=1),
                    ],
                    metadata={
                        "thinking_signature": "dGV4dA==",
                        "thought_signatures": {"fc_1": "Y2FsbA=="},
                    },
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="fc_1", name="get_weather", content="ok"
                        ),
                        ToolResult(
                            tool_call_id="call_1",
                            name="get_weather",
                            content="boom",
                            is_error=True,
                        ),
                    ]
                ),
                Message(
                    role="user",
                    content=[
                        ContentPart.thinking("not sent"),
                        ContentPart.text("And these?"),
                        ContentPart(type="image_url", content="https://x.test/a.png"),
                        ContentPart(
                            type="image_url", content="data:image/png;base64,AA=="
                        ),
                    ],
                ),
            ],
            tools=[*REQUEST.tools, Tool("no_args", WEATHER_TOOL.function)],
        )
        extra = {
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
            "safetySettings": [],
        }
        model(server, max_tokens=99, temperature=0.1, extra_params=extra).stream(
            request, Recorder()
        )
        sent = server.requests[0]
        body = sent.json
        assert sent.path.endswith(
            "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        )
        assert sent.headers["x-goog-api-key"] == "test-key"
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
        assert body["generationConfig"] == {
            "maxOutputTokens": 99,
            "temperature": 0.1,
            "thinkingConfig": {"includeThoughts": True},
        }
        assert body["safetySettings"] == []
        assert body["contents"] == [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Checking.", "thoughtSignature": "dGV4dA=="},
                    {
                        "functionCall": {
                            "name": "get_weather",
                            "args": {"city": "P"},
                            "id": "fc_1",
                        },
                        "thoughtSignature": "Y2FsbA==",
                    },
                    {"functionCall": {"name": "get_weather", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "id": "fc_1",
                            "response": {"result": "ok"},
                        }
                    },
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"error": "boom"},
                        }
                    },
                    {"text": "And these?"},
                    {"fileData": {"fileUri": "https://x.test/a.png"}},
                    {"inlineData": {"mimeType": "image/png", "data": "AA=="}},
                ],
            },
        ]
        declarations = body["tools"][0]["functionDeclarations"]
        assert [d["name"] for d in declarations] == ["get_weather", "no_args"]
        assert declarations[1]["parametersJsonSchema"] == {
            "type": "object",
            "properties": {},
        }

    def test_plain_request_has_no_optional_fields(self, server: FixtureServer) -> None:
        """Without tools, system or options, only contents are sent."""
        server.add(stream_reply(ANSWER))
        empty = Message(role="assistant", content=[ContentPart.thinking("only")])
        model(server, timeout=5.0).stream(
            ChatRequest([Message.user("hi"), empty]), Recorder()
        )
        assert server.requests[0].json == {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}]
        }

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

    def test_client_passed_in_is_used(self, server: FixtureServer) -> None:
        """``client=`` streams through the caller's own google.genai.Client."""
        server.add(stream_reply(ANSWER))
        client = genai.Client(
            api_key="own-key", http_options=genai.types.HttpOptions(base_url=server.url)
        )
        gemini = GeminiChatModel(model="gemini-2.5-pro", client=client)
        assert gemini.base_url.startswith(server.url)
        gemini.stream(REQUEST, Recorder())
        assert server.requests[0].headers["x-goog-api-key"] == "own-key"

    def test_wrong_client_type(self) -> None:
        """A client that is not a google.genai.Client is a TypeError."""
        with pytest.raises(TypeError, match=r"google\.genai\.Client"):
            GeminiChatModel(model="gemini-2.5-flash", client=object())  # type: ignore[arg-type]

    def test_missing_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """No key anywhere is an authentication error naming api_key=."""
        for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
            monkeypatch.delenv(name, raising=False)
        with pytest.raises(LangHooksError, match="api_key=") as raised:
            GeminiChatModel(model="gemini-2.5-flash")
        assert raised.value.type == "authentication"


class TestStreaming:
    def test_thinking_text_and_call(self, server: FixtureServer) -> None:
        """Thought parts are thinking; the whole call is one fragment; usage adds
        thoughts to output."""
        server.add(stream_reply(STREAM))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        message = response.message
        assert message.thinking.startswith("**Checking the weather**")
        assert message.text == recorder.text == "Let me check the weather in Paris."
        partials = recorder.payloads("partial_tool_call")
        assert [(p.id, p.partial_arguments) for p in partials] == [
            ("fc_7d2c1a", '{"city": "Paris", "unit": "celsius"}')
        ]
        assert [(c.call_id, dict(c.arguments)) for c in message.tool_calls] == [
            ("fc_7d2c1a", {"city": "Paris", "unit": "celsius"})
        ]
        assert message.metadata["thought_signatures"] == {"fc_7d2c1a": CALL_SIGNATURE}
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (
            31,
            24 + 57,
        )
        assert (response.id, response.model_name) == (
            "gmR3sp0nse1d",
            "gemini-2.5-flash",
        )
        assert recorder.names[-1] == "complete_response"
        assert response.metadata["response_headers"]["content-type"].startswith(
            "text/event-stream"
        )

    def test_tool_round_trip_through_a_chain(self, server: FixtureServer) -> None:
        """LLMChain runs the call and sends its result and signature back."""
        server.add(stream_reply(STREAM), stream_reply(ANSWER))
        result = (
            LLMChain(model(server), tools=[WEATHER_TOOL])
            .add_message(Message.user("Weather in Paris?"))
            .run()
        )
        assert result.status == "ok"
        assert result.chain.messages[-1].text == "It is sunny in Paris."
        contents = server.requests[1].json["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        call_part = contents[1]["parts"][1]
        assert call_part["thoughtSignature"] == CALL_SIGNATURE
        assert call_part["functionCall"]["id"] == "fc_7d2c1a"
        assert contents[2]["parts"] == [
            {
                "functionResponse": {
                    "name": "get_weather",
                    "id": "fc_7d2c1a",
                    "response": {"result": "sunny"},
                }
            }
        ]

    async def test_async_stream(self, server: FixtureServer) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(STREAM))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == "Let me check the weather in Paris."
        assert recorder.names.count("complete_tool_call") == 1
        assert recorder.names[-1] == "complete_response"


class TestErrors:
    def test_rate_limit_with_retry_info(self, server: FixtureServer) -> None:
        """A 429 RESOURCE_EXHAUSTED is rate_limited, retry_after from RetryInfo."""
        server.add(http_reply(RATE_LIMIT))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable, error.retry_after) == (
            "rate_limited",
            True,
            37.0,
        )
        assert error.metadata["error_code"] == "RESOURCE_EXHAUSTED"
        assert error.metadata["status_code"] == 429
        assert recorder.events == [("error", error)]

    def test_chain_retries_after_the_delay(self, server: FixtureServer) -> None:
        """The SDK does not retry; the chain waits the delay asked and retries."""
        server.add(http_reply(RATE_LIMIT), stream_reply(ANSWER))
        waits: list[float] = []
        result = (
            LLMChain(model(server), retry=RetryPolicy(sleep=waits.append, max_delay=60))
            .add_message(Message.user("hi"))
            .run()
        )
        assert result.status == "ok"
        assert waits == [37.0]
        assert len(server.requests) == 2

    def test_error_event_mid_stream(self, server: FixtureServer) -> None:
        """An ``{"error": ...}`` event after text is classified by its status."""
        server.add(stream_reply("gemini_error_midstream.sse"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable) == ("stream_error", True)
        assert error.metadata["error_code"] == "INTERNAL"
        assert recorder.text == "It is "
        assert recorder.names[-1] == "error"
        assert recorder.errors == [error]

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(STREAM).read_bytes()
        cut = first_bytes_until(data, b"\r\n\r\n", count=2) + 10
        server.add(stream_reply(STREAM, drop_after=cut))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.text == "Let me check "
        assert recorder.errors == [raised.value]

    def test_stream_without_finish_is_truncated(self, server: FixtureServer) -> None:
        """A body that ends before a finishReason is a retryable stream_error."""
        data = local_fixture(STREAM).read_bytes()
        head = data[: first_bytes_until(data, b"\r\n\r\n", count=2)]
        server.add(Reply(headers=(("content-type", "text/event-stream"),), body=head))
        with pytest.raises(LangHooksError, match="finishReason") as raised:
            model(server).stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("stream_error", True)

    def test_connection_refused(self) -> None:
        """Nothing listening is one retryable connection error."""
        gemini = GeminiChatModel(
            model="gemini-2.5-flash",
            api_key="k",
            base_url=f"http://127.0.0.1:{unused_port()}",
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            gemini.stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("connection", True)
        assert recorder.events == [("error", raised.value)]

    async def test_async_rate_limit(self, server: FixtureServer) -> None:
        """``astream`` classifies HTTP errors the same way."""
        server.add(http_reply(RATE_LIMIT))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retry_after) == ("rate_limited", 37.0)
        assert recorder.events == [("error", raised.value)]


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        server.add(stalled_reply(STREAM, 2))
        recorder = Recorder(cancel_after=1)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_thinking"]
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread(self, server: FixtureServer) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        server.add(stalled_reply(STREAM, 2))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = model(server).stream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert "complete_response" not in recorder.names
        assert "error" not in recorder.names
        assert server.disconnected.wait(20)

    async def test_async_cancel_from_another_thread(
        self, server: FixtureServer
    ) -> None:
        """``astream`` stops on a cancel from another thread and closes the socket."""
        server.add(stalled_reply(STREAM, 2))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = await model(server).astream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert server.disconnected.wait(20)

"""CohereChatModel through the official cohere SDK (v2) against a local HTTP server."""

from __future__ import annotations

from typing import Any

import cohere
import pytest

from langhooks import (
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    StreamingHandle,
    ToolCall,
    ToolResult,
)
from langhooks.chain import LLMChain, RetryPolicy
from langhooks.models import ChatRequest, CohereChatModel

from . import AsyncRecorder, Recorder, local_fixture
from ._server import (
    WEATHER_TOOL,
    FixtureServer,
    cancel_from_thread,
    first_bytes_until,
    http_reply,
    stalled_reply,
    stream_reply,
    weather_request,
)

STREAM = "cohere_tool_plan_tool.sse"
ANSWER = "cohere_thinking_text.sse"
RATE_LIMIT = "cohere_429_trial_limit.http"
REQUEST = weather_request("Weather in Paris?")
PLAN = "I will look up the weather in Paris."


def model(server: FixtureServer, **options: Any) -> CohereChatModel:
    return CohereChatModel(
        model="command-a-03-2025", api_key="test-key", base_url=server.url, **options
    )


class TestRequest:
    def test_translates_turns_plans_calls_and_results(
        self, server: FixtureServer
    ) -> None:
        """The assistant turn goes back with its tool plan; results are tool turns."""
        server.add(stream_reply(ANSWER))
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message(
                    role="assistant",
                    content=[ContentPart.thinking(PLAN)],
                    tool_calls=[ToolCall(call_id="get_weather_1", name="get_weather")],
                    metadata={"tool_plan": PLAN},
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="get_weather_1",
                            name="get_weather",
                            content="sunny",
                        )
                    ]
                ),
                Message.assistant("Sunny."),
                Message.assistant("", [ToolCall(call_id="c2", name="get_weather")]),
                Message(
                    role="user",
                    content=[
                        ContentPart.text("And here?"),
                        ContentPart(type="image_url", content="https://x.test/a.png"),
                    ],
                ),
            ],
            tools=REQUEST.tools,
        )
        extra = {"thinking": {"type": "enabled", "token_budget": 500}}
        model(server, max_tokens=99, temperature=0.1, extra_params=extra).stream(
            request, Recorder()
        )
        sent = server.requests[0]
        body = sent.json
        assert sent.path == "/v2/chat"
        assert sent.headers["authorization"] == "Bearer test-key"
        assert (body["model"], body["stream"], body["max_tokens"]) == (
            "command-a-03-2025",
            True,
            99,
        )
        assert body["temperature"] == 0.1
        assert body["thinking"] == {"type": "enabled", "token_budget": 500}
        assert body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "tool_plan": PLAN,
                "tool_calls": [
                    {
                        "id": "get_weather_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "get_weather_1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "And here?"},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                ],
            },
        ]
        assert body["tools"][0]["function"]["name"] == "get_weather"

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
        """``client=`` streams through the caller's own ClientV2, retries off."""
        server.add(http_reply(RATE_LIMIT), stream_reply(ANSWER))
        client = cohere.ClientV2(api_key="own-key", base_url=server.url)
        command = CohereChatModel(model="command-a", client=client, timeout=5.0)
        assert command.base_url == server.url
        with pytest.raises(LangHooksError) as raised:
            command.stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retry_after) == ("rate_limited", 12.0)
        assert len(server.requests) == 1
        command.stream(REQUEST, Recorder())
        assert server.requests[1].headers["authorization"] == "Bearer own-key"

    def test_wrong_client_type(self) -> None:
        """A client that is not a cohere.ClientV2 is a TypeError."""
        with pytest.raises(TypeError, match=r"cohere\.ClientV2"):
            CohereChatModel(model="command-a", client=object())  # type: ignore[arg-type]

    def test_missing_key(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """No key anywhere is an authentication error naming api_key=."""
        monkeypatch.delenv("CO_API_KEY", raising=False)
        with pytest.raises(LangHooksError, match="api_key=") as raised:
            CohereChatModel(model="command-a")
        assert raised.value.type == "authentication"


class TestStreaming:
    def test_tool_plan_and_call(self, server: FixtureServer) -> None:
        """The tool plan is thinking; call fragments arrive as sent; usage is tokens."""
        server.add(stream_reply(STREAM))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        message = response.message
        assert message.thinking == recorder.thinking == PLAN
        assert message.metadata["tool_plan"] == PLAN
        fragments = [
            p.partial_arguments for p in recorder.payloads("partial_tool_call")
        ]
        assert fragments == ["", '{"', "city", '":', ' "', "Paris", '"}']
        assert [(c.call_id, dict(c.arguments)) for c in message.tool_calls] == [
            ("get_weather_q8w2e4r6t0y1", {"city": "Paris"})
        ]
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (1210, 58)
        assert response.id == "5f1d7c2e-8a41-4b6e-9d0c-3e2a7b9f1c44"

    def test_tool_round_trip_through_a_chain(self, server: FixtureServer) -> None:
        """LLMChain runs the call and sends the plan, the call and its result back."""
        server.add(stream_reply(STREAM), stream_reply(ANSWER))
        result = (
            LLMChain(model(server), tools=[WEATHER_TOOL])
            .add_message(Message.user("Weather in Paris?"))
            .run()
        )
        assert result.status == "ok"
        final = result.chain.messages[-1]
        assert (final.thinking, final.text) == (
            "The tool says sunny.",
            "It is sunny in Paris.",
        )
        messages = server.requests[1].json["messages"]
        assert messages[1]["tool_plan"] == PLAN
        assert messages[1]["tool_calls"][0]["id"] == "get_weather_q8w2e4r6t0y1"
        assert messages[2] == {
            "role": "tool",
            "tool_call_id": "get_weather_q8w2e4r6t0y1",
            "content": "sunny",
        }

    async def test_async_stream(self, server: FixtureServer) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(ANSWER))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == "It is sunny in Paris."
        assert response.finish_reason is FinishReason.STOP
        assert recorder.names[-1] == "complete_response"


class TestErrors:
    def test_rate_limit_with_retry_after(self, server: FixtureServer) -> None:
        """A 429 is rate_limited with the server's retry-after; one request only."""
        server.add(http_reply(RATE_LIMIT))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable, error.retry_after) == (
            "rate_limited",
            True,
            12.0,
        )
        assert error.message.startswith("You are using a Trial key")
        assert (
            error.metadata["response_headers"]["x-trial-endpoint-call-remaining"] == "0"
        )
        assert recorder.events == [("error", error)]
        assert len(server.requests) == 1

    def test_chain_retries_after_the_delay(self, server: FixtureServer) -> None:
        """The chain, not the SDK, waits the delay asked and retries."""
        server.add(http_reply(RATE_LIMIT), stream_reply(ANSWER))
        waits: list[float] = []
        result = (
            LLMChain(model(server), retry=RetryPolicy(sleep=waits.append))
            .add_message(Message.user("hi"))
            .run()
        )
        assert result.status == "ok"
        assert waits == [12.0]
        assert len(server.requests) == 2

    def test_error_finish_mid_stream(self, server: FixtureServer) -> None:
        """A message-end with finish_reason ERROR is a retryable stream_error."""
        server.add(stream_reply("cohere_error_finish.sse"))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable) == ("stream_error", True)
        assert error.metadata["error_code"] == "ERROR"
        assert recorder.thinking == "The tool says sunny."
        assert recorder.errors == [error]
        assert recorder.names[-1] == "error"

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(STREAM).read_bytes()
        server.add(
            stream_reply(STREAM, drop_after=first_bytes_until(data, b"\n\n", count=3))
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.thinking == "I will look up "
        assert recorder.errors == [raised.value]

    async def test_async_rate_limit(self, server: FixtureServer) -> None:
        """``astream`` classifies HTTP errors the same way."""
        server.add(http_reply(RATE_LIMIT))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retry_after) == ("rate_limited", 12.0)
        assert recorder.events == [("error", raised.value)]


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        server.add(stalled_reply(STREAM, 3))
        recorder = Recorder(cancel_after=1)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_thinking"]
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread(self, server: FixtureServer) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        server.add(stalled_reply(STREAM, 3))
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
        server.add(stalled_reply(STREAM, 3))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = await model(server).astream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert server.disconnected.wait(20)

"""MistralChatModel through the official mistralai SDK against a local HTTP server."""

from __future__ import annotations

from typing import Any

import pytest
from mistralai.client import Mistral

from langhooks import (
    FinishReason,
    LangHooksError,
    Message,
    StreamingHandle,
    ToolCall,
    ToolResult,
)
from langhooks.chain import LLMChain, RetryPolicy
from langhooks.models import ChatRequest, MistralChatModel

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

STREAM = "mistral_thinking_tool.sse"
ANSWER = "mistral_text.sse"
RATE_LIMIT = "mistral_429_rate_limited.http"
REQUEST = weather_request("Weather in Paris?")


def model(server: FixtureServer, **options: Any) -> MistralChatModel:
    return MistralChatModel(
        model="mistral-small-latest", api_key="test-key", base_url=server.url, **options
    )


class TestRequest:
    def test_translates_turns_calls_and_named_results(
        self, server: FixtureServer
    ) -> None:
        """Chat Completions' shape; each tool result names its tool."""
        server.add(stream_reply(ANSWER))
        request = ChatRequest(
            [
                *REQUEST.messages,
                Message.assistant(
                    "", [ToolCall(call_id="Ab12Cd34e", name="get_weather")]
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="Ab12Cd34e", name="get_weather", content="ok"
                        )
                    ]
                ),
            ],
            tools=REQUEST.tools,
        )
        extra = {"reasoning_effort": "high"}
        model(server, max_tokens=99, temperature=0.1, extra_params=extra).stream(
            request, Recorder()
        )
        sent = server.requests[0]
        body = sent.json
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == "Bearer test-key"
        assert (body["max_tokens"], body["temperature"], body["stream"]) == (
            99,
            0.1,
            True,
        )
        assert body["reasoning_effort"] == "high"
        assert body["messages"][2]["tool_calls"][0]["id"] == "Ab12Cd34e"
        assert body["messages"][3] == {
            "role": "tool",
            "tool_call_id": "Ab12Cd34e",
            "name": "get_weather",
            "content": "ok",
        }
        assert body["tools"][0]["function"]["name"] == "get_weather"

    def test_client_passed_in_is_used(self, server: FixtureServer) -> None:
        """``client=`` streams through the caller's own Mistral client, retries off."""
        server.add(http_reply(RATE_LIMIT), stream_reply(ANSWER))
        client = Mistral(api_key="own-key", server_url=server.url)
        mistral = MistralChatModel(model="mistral-large-latest", client=client)
        assert mistral.base_url == server.url
        with pytest.raises(LangHooksError) as raised:
            mistral.stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retry_after) == ("rate_limited", 7.0)
        assert len(server.requests) == 1
        mistral.stream(REQUEST, Recorder())
        assert server.requests[1].headers["authorization"] == "Bearer own-key"

    async def test_async_client_passed_in(self, server: FixtureServer) -> None:
        """The caller's client also streams ``astream`` and classifies its errors."""
        server.add(http_reply(RATE_LIMIT), stream_reply(ANSWER))
        client = Mistral(api_key="own-key", server_url=server.url)
        mistral = MistralChatModel(model="mistral-large-latest", client=client)
        with pytest.raises(LangHooksError) as raised:
            await mistral.astream(REQUEST, Recorder())
        assert raised.value.type == "rate_limited"
        response = await mistral.astream(REQUEST, Recorder())
        assert response.message.text == "It is sunny in Paris."

    def test_wrong_client_type(self) -> None:
        """A client that is not a mistralai Mistral is a TypeError."""
        with pytest.raises(TypeError, match=r"mistralai\.client\.Mistral"):
            MistralChatModel(model="mistral-small-latest", client=object())  # type: ignore[arg-type]


class TestStreaming:
    def test_thinking_text_and_call(self, server: FixtureServer) -> None:
        """Mistral's thinking parts are thinking; the whole call is one fragment."""
        server.add(stream_reply(STREAM))
        recorder = Recorder()
        response = model(server, timeout=5.0).stream(REQUEST, recorder)
        message = response.message
        assert (
            message.thinking == "The user asks about Paris. I should call get_weather."
        )
        assert message.text == "Checking."
        assert [(c.call_id, dict(c.arguments)) for c in message.tool_calls] == [
            ("Xk3p9Qw2z", {"city": "Paris"})
        ]
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (88, 43)

    def test_tool_round_trip_through_a_chain(self, server: FixtureServer) -> None:
        """LLMChain runs the call and sends the call and its named result back."""
        server.add(stream_reply(STREAM), stream_reply(ANSWER))
        result = (
            LLMChain(model(server), tools=[WEATHER_TOOL])
            .add_message(Message.user("Weather in Paris?"))
            .run()
        )
        assert result.status == "ok"
        assert result.chain.messages[-1].text == "It is sunny in Paris."
        messages = server.requests[1].json["messages"]
        assert messages[1]["tool_calls"][0]["id"] == "Xk3p9Qw2z"
        assert messages[2] == {
            "role": "tool",
            "tool_call_id": "Xk3p9Qw2z",
            "name": "get_weather",
            "content": "sunny",
        }

    async def test_async_stream(self, server: FixtureServer) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(STREAM))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == "Checking."
        assert recorder.names[-1] == "complete_response"


class TestErrors:
    def test_rate_limit_with_retry_after(self, server: FixtureServer) -> None:
        """A 429 is rate_limited with retry-after; the SDK sent one request."""
        server.add(http_reply(RATE_LIMIT))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable, error.retry_after) == (
            "rate_limited",
            True,
            7.0,
        )
        assert error.message.startswith("Requests rate limit exceeded")
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
        assert waits == [7.0]

    def test_server_error_mid_stream(self, server: FixtureServer) -> None:
        """An error chunk after text is classified and raised once."""
        data = local_fixture(STREAM).read_bytes()
        head = data[: first_bytes_until(data, b"\n\n", count=4)]
        error = (
            b'data: {"error":{"message":"Service unavailable","type":'
            b'"service_unavailable","code":null}}\n\n'
        )
        server.add(
            Reply(headers=(("content-type", "text/event-stream"),), body=head + error)
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("overloaded", True)
        assert recorder.text == "Checking."
        assert recorder.errors == [raised.value]

    def test_sdk_refusing_an_option(self, server: FixtureServer) -> None:
        """An option the SDK refuses is one stream_error; nothing raw escapes."""
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server, extra_params={"no_such_option": 1}).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("stream_error", False)
        assert "no_such_option" in raised.value.message
        assert recorder.events == [("error", raised.value)]
        assert server.requests == []

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-body is one connection error after the partials."""
        data = local_fixture(STREAM).read_bytes()
        server.add(
            stream_reply(STREAM, drop_after=first_bytes_until(data, b"\n\n", count=2))
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.thinking == "The user asks about Paris. "
        assert recorder.errors == [raised.value]


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

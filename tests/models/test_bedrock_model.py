"""BedrockChatModel through boto3's bedrock-runtime client against a local server.

The server answers ``POST /model/<id>/converse-stream`` with real eventstream
frames (both CRC32s computed), as AWS does; boto3 is pointed at it with
``endpoint_url`` and dummy credentials.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import boto3
import pytest
from botocore.config import Config

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
from langhooks.models import BedrockChatModel, ChatRequest

from . import AsyncRecorder, Recorder
from ._bedrock import (
    SIGNATURE,
    TEXT_STREAM,
    THINKING_STREAM,
    TOOL_STREAM,
    event,
    exception,
    stream_body,
    stream_reply,
)
from ._server import (
    WEATHER_TOOL,
    FixtureServer,
    Reply,
    cancel_from_thread,
    unused_port,
    weather_request,
)

MODEL = "anthropic.claude-test-v1:0"
#: A body that ends after messageStop (no metadata event).
NO_METADATA = (
    event("messageStart", {"role": "assistant"})
    + event(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"text": "Hello there, traveller."}},
    )
    + event("messageStop", {"stopReason": "end_turn"})
)
REQUEST = weather_request("Weather in Paris?")


def client(url: str) -> Any:
    """A bedrock-runtime client on ``url`` with dummy credentials, no retries."""
    session = boto3.session.Session(
        aws_access_key_id="AKIDLANGHOOKSTEST",
        aws_secret_access_key="test-secret",
        region_name="eu-west-1",
    )
    return session.client(
        "bedrock-runtime",
        endpoint_url=url,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


def model(server: FixtureServer, **options: Any) -> BedrockChatModel:
    return BedrockChatModel(model=MODEL, client=client(server.url), **options)


def error_reply(status: int, code: str, message: str) -> Reply:
    """An HTTP error as Bedrock sends it (the code in ``x-amzn-errortype``)."""
    return Reply(
        status=status,
        headers=(
            ("content-type", "application/json"),
            ("x-amzn-errortype", f"{code}:http://internal.amazon.com/coral/"),
            ("x-amzn-requestid", "req-error"),
        ),
        body=json.dumps({"message": message}).encode(),
    )


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials and no AWS config files, for clients made by the model."""
    for name in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLANGHOOKSTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/langhooks-aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/langhooks-creds")


class TestRequest:
    def test_translates_system_turns_tools_results_and_reasoning(
        self, server: FixtureServer
    ) -> None:
        """System goes top-level, tool results are user toolResult blocks, signed
        reasoning and redacted reasoning go back as reasoningContent."""
        server.add(stream_reply(TEXT_STREAM))
        thinking = {"type": "thinking", "thinking": "Let me see.", "signature": "c2ln"}
        redacted = {"type": "redacted_thinking", "data": "ZW5j"}
        png = base64.b64encode(b"\x89PNG-bytes").decode()
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
                            call_id="tooluse_1",
                            name="get_weather",
                            arguments={"city": "Paris"},
                        )
                    ],
                    metadata={"thinking_blocks": (redacted, thinking)},
                ),
                Message.tool(
                    [
                        ToolResult(
                            tool_call_id="tooluse_1",
                            name="get_weather",
                            content="boom",
                            is_error=True,
                        )
                    ]
                ),
                Message(
                    role="user",
                    content=[
                        ContentPart.text("And this?"),
                        ContentPart(
                            type="image_url", content=f"data:image/png;base64,{png}"
                        ),
                    ],
                ),
            ],
            tools=[WEATHER_TOOL],
        )
        model(
            server,
            max_tokens=99,
            temperature=0.1,
            extra_params={
                "inferenceConfig": {"topP": 0.5},
                "additionalModelRequestFields": {"thinking": {"type": "enabled"}},
            },
        ).stream(request, Recorder())
        sent = server.requests[0]
        body = sent.json
        assert sent.path == "/model/anthropic.claude-test-v1%3A0/converse-stream"
        assert sent.headers["authorization"].startswith(
            "AWS4-HMAC-SHA256 Credential=AKIDLANGHOOKSTEST/"
        )
        assert body["system"] == [{"text": "Be brief."}]
        assert body["inferenceConfig"] == {
            "maxTokens": 99,
            "temperature": 0.1,
            "topP": 0.5,
        }
        assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled"}}
        assert body["toolConfig"] == {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Current weather for a city.",
                        "inputSchema": {
                            "json": {"type": "object", "properties": {"city": {}}}
                        },
                    }
                }
            ]
        }
        assert body["messages"] == [
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"redactedContent": "ZW5j"}},
                    {
                        "reasoningContent": {
                            "reasoningText": {
                                "text": "Let me see.",
                                "signature": "c2ln",
                            }
                        }
                    },
                    {"text": "Checking."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_1",
                            "content": [{"text": "boom"}],
                            "status": "error",
                        }
                    },
                    {"text": "And this?"},
                    {"image": {"format": "png", "source": {"bytes": png}}},
                ],
            },
        ]

    def test_plain_request_and_unsigned_thinking(self, server: FixtureServer) -> None:
        """No system, tools or inferenceConfig unless given; reasoning without a
        signature (which Bedrock cannot verify) is not sent back."""
        server.add(stream_reply(TEXT_STREAM))
        message = Message(
            role="assistant",
            content=[ContentPart.thinking("Hm."), ContentPart.text("Hi.")],
            metadata={
                "thinking_blocks": (
                    {"type": "thinking", "thinking": "Hm.", "signature": ""},
                    {"type": "redacted_thinking", "data": "not base64!"},
                )
            },
        )
        user = Message(
            role="user", content=[ContentPart.thinking("?"), ContentPart.text("Go")]
        )
        model(server).stream(ChatRequest([user, message]), Recorder())
        body = server.requests[0].json
        assert set(body) == {"messages"}
        assert body["messages"] == [
            {"role": "user", "content": [{"text": "Go"}]},
            {"role": "assistant", "content": [{"text": "Hi."}]},
        ]

    def test_thinking_signature_without_blocks(self, server: FixtureServer) -> None:
        """A message with only ``thinking_signature`` sends one signed block."""
        server.add(stream_reply(TEXT_STREAM))
        message = Message(
            role="assistant",
            content=[ContentPart.thinking("Hm."), ContentPart.text("Hi.")],
            metadata={"thinking_signature": "c2ln"},
        )
        no_description = WEATHER_TOOL.__class__("lookup", WEATHER_TOOL.function)
        model(server).stream(
            ChatRequest([Message.user("hi"), message], tools=[no_description]),
            Recorder(),
        )
        body = server.requests[0].json
        assert body["messages"][1]["content"][0] == {
            "reasoningContent": {"reasoningText": {"text": "Hm.", "signature": "c2ln"}}
        }
        assert body["toolConfig"]["tools"][0]["toolSpec"] == {
            "name": "lookup",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }

    @pytest.mark.parametrize(
        "part",
        [
            ContentPart(type="file", content="f"),
            ContentPart(type="image_url", content="https://x.test/a.png"),
            ContentPart(type="image_url", content="data:image/tiff;base64,AAAA"),
            ContentPart(type="image_url", content="data:image/png;base64,@@@"),
        ],
    )
    def test_unsupported_content_fails_before_sending(
        self, server: FixtureServer, part: ContentPart
    ) -> None:
        """A part Converse cannot take is one invalid_request error; nothing is sent."""
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(
                ChatRequest([Message(role="user", content=[part])]), recorder
            )
        assert raised.value.type == "invalid_request"
        assert recorder.errors == [raised.value]
        assert server.requests == []

    def test_assistant_turn_with_only_a_call(self, server: FixtureServer) -> None:
        """An assistant turn with no text sends its toolUse block alone."""
        server.add(stream_reply(TEXT_STREAM))
        call = ToolCall(call_id="tooluse_2", name="get_weather")
        model(server).stream(
            ChatRequest([Message.user("Go"), Message.assistant("", [call])]),
            Recorder(),
        )
        assert server.requests[0].json["messages"][1]["content"] == [
            {"toolUse": {"toolUseId": "tooluse_2", "name": "get_weather", "input": {}}}
        ]

    def test_unknown_parameter_is_invalid_request(self, server: FixtureServer) -> None:
        """A ``converse_stream`` argument boto3 does not know fails before sending."""
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server, extra_params={"notAParameter": 1}).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("invalid_request", False)
        assert "notAParameter" in raised.value.message
        assert recorder.errors == [raised.value]
        assert server.requests == []

    def test_a_client_that_cannot_stream(self) -> None:
        """A client without ``converse_stream`` is a classified error, reported once."""
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            BedrockChatModel(model=MODEL, client=object()).stream(REQUEST, recorder)  # type: ignore[arg-type]
        assert raised.value.type == "stream_error"
        assert isinstance(raised.value.original, AttributeError)
        assert recorder.errors == [raised.value]

    def test_jpg_data_url_is_jpeg(self, server: FixtureServer) -> None:
        """A ``data:image/jpg`` URL is sent with Converse's ``jpeg`` format."""
        server.add(stream_reply(TEXT_STREAM))
        part = ContentPart(type="image_url", content="data:image/jpg;base64,AAAA")
        model(server).stream(
            ChatRequest([Message(role="user", content=[part])]), Recorder()
        )
        (block,) = server.requests[0].json["messages"][0]["content"]
        assert block["image"]["format"] == "jpeg"

    def test_model_name_must_be_a_string(self) -> None:
        """An empty model name is rejected at construction."""
        with pytest.raises(ValueError, match="model"):
            BedrockChatModel(model="", client=object())  # type: ignore[arg-type]

    def test_region_with_a_client_is_refused(self) -> None:
        """``region`` configures the client made here, not one passed in."""
        with pytest.raises(TypeError, match="region"):
            BedrockChatModel(model=MODEL, client=object(), region="us-east-1")  # type: ignore[arg-type]

    @pytest.mark.usefixtures("aws_env")
    def test_makes_its_client_with_retries_off(self, server: FixtureServer) -> None:
        """Without a client, one is made for the region and endpoint, one attempt."""
        server.add(error_reply(503, "ServiceUnavailableException", "busy"))
        made = BedrockChatModel(
            model=MODEL, region="eu-central-1", endpoint_url=server.url
        )
        assert made.client.meta.region_name == "eu-central-1"  # type: ignore[attr-defined]
        with pytest.raises(LangHooksError) as raised:
            made.stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("overloaded", True)
        assert len(server.requests) == 1  # botocore did not retry
        signed = server.requests[0].headers["authorization"]
        assert "Credential=AKIDLANGHOOKSTEST/" in signed
        assert "/eu-central-1/bedrock/" in signed

    @pytest.mark.usefixtures("aws_env")
    def test_no_region_is_a_classified_error(self) -> None:
        """No region anywhere is an error that says how to give one."""
        with pytest.raises(LangHooksError, match="region") as raised:
            BedrockChatModel(model=MODEL)
        assert raised.value.type == "invalid_request"

    @pytest.mark.usefixtures("aws_env")
    def test_no_credentials_is_authentication(
        self, server: FixtureServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No AWS credentials is a non-retryable authentication error."""
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        made = BedrockChatModel(
            model=MODEL, region="us-east-1", endpoint_url=server.url
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            made.stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("authentication", False)
        assert recorder.errors == [raised.value]
        assert server.requests == []


class TestStreaming:
    def test_text_end_to_end(self, server: FixtureServer) -> None:
        """Text deltas, usage, latency and the response headers arrive."""
        server.add(stream_reply(TEXT_STREAM))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        assert recorder.text == "Hello there, traveller."
        assert recorder.names == ["partial_response"] * 3 + ["complete_response"]
        assert response.message.text == "Hello there, traveller."
        assert response.finish_reason is FinishReason.STOP
        assert response.token_usage is not None
        assert (
            response.token_usage.input_tokens,
            response.token_usage.output_tokens,
        ) == (
            10,
            4,
        )
        assert response.metadata["latency_ms"] == 321
        assert response.metadata["stop_reason"] == "end_turn"
        headers = response.metadata["response_headers"]
        assert headers["x-amzn-requestid"] == "3b1c2e57-bedrock-request"

    def test_thinking_with_signature_round_trips(self, server: FixtureServer) -> None:
        """Reasoning is thinking; its signature is kept and sent back next turn."""
        server.add(stream_reply(THINKING_STREAM), stream_reply(TEXT_STREAM))
        recorder = Recorder()
        first = model(server).stream(REQUEST, recorder)
        assert recorder.thinking == "Hm, easy."
        assert first.message.thinking == "Hm, easy."
        assert first.message.text == "Four."
        assert first.message.metadata["thinking_signature"] == SIGNATURE
        assert first.token_usage is not None
        assert first.token_usage.input_tokens == 20 + 100 + 5  # cache read and write
        model(server).stream(
            ChatRequest([*REQUEST.messages, first.message]), Recorder()
        )
        assistant = server.requests[1].json["messages"][1]
        assert assistant == {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Hm, easy.", "signature": SIGNATURE}
                    }
                },
                {"text": "Four."},
            ],
        }

    def test_tool_call_round_trip_through_a_chain(self, server: FixtureServer) -> None:
        """The chain runs the streamed call and sends its result as a toolResult."""
        server.add(stream_reply(TOOL_STREAM), stream_reply(stream_body("Sunny.")))
        chain = LLMChain(
            model(server), tools=[WEATHER_TOOL], retry=RetryPolicy(max_attempts=1)
        ).add_message(Message.user("Weather in Paris?"))
        result = chain.run()
        assert result.status == "ok", result
        messages = result.chain.messages
        assert messages[-1].text == "Sunny."
        first = messages[1]
        assert [(c.call_id, c.name, dict(c.arguments)) for c in first.tool_calls] == [
            ("tooluse_1", "get_weather", {"city": "Paris"})
        ]
        second = server.requests[1].json
        assert second["messages"][1:] == [
            {
                "role": "assistant",
                "content": [
                    {"text": "Checking."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_1",
                            "content": [{"text": "sunny"}],
                            "status": "success",
                        }
                    }
                ],
            },
        ]

    def test_tool_fragments_arrive_as_sent(self, server: FixtureServer) -> None:
        """Each input fragment is a partial; the call completes once, parsed."""
        server.add(stream_reply(TOOL_STREAM, piece=1))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        partials = recorder.payloads("partial_tool_call")
        assert [p.partial_arguments for p in partials] == ["", '{"city":', ' "Paris"}']
        (complete,) = recorder.payloads("complete_tool_call")
        assert dict(complete.tool_call.arguments) == {"city": "Paris"}
        assert response.finish_reason is FinishReason.TOOL_EXECUTION

    def test_body_ending_after_message_stop_completes(
        self, server: FixtureServer
    ) -> None:
        """A body that ends after messageStop, with no metadata, completes (no
        usage) once it has ended."""
        body = NO_METADATA
        server.add(stream_reply(body))
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder)
        assert response.message.text == "Hello there, traveller."
        assert response.token_usage is None
        assert response.finish_reason is FinishReason.STOP
        assert recorder.names[-1] == "complete_response"

    async def test_async_body_ending_after_message_stop(
        self, server: FixtureServer
    ) -> None:
        """``astream`` completes a body that ends after messageStop the same way."""
        body = NO_METADATA
        server.add(stream_reply(body))
        response = await model(server).astream(REQUEST, AsyncRecorder())
        assert response.message.status == "complete"
        assert response.token_usage is None

    def test_cancel_after_the_end_changes_nothing(self, server: FixtureServer) -> None:
        """A cancel after the stream completed touches no connection and no call."""
        server.add(stream_reply(TEXT_STREAM))
        handle = StreamingHandle()
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder, handle=handle)
        handle.cancel()
        assert response.message.status == "complete"
        assert recorder.names[-1] == "complete_response"

    async def test_async_stream_with_an_async_handler(
        self, server: FixtureServer
    ) -> None:
        """``astream`` drives an async handler through the same events."""
        server.add(stream_reply(TOOL_STREAM))
        recorder = AsyncRecorder()
        response = await model(server).astream(REQUEST, recorder)
        assert response.message.text == "Checking."
        assert recorder.names.count("complete_tool_call") == 1
        assert recorder.names[-1] == "complete_response"
        assert response.metadata["response_headers"]["x-amzn-requestid"]


class TestErrors:
    def test_http_429_throttling(self, server: FixtureServer) -> None:
        """A 429 ThrottlingException is a retryable rate_limited error."""
        server.add(
            error_reply(429, "ThrottlingException", "Too many requests, please wait.")
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        error = raised.value
        assert (error.type, error.retryable) == ("rate_limited", True)
        assert error.message.startswith("Too many requests, please wait.")
        assert error.metadata["status_code"] == 429
        assert error.metadata["error_code"] == "ThrottlingException"
        assert error.metadata["response_headers"]["x-amzn-requestid"] == "req-error"
        assert recorder.events == [("error", error)]

    def test_http_400_validation(self, server: FixtureServer) -> None:
        """A ValidationException is a non-retryable invalid_request error."""
        server.add(error_reply(400, "ValidationException", "messages: bad turn"))
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("invalid_request", False)

    def test_in_stream_throttling_exception(self, server: FixtureServer) -> None:
        """A throttlingException frame after a 200 is rate_limited, after the text."""
        frames = event("messageStart", {"role": "assistant"}) + event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
        )
        server.add(stream_reply(frames + exception("throttlingException", "slow down")))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("rate_limited", True)
        assert raised.value.message == "slow down"
        assert recorder.text == "Hel"
        assert recorder.names == ["partial_response", "error"]

    def test_server_error_mid_stream(self, server: FixtureServer) -> None:
        """An internalServerException mid-stream is a retryable stream_error."""
        frames = event("messageStart", {"role": "assistant"}) + event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
        )
        server.add(stream_reply(frames + exception("internalServerException", "oops")))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("stream_error", True)
        assert recorder.errors == [raised.value]

    def test_connection_dropped_mid_stream(self, server: FixtureServer) -> None:
        """A connection cut mid-frame is one connection error after the partials."""
        cut = TEXT_STREAM.index(b" there,") + 3
        server.add(stream_reply(TEXT_STREAM, drop_after=cut))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "connection"
        assert recorder.text == "Hello"
        assert recorder.names == ["partial_response", "error"]

    def test_corrupt_frame_is_a_protocol_error(self, server: FixtureServer) -> None:
        """A frame failing its CRC is a protocol_error; nothing after it is read."""
        corrupt = bytearray(TEXT_STREAM)
        corrupt[TEXT_STREAM.index(b" there,")] ^= 0x01
        server.add(stream_reply(bytes(corrupt)))
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            model(server).stream(REQUEST, recorder)
        assert raised.value.type == "protocol_error"
        assert "CRC32" in raised.value.message
        assert recorder.text == "Hello"

    def test_connection_refused(self) -> None:
        """Nothing listening is a retryable connection error."""
        made = BedrockChatModel(
            model=MODEL, client=client(f"http://127.0.0.1:{unused_port()}")
        )
        with pytest.raises(LangHooksError) as raised:
            made.stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.retryable) == ("connection", True)

    def test_read_timeout(self, server: FixtureServer) -> None:
        """A body that stalls past botocore's read timeout is a timeout error."""
        session = boto3.session.Session(
            aws_access_key_id="AKIDLANGHOOKSTEST",
            aws_secret_access_key="test-secret",
            region_name="eu-west-1",
        )
        slow = session.client(
            "bedrock-runtime",
            endpoint_url=server.url,
            config=Config(read_timeout=0.3, retries={"total_max_attempts": 1}),
        )
        server.add(stream_reply(TEXT_STREAM[:40], stall=True))
        with pytest.raises(LangHooksError) as raised:
            BedrockChatModel(model=MODEL, client=slow).stream(REQUEST, Recorder())
        assert raised.value.type == "timeout"

    def test_no_response_headers_in_time(self, server: FixtureServer) -> None:
        """A server that never answers is a timeout once botocore's read times out."""
        server.add(stream_reply(TEXT_STREAM, release=threading.Event()))
        session = boto3.session.Session(
            aws_access_key_id="AKIDLANGHOOKSTEST",
            aws_secret_access_key="test-secret",
            region_name="eu-west-1",
        )
        slow = session.client(
            "bedrock-runtime",
            endpoint_url=server.url,
            config=Config(read_timeout=0.3, retries={"total_max_attempts": 1}),
        )
        recorder = Recorder()
        with pytest.raises(LangHooksError) as raised:
            BedrockChatModel(model=MODEL, client=slow).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("timeout", True)
        assert recorder.errors == [raised.value]

    async def test_async_throttling(self, server: FixtureServer) -> None:
        """``astream`` classifies HTTP errors the same way."""
        server.add(error_reply(429, "ThrottlingException", "slow down"))
        recorder = AsyncRecorder()
        with pytest.raises(LangHooksError) as raised:
            await model(server).astream(REQUEST, recorder)
        assert raised.value.type == "rate_limited"
        assert recorder.events == [("error", raised.value)]


class TestCancellation:
    def test_cancel_from_a_callback(self, server: FixtureServer) -> None:
        """Cancelling in a callback stops all callbacks and closes the connection."""
        more = event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "."}}
        )
        head = TEXT_STREAM[: TEXT_STREAM.index(b" there,") + 60]
        server.add(stream_reply(head, trickle=more))
        recorder = Recorder(cancel_after=1)
        response = model(server).stream(REQUEST, recorder)
        assert response.message.status == "cancelled"
        assert recorder.names == ["partial_response"]
        assert server.disconnected.wait(20)

    def test_cancel_from_another_thread(self, server: FixtureServer) -> None:
        """A cancel from another thread wakes the blocked read; the server sees EOF."""
        head = event("messageStart", {"role": "assistant"}) + event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
        )
        server.add(stream_reply(head, stall=True))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = model(server).stream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert response.message.text == "Hel"
        assert recorder.names == ["partial_response"]
        assert server.disconnected.wait(20)

    async def test_async_cancel_from_another_thread(
        self, server: FixtureServer
    ) -> None:
        """``astream`` stops on a cancel from another thread and closes the socket."""
        head = event("messageStart", {"role": "assistant"}) + event(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
        )
        server.add(stream_reply(head, stall=True))
        recorder = Recorder()
        handle = StreamingHandle()
        canceller = cancel_from_thread(recorder, handle)
        response = await model(server).astream(REQUEST, recorder, handle=handle)
        canceller.join()
        assert response.message.status == "cancelled"
        assert "complete_response" not in recorder.names
        assert server.disconnected.wait(20)

    def test_cancelled_before_the_request(self, server: FixtureServer) -> None:
        """A handle cancelled before the stream sends nothing."""
        handle = StreamingHandle()
        handle.cancel()
        recorder = Recorder()
        response = model(server).stream(REQUEST, recorder, handle=handle)
        assert response.message.status == "cancelled"
        assert recorder.events == []
        assert server.requests == []

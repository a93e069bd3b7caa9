"""Regressions found by adversarial testing: each test failed before its fix."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

import langhooks as lh
from langhooks.models import (
    AnthropicChatModel,
    ChatRequest,
    OllamaChatModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    replay_stream,
)
from langhooks.models._adapters import openai_chat
from langhooks.models._adapters._base import arguments_parse
from langhooks.models._errors import parse_ratelimit, retry_after_seconds
from langhooks.models._transport import ERROR_BODY_LIMIT

from . import AsyncRecorder, Recorder
from ._server import FixtureServer, Reply, stream_reply, weather_request

REQUEST = weather_request("Weather in Paris?")
_PATIENCE = 20.0

ModelFactory = Callable[[FixtureServer], Any]


def _ollama(server: FixtureServer) -> OllamaChatModel:
    return OllamaChatModel("qwen3:8b", base_url=server.url)


def _openai(server: FixtureServer) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o", base_url=f"{server.url}/v1", api_key="sk-test")


def _responses(server: FixtureServer) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-5", base_url=f"{server.url}/v1", api_key="sk-test")


def _anthropic(server: FixtureServer) -> AnthropicChatModel:
    return AnthropicChatModel("claude-x", base_url=server.url, api_key="sk-ant-test")


MODELS = [
    pytest.param(_ollama, "ollama_chat.ndjson", id="ollama"),
    pytest.param(_openai, "openai_chat_tools.sse", id="openai-chat"),
    pytest.param(_responses, "openai_responses.sse", id="openai-responses"),
    pytest.param(_anthropic, "anthropic_thinking_tool.sse", id="anthropic"),
]


def _open_calls(count: int, pieces: int) -> list[str]:
    """``count`` Chat Completions tool calls whose arguments never close."""
    chunks: list[str] = []
    for index in range(count):
        first = {"name": "f", "arguments": '{"a": "'}
        fragments: list[dict[str, Any]] = [
            {"index": index, "id": f"c{index}", "function": first},
            *({"index": index, "function": {"arguments": "x"}} for _ in range(pieces)),
        ]
        chunks.extend(
            json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [f]}}]})
            for f in fragments
        )
    return chunks


class TestLinearToolCallParsing:
    """Many open tool calls are parsed in time linear in their size."""

    def test_each_open_call_is_reparsed_only_after_it_grew(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Starting a call parses only the calls that grew since the last start."""
        parsed: list[int] = []

        def counting(text: str) -> bool:
            parsed.append(len(text))
            return arguments_parse(text)

        monkeypatch.setattr(openai_chat, "arguments_parse", counting)
        chunks = _open_calls(300, 5)
        body = "".join(f"data: {chunk}\n\n" for chunk in chunks)
        with pytest.raises(lh.LangHooksError) as raised:
            replay_stream(
                [body + "data: [DONE]\n\n"],
                format="openai-chat",
                handler=Recorder(),
            )
        assert raised.value.type == "delta_conversion_failed"
        # Quadratic: every start re-parsed every earlier open call (~45,000).
        assert len(parsed) < 300
        assert sum(parsed) <= len(body)


class TestMalformedRateLimitHeaders:
    """A rate-limit header that does not parse is kept raw, never fatal."""

    @pytest.mark.parametrize("value", ["\u00b2", "9" * 5000, " 12 ", "1.5"])
    def test_parse_keeps_what_does_not_parse(self, value: str) -> None:
        """Counts parse to int when they are plain ASCII digits int() takes."""
        parsed = parse_ratelimit({"x-ratelimit-limit-requests": value})
        text = value.strip()
        expected: object = int(text) if text == "12" else text
        assert parsed == {"requests_limit": expected}

    @pytest.mark.parametrize(
        "value", ["Mon, 01 Jan 99999 00:00:00 GMT", "\u00b2", "1e999", "-1"]
    )
    def test_retry_after_that_does_not_parse(self, value: str) -> None:
        """A retry-after that is no number and no date is ignored."""
        assert retry_after_seconds({"retry-after": value}) is None

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    def test_stream_completes(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """A 200 whose rate-limit headers do not parse streams to completion."""
        reply = stream_reply(fixture)
        headers = (
            *reply.headers,
            ("x-ratelimit-limit-requests", "\u00b2"),
            ("anthropic-ratelimit-requests-remaining", "9" * 5000),
        )
        server.add(
            Reply(status=200, headers=headers, body=reply.body, piece=reply.piece)
        )
        recorder = Recorder()
        response = factory(server).stream(REQUEST, recorder)
        assert recorder.terminal_calls == [("complete_response", response)]
        assert response.metadata["ratelimit"]["requests_limit"] == "\u00b2"

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    def test_429_is_rate_limited(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """A 429 with unparseable headers is still rate_limited, after on_error."""
        server.add(
            Reply(
                status=429,
                headers=(
                    ("x-ratelimit-remaining-tokens", "\u00b2"),
                    ("retry-after", "\u00b2"),
                ),
                body=b'{"error": "too many requests"}',
            )
        )
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as raised:
            factory(server).stream(REQUEST, recorder)
        assert (raised.value.type, raised.value.retryable) == ("rate_limited", True)
        assert raised.value.metadata["ratelimit"] == {"tokens_remaining": "\u00b2"}
        assert recorder.errors == [raised.value]


class TestErrorBodyCap:
    """An endless error body is read up to the cap, then the connection closes."""

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    def test_endless_error_body(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """An HTTP 400 that never ends is one invalid_request error, read to 1 MiB."""
        server.add(Reply(status=400, body=b"x" * 100, trickle=b"y" * 65536))
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError) as raised:
            factory(server).stream(REQUEST, recorder)
        error = raised.value
        assert error.type == "invalid_request"
        assert "not read in full" in error.message
        assert isinstance(error.original, bytes)
        assert len(error.original) == ERROR_BODY_LIMIT
        assert recorder.errors == [error]
        assert server.disconnected.wait(_PATIENCE)

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    async def test_endless_error_body_async(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """``astream`` caps the error body the same way."""
        server.add(Reply(status=400, body=b"x" * 100, trickle=b"y" * 65536))
        recorder = AsyncRecorder()
        with pytest.raises(lh.LangHooksError) as raised:
            await factory(server).astream(REQUEST, recorder)
        assert raised.value.type == "invalid_request"
        assert raised.value.original == b"x" * 100 + b"y" * (ERROR_BODY_LIMIT - 100)
        assert server.disconnected.wait(_PATIENCE)

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    def test_error_body_in_full(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """A small error body is read whole: its code and message classify it."""
        body = {"error": {"type": "overloaded_error", "message": "busy now"}}
        server.add(Reply(status=400, body=json.dumps(body).encode()))
        with pytest.raises(lh.LangHooksError) as raised:
            factory(server).stream(REQUEST, Recorder())
        assert raised.value.type == "overloaded"
        assert raised.value.message == "busy now (HTTP 400)"
        assert raised.value.metadata["error_code"] == "overloaded_error"

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    def test_cancel_stops_a_stalled_error_body(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """A cancel while an error body stalls closes it; the call returns cancelled."""
        server.add(Reply(status=400, body=b"x", stall=True))
        handle = lh.StreamingHandle()
        outcome: list[object] = []

        def run() -> None:
            outcome.append(factory(server).stream(REQUEST, Recorder(), handle=handle))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        waited = 0.0
        while not server.requests and waited < _PATIENCE:
            threading.Event().wait(0.01)
            waited += 0.01
        handle.cancel()
        thread.join(_PATIENCE)
        assert not thread.is_alive()
        (response,) = outcome
        assert isinstance(response, lh.ChatResponse)
        assert response.message.status == "cancelled"
        assert server.disconnected.wait(_PATIENCE)

    def test_sdk_errors_without_a_body_still_classify(
        self, server: FixtureServer
    ) -> None:
        """An error response with an empty body says its status."""
        server.add(Reply(status=401))
        with pytest.raises(lh.LangHooksError) as raised:
            _openai(server).stream(ChatRequest([lh.Message.user("hi")]), Recorder())
        assert raised.value.type == "authentication"
        assert raised.value.message == "HTTP 401"

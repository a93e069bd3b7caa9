"""Regressions found by adversarial testing: each test failed before its fix."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from typing_extensions import override

import langhooks as lh
from langhooks.models import (
    AnthropicChatModel,
    AsyncStreamDriver,
    ChatRequest,
    OllamaChatModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedChatModel,
    ScriptedTurn,
    replay_stream,
    stream_events,
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
        url = raised.value.metadata["url"]
        assert url.startswith(server.url)
        assert raised.value.message == f"busy now (HTTP 400) from {url}"
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

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    def test_cancel_stops_a_stalled_error_body_async(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """``astream`` on another thread's loop: the same cancel, the same result."""
        server.add(Reply(status=400, body=b"x", stall=True))
        handle = lh.StreamingHandle()
        outcome: list[object] = []

        def run() -> None:
            model = factory(server)
            outcome.append(
                asyncio.run(model.astream(REQUEST, AsyncRecorder(), handle=handle))
            )

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

    @pytest.mark.parametrize(("factory", "fixture"), MODELS)
    async def test_error_body_cut_off(
        self, server: FixtureServer, factory: ModelFactory, fixture: str
    ) -> None:
        """An error body the server drops midway is still the status's error."""
        server.add(Reply(status=400, body=b"x" * 100, drop_after=50))
        with pytest.raises(lh.LangHooksError) as raised:
            factory(server).stream(REQUEST, Recorder())
        assert raised.value.type == "invalid_request"
        assert raised.value.original == b"x" * 50
        with pytest.raises(lh.LangHooksError) as araised:
            await factory(server).astream(REQUEST, AsyncRecorder())
        assert araised.value.type == "invalid_request"
        assert araised.value.original == b"x" * 50

    async def test_error_body_read_times_out(self, server: FixtureServer) -> None:
        """An error body that stalls past the timeout is the status's error."""
        server.add(Reply(status=400, body=b"partial", stall=True))
        model = OllamaChatModel("qwen3:8b", base_url=server.url, timeout=0.2)
        with pytest.raises(lh.LangHooksError) as raised:
            model.stream(REQUEST, Recorder())
        assert (raised.value.type, raised.value.original) == (
            "invalid_request",
            b"partial",
        )
        with pytest.raises(lh.LangHooksError) as araised:
            await model.astream(REQUEST, AsyncRecorder())
        assert araised.value.original == b"partial"

    def test_sdk_errors_without_a_body_still_classify(
        self, server: FixtureServer
    ) -> None:
        """An error response with an empty body says its status (and the URL)."""
        server.add(Reply(status=401))
        with pytest.raises(lh.LangHooksError) as raised:
            _openai(server).stream(ChatRequest([lh.Message.user("hi")]), Recorder())
        assert raised.value.type == "authentication"
        assert raised.value.message.startswith(f"HTTP 401 from {server.url}/")


class _Watcher(lh.StreamingChatResponseHandler):
    """Notes every callback that begins after ``cancel()`` returned elsewhere."""

    def __init__(self) -> None:
        self.cancel_returned = threading.Event()
        self.first = threading.Event()
        self.late: list[str] = []

    def _begin(self, name: str) -> None:
        if self.cancel_returned.is_set():
            self.late.append(name)
        self.first.set()

    @override
    def on_partial_response(
        self, partial: lh.PartialResponse, context: lh.PartialResponseContext
    ) -> None:
        self._begin("partial_response")

    @override
    def on_complete_response(self, response: lh.ChatResponse) -> None:
        self._begin("complete_response")

    @override
    def on_error(self, error: BaseException) -> None:
        self._begin("error")


class _AsyncWatcher(lh.AsyncStreamingChatResponseHandler):
    """The async twin of ``_Watcher`` (the checks are the same)."""

    def __init__(self) -> None:
        self.watcher = _Watcher()

    @override
    async def on_partial_response(
        self, partial: lh.PartialResponse, context: lh.PartialResponseContext
    ) -> None:
        self.watcher._begin("partial_response")
        await asyncio.sleep(0)

    @override
    async def on_complete_response(self, response: lh.ChatResponse) -> None:
        self.watcher._begin("complete_response")


_TEXT_STREAM = [
    *(
        "data: "
        + json.dumps({"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]})
        + "\n\n"
        for i in range(200)
    ),
    "data: [DONE]\n\n",
]
_TRIALS = 300


def _race(stream: Callable[[lh.StreamingHandle], object], watcher: _Watcher) -> None:
    """Stream on a thread; cancel from this one once the first partial began."""
    handle = lh.StreamingHandle()
    thread = threading.Thread(target=stream, args=(handle,), daemon=True)
    thread.start()
    assert watcher.first.wait(_PATIENCE)
    handle.cancel()
    watcher.cancel_returned.set()
    thread.join(_PATIENCE)
    assert not thread.is_alive()


class TestCrossThreadCancel:
    """Once cancel() returned in another thread, no callback begins."""

    def test_driver_over_many_trials(self) -> None:
        """A replayed stream never starts a callback after cancel() returned."""
        late: list[str] = []
        for _ in range(_TRIALS):
            watcher = _Watcher()

            def stream(handle: lh.StreamingHandle, watcher: _Watcher = watcher) -> None:
                replay_stream(
                    _TEXT_STREAM, format="openai-chat", handler=watcher, handle=handle
                )

            _race(stream, watcher)
            late += watcher.late
        assert late == []

    def test_async_driver_over_many_trials(self) -> None:
        """An async handler on another thread's loop is held to the same."""
        late: list[str] = []
        for _ in range(_TRIALS // 3):
            handler = _AsyncWatcher()

            def stream(
                handle: lh.StreamingHandle, handler: _AsyncWatcher = handler
            ) -> None:
                async def drive() -> None:
                    driver = AsyncStreamDriver("openai-chat", handler, handle=handle)
                    decoder = stream_events("openai-chat")
                    for piece in _TEXT_STREAM:
                        for event in decoder.feed(piece):
                            if not await driver.feed(event):
                                await driver.finish()
                                return
                    await driver.finish()

                asyncio.run(drive())

            _race(stream, handler.watcher)
            late += handler.watcher.late
        assert late == []

    def test_scripted_model_over_many_trials(self) -> None:
        """ScriptedChatModel keeps the same guarantee."""
        late: list[str] = []
        text = " ".join(f"w{i}" for i in range(200))
        for _ in range(_TRIALS):
            watcher = _Watcher()
            model = ScriptedChatModel([ScriptedTurn(text=text)])

            def stream(
                handle: lh.StreamingHandle,
                watcher: _Watcher = watcher,
                model: ScriptedChatModel = model,
            ) -> None:
                model.stream(REQUEST, watcher, handle=handle)

            _race(stream, watcher)
            late += watcher.late
        assert late == []

    def test_cancel_waits_for_the_running_callback(self) -> None:
        """cancel() from another thread returns only after the callback returned."""
        inside = threading.Event()
        release = threading.Event()

        class Slow(lh.StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, partial: lh.PartialResponse, context: lh.PartialResponseContext
            ) -> None:
                inside.set()
                release.wait(_PATIENCE)

        handle = lh.StreamingHandle()
        streaming = threading.Thread(
            target=replay_stream,
            args=(_TEXT_STREAM,),
            kwargs={"format": "openai-chat", "handler": Slow(), "handle": handle},
            daemon=True,
        )
        streaming.start()
        assert inside.wait(_PATIENCE)
        cancelling = threading.Thread(target=handle.cancel, daemon=True)
        cancelling.start()
        cancelling.join(0.05)
        assert cancelling.is_alive()  # still waiting for the callback
        release.set()
        cancelling.join(_PATIENCE)
        streaming.join(_PATIENCE)
        assert not cancelling.is_alive()
        assert not streaming.is_alive()

    def test_iterate_stream_left_while_the_stream_waits(self) -> None:
        """Leaving iterate_stream while its stream waits for room does not deadlock
        (cancel() waits for the callback in progress, which waits for room)."""
        text = " ".join(f"w{i}" for i in range(5000))
        model = ScriptedChatModel([ScriptedTurn(text=text)])
        left = threading.Event()

        def consume() -> None:
            with lh.iterate_stream(model, REQUEST) as items:
                for _ in items:
                    threading.Event().wait(0.05)  # the stream fills the buffer
                    break
            left.set()

        thread = threading.Thread(target=consume, daemon=True)
        thread.start()
        assert left.wait(_PATIENCE)

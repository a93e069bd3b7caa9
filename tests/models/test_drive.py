"""The stream drivers keep the streaming contract, whatever the input."""

from __future__ import annotations

import threading
import typing
from typing import Any

import pytest
from typing_extensions import override

import langhooks as lh
from langhooks.models import (
    STREAM_FORMATS,
    AsyncStreamDriver,
    StreamDriver,
    replay_stream,
)
from langhooks.models._sse import stream_events

from . import AsyncRecorder, Recorder, local_fixture

_TEXT = {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}
_TEXT2 = {"choices": [{"index": 0, "delta": {"content": " there"}}]}
_STOP = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def _events(name: str, format: str) -> list[object]:
    decoder = stream_events(format)
    return [*decoder.feed(local_fixture(name).read_bytes()), *decoder.end()]


class _Boom(Exception):
    pass


def _sdk_classes(union: object) -> dict[str, Any]:
    """The SDK's event class for each event type of a discriminated union."""
    members = typing.get_args(union)
    if typing.get_origin(union) is typing.Annotated:
        members = typing.get_args(members[0])
    return {
        kind: member
        for member in members
        for kind in typing.get_args(member.model_fields["type"].annotation)
    }


class TestConstruction:
    """What a driver accepts."""

    def test_unknown_format(self) -> None:
        """An unknown format is a ValueError listing the known ones."""
        with pytest.raises(ValueError, match="openai-chat"):
            StreamDriver("grpc", Recorder())  # type: ignore[arg-type]

    def test_async_handler_needs_async_driver(self) -> None:
        """The sync driver rejects an async handler and says what to use."""
        with pytest.raises(TypeError, match="AsyncStreamDriver"):
            StreamDriver("ollama", AsyncRecorder())  # type: ignore[arg-type]

    def test_non_handler(self) -> None:
        """Something that is not a streaming handler is a TypeError."""
        with pytest.raises(TypeError, match="StreamingChatResponseHandler"):
            AsyncStreamDriver("ollama", object())  # type: ignore[arg-type]

    def test_bad_handle(self) -> None:
        """A handle that is not a StreamingHandle is a TypeError."""
        with pytest.raises(TypeError, match="StreamingHandle"):
            StreamDriver("ollama", Recorder(), handle="h")  # type: ignore[arg-type]

    def test_formats(self) -> None:
        """The documented formats are known."""
        assert STREAM_FORMATS == (
            "openai-chat",
            "openai-responses",
            "anthropic",
            "ollama",
            "gemini",
            "cohere",
            "bedrock",
        )

    def test_given_handle_is_used(self) -> None:
        """A handle held before the stream starts is the one partials carry."""
        handle = lh.StreamingHandle()
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder, handle=handle)
        assert driver.handle is handle
        driver.feed(_TEXT)
        assert recorder.handle is handle

    def test_metadata_goes_into_the_response(self) -> None:
        """Metadata given to the driver (headers, rate limits) is in the response."""
        driver = StreamDriver(
            "openai-chat", Recorder(), metadata={"response_headers": {"a": "b"}}
        )
        driver.feed(_STOP)
        driver.feed("[DONE]")
        response = driver.finish()
        assert response.metadata["response_headers"] == {"a": "b"}
        assert response.metadata["stop_reason"] == "stop"


class TestTerminal:
    """Exactly one terminal call, and nothing after it."""

    def test_feed_after_terminal_event_is_ignored(self) -> None:
        """Events after the terminal event are not delivered."""
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        assert driver.feed(_TEXT) is True
        assert driver.feed("[DONE]") is False
        assert driver.feed(_TEXT2) is False
        response = driver.finish()
        assert recorder.names == ["partial_response", "complete_response"]
        assert driver.finish() is response
        assert driver.response is response
        assert driver.feed(_TEXT2) is False
        assert recorder.names == ["partial_response", "complete_response"]

    def test_adapter_exception_is_a_malformed_event(self) -> None:
        """An event that makes the adapter itself raise (a list where the type
        goes) ends the stream with one protocol_error naming the exception."""
        recorder = Recorder()
        driver = StreamDriver("openai-responses", recorder)
        with pytest.raises(lh.LangHooksError) as caught:
            driver.feed({"type": [], "sequence_number": 0})
        assert caught.value.type == "protocol_error"
        assert "malformed openai-responses event: TypeError" in str(caught.value)
        assert isinstance(caught.value.original, TypeError)
        assert recorder.names == ["error"]

    def test_after_error_nothing(self) -> None:
        """After an error, feed does nothing and finish re-raises, with no call."""
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        with pytest.raises(lh.LangHooksError) as caught:
            driver.feed({"error": {"message": "x"}})
        assert driver.feed(_TEXT) is False
        with pytest.raises(lh.LangHooksError) as again:
            driver.finish()
        assert again.value is caught.value
        with pytest.raises(lh.LangHooksError):
            driver.fail(lh.LangHooksError("connection", "reset"))
        assert recorder.names == ["error"]
        assert driver.response.message.status == "stream_error"

    def test_fail_reports_once(self) -> None:
        """fail() calls on_error once and raises the error given."""
        recorder = Recorder()
        driver = StreamDriver("anthropic", recorder)
        error = lh.LangHooksError("connection", "reset by peer")
        with pytest.raises(lh.LangHooksError) as caught:
            driver.fail(error)
        assert caught.value is error
        assert recorder.terminal_calls == [("error", error)]

    def test_fail_after_complete_only_raises(self) -> None:
        """fail() after on_complete_response raises without another call."""
        recorder = Recorder()
        driver = StreamDriver("ollama", recorder)
        driver.feed({"done": True})
        driver.finish()
        with pytest.raises(lh.LangHooksError):
            driver.fail(lh.LangHooksError("timeout", "late"))
        assert recorder.names == ["complete_response"]

    def test_error_without_on_error_override(self) -> None:
        """A handler without on_error still gets the error raised to the caller."""
        driver = StreamDriver("ollama", lh.StreamingChatResponseHandler())
        with pytest.raises(lh.LangHooksError, match="x"):
            driver.feed({"error": "x"})

    def test_truncated_input(self) -> None:
        """finish() before the terminal event is one retryable stream_error."""
        recorder = Recorder()
        driver = StreamDriver("openai-responses", recorder)
        with pytest.raises(lh.LangHooksError, match=r"response\.completed") as caught:
            driver.finish()
        assert caught.value.type == "stream_error"
        assert caught.value.retryable is True
        assert recorder.terminal_calls == [("error", caught.value)]

    def test_non_event_input_is_protocol_error(self) -> None:
        """An input that is no wire event at all is a protocol_error."""
        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="decoded wire event") as caught:
            StreamDriver("anthropic", recorder).feed(42)
        assert caught.value.type == "protocol_error"
        assert recorder.names == ["error"]

    def test_unexpected_adapter_failure_is_protocol_error(self) -> None:
        """A value of the wrong type deep in an event is still a protocol_error."""
        recorder = Recorder()
        event = {"type": "message_start", "message": {"usage": {"input_tokens": "9"}}}
        with pytest.raises(lh.LangHooksError) as caught:
            StreamDriver("anthropic", recorder).feed(event)
        assert caught.value.type == "protocol_error"

    def test_decoder_error_item(self) -> None:
        """A LangHooksError fed by a decoder is reported like an error event."""
        recorder = Recorder()
        error = lh.LangHooksError("protocol_error", "bad line")
        with pytest.raises(lh.LangHooksError) as caught:
            StreamDriver("ollama", recorder).feed(error)
        assert caught.value is error
        assert recorder.names == ["error"]


class TestHandlerErrors:
    """A handler's own exception propagates unchanged, and the driver stops."""

    def test_raising_handler(self) -> None:
        """The exception propagates; later feeds deliver nothing."""

        class Raising(Recorder):
            @override
            def on_partial_response(
                self, partial: lh.PartialResponse, context: lh.PartialResponseContext
            ) -> None:
                super().on_partial_response(partial, context)
                raise _Boom(partial.text)

        recorder = Raising()
        driver = StreamDriver("openai-chat", recorder)
        with pytest.raises(_Boom, match="Hi"):
            driver.feed(_TEXT)
        assert driver.feed(_TEXT2) is False
        with pytest.raises(lh.LangHooksError) as caught:
            driver.finish()
        assert caught.value.type == "handler_error"
        with pytest.raises(lh.LangHooksError):
            driver.fail(lh.LangHooksError("connection", "x"))
        assert recorder.names == ["partial_response"]
        assert driver.response.message.status == "stream_error"

    def test_raising_on_error(self) -> None:
        """An exception raised by on_error itself propagates unchanged."""

        class Raising(lh.StreamingChatResponseHandler):
            @override
            def on_error(self, error: BaseException) -> None:
                raise _Boom("in on_error")

        driver = StreamDriver("openai-chat", Raising())
        with pytest.raises(_Boom):
            driver.feed({"error": {"message": "x"}})

    def test_replay_propagates_handler_errors(self) -> None:
        """replay_stream lets a handler's exception through as it is."""

        class Raising(lh.StreamingChatResponseHandler):
            @override
            def on_complete_tool_call(self, complete: lh.CompleteToolCall) -> None:
                raise _Boom("tool")

        with pytest.raises(_Boom, match="tool"):
            replay_stream(
                local_fixture("ollama_chat_tools.ndjson"),
                format="ollama",
                handler=Raising(),
            )


class TestCancel:
    """After cancel(), no callback at all; finish returns the partial response."""

    @pytest.mark.parametrize(
        ("name", "format"),
        [
            ("openai_chat_tools.sse", "openai-chat"),
            ("openai_responses.sse", "openai-responses"),
            ("anthropic_thinking_tool.sse", "anthropic"),
            ("ollama_chat_tools.ndjson", "ollama"),
        ],
    )
    def test_cancel_from_every_callback(self, name: str, format: str) -> None:
        """Cancelling inside the n-th callback stops right there, for every n."""
        full = Recorder()
        replay_stream(local_fixture(name), format=format, handler=full)  # type: ignore[arg-type]
        with_context = [
            i
            for i, (event, _) in enumerate(full.events, 1)
            if event.startswith("partial_")
        ]
        for n in with_context:
            recorder = Recorder(cancel_after=n)
            response = replay_stream(
                local_fixture(name),
                format=format,  # type: ignore[arg-type]
                handler=recorder,
            )
            assert len(recorder.events) == n
            assert recorder.violations == []
            assert response.message.status == "cancelled"
            assert recorder.text == response.message.text
            assert recorder.thinking == response.message.thinking
            completed = [c.tool_call for c in recorder.payloads("complete_tool_call")]
            assert list(response.message.tool_calls) == completed

    def test_cancel_before_start(self) -> None:
        """A handle cancelled before the first event gets no callback at all."""
        handle = lh.StreamingHandle()
        handle.cancel()
        recorder = Recorder()
        response = replay_stream(
            local_fixture("openai_chat_tools.sse"),
            format="openai-chat",
            handler=recorder,
            handle=handle,
        )
        assert recorder.events == []
        assert response.message.status == "cancelled"
        assert response.message.content == ()

    def test_cancel_from_another_thread(self) -> None:
        """A cancel from another thread between events stops the stream."""
        handle = lh.StreamingHandle()
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder, handle=handle)
        assert driver.feed(_TEXT) is True
        thread = threading.Thread(target=handle.cancel)
        thread.start()
        thread.join()
        assert driver.feed(_TEXT2) is False
        assert driver.feed({"error": {"message": "x"}}) is False
        response = driver.finish()
        assert response.message.status == "cancelled"
        assert response.message.text == "Hi"
        assert recorder.names == ["partial_response"]

    def test_cancel_after_terminal_event(self) -> None:
        """Cancelled after [DONE] but before finish: no on_complete_response."""
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        driver.feed(_TEXT)
        driver.feed("[DONE]")
        driver.handle.cancel()
        assert driver.response.message.status == "cancelled"
        assert driver.finish().message.status == "cancelled"
        assert recorder.names == ["partial_response"]

    def test_cancel_racing_the_terminal_call(self) -> None:
        """A cancel landing after finish decided to complete: the handler's response
        and the returned one are the same complete response."""
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        driver.feed(_TEXT)
        driver.feed(_STOP)
        driver.feed("[DONE]")
        _cancel_while_building(driver)
        response = driver.finish()
        assert recorder.terminal_calls == [("complete_response", response)]
        assert response.message.status == "complete"

    async def test_async_cancel_racing_the_terminal_call(self) -> None:
        """The async driver: the handler's response and the returned one agree."""
        recorder = AsyncRecorder()
        driver = AsyncStreamDriver("openai-chat", recorder)
        await driver.feed(_TEXT)
        await driver.feed(_STOP)
        await driver.feed("[DONE]")
        _cancel_while_building(driver)
        response = await driver.finish()
        assert recorder.terminal_calls == [("complete_response", response)]
        assert response.message.status == "complete"

    def test_cancel_then_error_or_fail(self) -> None:
        """After cancel, an error event is not reported; fail() only raises."""
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        driver.handle.cancel()
        with pytest.raises(lh.LangHooksError):
            driver.fail(lh.LangHooksError("connection", "closed"))
        assert driver.finish().message.status == "cancelled"
        assert recorder.events == []

    def test_cancel_during_error_event(self) -> None:
        """An error found after a cancel from another thread is not reported."""
        recorder = Recorder()
        handle = lh.StreamingHandle()
        driver = StreamDriver("openai-chat", recorder, handle=handle)

        class Cancelling(dict[str, Any]):
            @override
            def get(self, key: str, default: Any = None) -> Any:
                handle.cancel()
                return super().get(key, default)

        assert driver.feed(Cancelling(error={"message": "x"})) is False
        assert driver.finish().message.status == "cancelled"
        assert recorder.events == []


class TestSelectiveDelivery:
    """A handler is only called for what it overrides; the response is complete."""

    def test_no_overrides(self) -> None:
        """A handler that overrides nothing still gets the whole response back."""
        response = replay_stream(
            local_fixture("anthropic_thinking_tool.sse"),
            format="anthropic",
            handler=lh.StreamingChatResponseHandler(),
        )
        assert response.message.text.startswith("I'll check")
        assert len(response.message.tool_calls) == 1

    def test_composite(self) -> None:
        """A composite (bound late) passes every event to its handlers."""
        first, second = Recorder(), Recorder()
        composite = lh.CompositeStreamingHandler([first, second])
        replay_stream(
            local_fixture("ollama_chat_tools.ndjson"),
            format="ollama",
            handler=composite,
        )
        assert first.names == second.names
        assert first.names[-1] == "complete_response"


class TestAssembly:
    """The response holds exactly the delivered text, however many pieces."""

    def test_long_runs_of_pieces(self) -> None:
        """Thousands of text and thinking pieces, in runs, assemble exactly."""
        recorder = Recorder()
        driver = StreamDriver("ollama", recorder)
        for i in range(2500):
            driver.feed({"message": {"content": f"t{i} "}})
        for i in range(1100):
            driver.feed({"message": {"thinking": f"h{i} "}})
        driver.feed({"message": {"content": "end"}, "done": True})
        response = driver.finish()
        assert response.message.text == recorder.text
        assert response.message.thinking == recorder.thinking
        assert [part.type for part in response.message.content] == [
            "text",
            "thinking",
            "text",
        ]

    async def test_long_runs_async(self) -> None:
        """The async driver assembles long runs exactly too."""
        recorder = AsyncRecorder()
        driver = AsyncStreamDriver("openai-chat", recorder)
        for i in range(2100):
            await driver.feed({"choices": [{"delta": {"content": f"{i},"}}]})
        await driver.feed("[DONE]")
        response = await driver.finish()
        assert response.message.text == recorder.text


class TestSDKEvents:
    """Official-SDK event objects can be fed as they are."""

    def test_openai_chat_chunks(self) -> None:
        """openai ChatCompletionChunk objects drive the adapter like raw JSON."""
        from openai.types.chat import ChatCompletionChunk

        raw = _events("openai_compat_reasoning_content.sse", "openai-chat")
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        for event in raw:
            sdk = (
                event
                if isinstance(event, str)
                else ChatCompletionChunk.construct(**event)  # type: ignore[arg-type]
            )
            if not driver.feed(sdk):
                break
        response = driver.finish()
        assert response.message.thinking.startswith("We need to compare")
        assert response.message.text == "9.8 is greater than 9.11."

    def test_openai_chat_chunks_validated(self) -> None:
        """Validated SDK chunks (defaults unset) drive the adapter too."""
        from openai.types.chat import ChatCompletionChunk

        raw = _events("openai_chat_tools.sse", "openai-chat")
        recorder = Recorder()
        driver = StreamDriver("openai-chat", recorder)
        for event in raw:
            sdk = (
                event
                if isinstance(event, str)
                else ChatCompletionChunk.model_validate(event)
            )
            if not driver.feed(sdk):
                break
        response = driver.finish()
        assert len(response.message.tool_calls) == 2
        assert response.token_usage is not None

    def test_anthropic_events(self) -> None:
        """anthropic raw stream events drive the adapter like raw JSON."""
        from anthropic.types import RawMessageStreamEvent

        classes = _sdk_classes(RawMessageStreamEvent)
        raw = _events("anthropic_thinking_tool.sse", "anthropic")
        recorder = Recorder()
        driver = StreamDriver("anthropic", recorder)
        for event in raw:
            assert isinstance(event, dict)
            cls = classes.get(event["type"])
            fed = event if cls is None else cls.model_validate(event)
            if not driver.feed(fed):
                break
        response = driver.finish()
        assert response.message.metadata["thinking_signature"]
        assert response.finish_reason is lh.FinishReason.TOOL_EXECUTION
        assert recorder.payloads("unmapped_raw_event") == [{"type": "ping"}]

    def test_responses_events(self) -> None:
        """openai Responses stream events drive the adapter like raw JSON."""
        from openai.types.responses import ResponseStreamEvent

        classes = _sdk_classes(ResponseStreamEvent)
        raw = _events("openai_responses.sse", "openai-responses")
        driver = StreamDriver("openai-responses", Recorder())
        for event in raw:
            assert isinstance(event, dict)
            if not driver.feed(classes[event["type"]].model_validate(event)):
                break
        response = driver.finish()
        assert response.message.text == "Let me check the current weather in Paris."
        assert len(response.message.tool_calls) == 1

    def test_broken_sdk_object(self) -> None:
        """An object whose model_dump fails is a protocol_error."""

        class Broken:
            def model_dump(self, **kwargs: object) -> dict[str, object]:
                raise RuntimeError("cannot")

        recorder = Recorder()
        with pytest.raises(lh.LangHooksError, match="cannot convert Broken"):
            StreamDriver("ollama", recorder).feed(Broken())
        assert recorder.names == ["error"]


class TestAsyncDriver:
    """The async driver: same contract, awaiting async handlers."""

    async def test_async_handler(self) -> None:
        """An async handler receives the same events as a sync one would."""
        sync, async_ = Recorder(), AsyncRecorder()
        replay_stream(
            local_fixture("openai_chat_tools.sse"), format="openai-chat", handler=sync
        )
        driver = AsyncStreamDriver("openai-chat", async_)
        for event in _events("openai_chat_tools.sse", "openai-chat"):
            if not await driver.feed(event):
                break
        response = await driver.finish()
        assert async_.names == sync.names
        assert async_.terminal_calls == [("complete_response", response)]
        assert await driver.finish() is response

    async def test_sync_handler_inline(self) -> None:
        """A sync handler is called inline by the async driver."""
        recorder = Recorder()
        driver = AsyncStreamDriver("ollama", recorder)
        for event in _events("ollama_chat.ndjson", "ollama"):
            if not await driver.feed(event):
                break
        response = await driver.finish()
        assert recorder.text == response.message.text

    async def test_only_the_overridden_events(self) -> None:
        """An async handler that overrides only on_partial_response is called for
        text alone; the tool calls are still assembled into the response."""
        texts: list[str] = []

        class TextOnly(lh.AsyncStreamingChatResponseHandler):
            @override
            async def on_partial_response(
                self, partial: lh.PartialResponse, context: object, /
            ) -> None:
                texts.append(partial.text)

        driver = AsyncStreamDriver("openai-chat", TextOnly())
        for event in _events("openai_chat_tools.sse", "openai-chat"):
            if not await driver.feed(event):
                break
        response = await driver.finish()
        assert "".join(texts) == response.message.text
        assert response.message.tool_calls

    async def test_errors_and_cancel(self) -> None:
        """Errors are reported once; cancel stops; fail reports once."""
        recorder = AsyncRecorder()
        driver = AsyncStreamDriver("openai-chat", recorder)
        await driver.feed(_TEXT)
        with pytest.raises(lh.LangHooksError) as caught:
            await driver.feed({"error": {"message": "gone"}})
        assert await driver.feed(_TEXT) is False
        with pytest.raises(lh.LangHooksError) as again:
            await driver.finish()
        assert again.value is caught.value
        with pytest.raises(lh.LangHooksError):
            await driver.fail(lh.LangHooksError("connection", "x"))
        assert recorder.names == ["partial_response", "error"]

        failing = AsyncRecorder()
        driver = AsyncStreamDriver("anthropic", failing)
        with pytest.raises(lh.LangHooksError):
            await driver.fail(lh.LangHooksError("timeout", "slow"))
        assert failing.names == ["error"]

        truncated = AsyncRecorder()
        driver = AsyncStreamDriver("anthropic", truncated)
        with pytest.raises(lh.LangHooksError, match="message_stop"):
            await driver.finish()
        assert truncated.names == ["error"]

        cancelled = AsyncRecorder(cancel_after=1)
        driver = AsyncStreamDriver("openai-chat", cancelled)
        assert await driver.feed(_TEXT) is False
        assert await driver.feed(_TEXT2) is False
        assert (await driver.finish()).message.status == "cancelled"
        assert cancelled.names == ["partial_response"]

    async def test_cancel_in_the_middle_of_one_event(self) -> None:
        """A cancel inside the first of two calls one event makes stops the second."""
        recorder = AsyncRecorder(cancel_after=1)
        driver = AsyncStreamDriver("ollama", recorder)
        line = {"message": {"thinking": "a", "content": "b"}, "done": False}
        assert await driver.feed(line) is False
        response = await driver.finish()
        assert recorder.names == ["partial_thinking"]
        assert response.message.thinking == "a"
        assert response.message.text == ""

    async def test_sync_handler_error_path(self) -> None:
        """A sync handler's on_error is called inline by the async driver."""
        recorder = Recorder()
        driver = AsyncStreamDriver("ollama", recorder)
        with pytest.raises(lh.LangHooksError):
            await driver.feed({"error": "down"})
        assert recorder.names == ["error"]

    async def test_cancel_edges(self) -> None:
        """Cancelled before start, after the terminal event, or during an error."""
        before = AsyncStreamDriver("openai-chat", AsyncRecorder())
        before.handle.cancel()
        assert await before.feed(_TEXT) is False
        with pytest.raises(lh.LangHooksError):
            await before.fail(lh.LangHooksError("connection", "x"))

        after = AsyncRecorder()
        driver = AsyncStreamDriver("openai-chat", after)
        await driver.feed("[DONE]")
        driver.handle.cancel()
        assert (await driver.finish()).message.status == "cancelled"
        assert after.events == []

        during = AsyncRecorder()
        handle = lh.StreamingHandle()
        driver = AsyncStreamDriver("openai-chat", during, handle=handle)

        class Cancelling(dict[str, Any]):
            @override
            def get(self, key: str, default: Any = None) -> Any:
                handle.cancel()
                return super().get(key, default)

        assert await driver.feed(Cancelling(error={"message": "x"})) is False
        assert during.events == []

    async def test_handler_error_propagates(self) -> None:
        """An async handler's exception propagates and the driver stops."""

        class Raising(lh.AsyncStreamingChatResponseHandler):
            @override
            async def on_partial_response(
                self, partial: lh.PartialResponse, context: lh.PartialResponseContext
            ) -> None:
                raise _Boom

        driver = AsyncStreamDriver("openai-chat", Raising())
        with pytest.raises(_Boom):
            await driver.feed(_TEXT)
        assert await driver.feed(_TEXT) is False
        with pytest.raises(lh.LangHooksError, match="handler raised"):
            await driver.finish()

    async def test_no_on_complete_override(self) -> None:
        """An async handler overriding nothing still gets the response back."""
        driver = AsyncStreamDriver("ollama", lh.AsyncStreamingChatResponseHandler())
        await driver.feed({"message": {"content": "x"}, "done": True})
        assert (await driver.finish()).message.text == "x"
        failing = AsyncStreamDriver("ollama", lh.AsyncStreamingChatResponseHandler())
        with pytest.raises(lh.LangHooksError, match="down"):
            await failing.feed({"error": "down"})


def _cancel_while_building(driver: StreamDriver | AsyncStreamDriver) -> None:
    """Make the driver's next read of the finish reason cancel its handle.

    That read happens while ``finish`` builds the response, after it checked the
    handle: the moment a cancel from another thread can land, made deterministic.
    """
    adapter = driver._adapter
    handle = driver.handle

    class Cancelling(type(adapter)):  # type: ignore[misc]
        @property
        def finish_reason(self) -> lh.FinishReason | None:
            handle.cancel()
            return typing.cast("lh.FinishReason | None", self.__dict__["reason"])

        @finish_reason.setter
        def finish_reason(self, value: lh.FinishReason | None) -> None:
            self.__dict__["reason"] = value

    reason = adapter.finish_reason
    adapter.__class__ = Cancelling
    adapter.finish_reason = reason

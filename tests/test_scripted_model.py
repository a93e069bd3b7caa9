"""ScriptedChatModel keeps the streaming contract while replaying its script."""

from __future__ import annotations

import asyncio
import threading

import pytest
from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    FinishReason,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    TokenUsage,
    ToolCall,
)
from langhooks.models import ChatModel, ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingStreamingHandler

REQUEST = ChatRequest(messages=[Message.user("hi")])
CALL = ToolCall(
    call_id="c1", name="lookup", arguments={"query": "the weather in Paris"}
)


def names(handler: RecordingStreamingHandler) -> list[str]:
    """The recorded event names."""
    return handler.names


class TestScriptedTurn:
    """ScriptedTurn validates what it is given."""

    def test_defaults(self) -> None:
        """A bare turn is an empty answer with no usage, metadata or error."""
        turn = ScriptedTurn()
        assert (turn.text, turn.thinking, turn.tool_calls) == ("", "", ())
        assert turn.usage is None
        assert turn.error is None
        assert dict(turn.metadata) == {}

    def test_rejects_a_non_call(self) -> None:
        """tool_calls must hold ToolCalls."""
        with pytest.raises(TypeError, match="ToolCalls"):
            ScriptedTurn(tool_calls=["lookup"])  # type: ignore[list-item]


class TestConstruction:
    """The model checks its script and options."""

    def test_is_a_chat_model(self) -> None:
        """ScriptedChatModel satisfies the ChatModel protocol."""
        assert isinstance(ScriptedChatModel([]), ChatModel)

    def test_rejects_a_single_turn(self) -> None:
        """A turn passed without a list is a TypeError that says to wrap it."""
        with pytest.raises(TypeError, match="wrap a single turn"):
            ScriptedChatModel(ScriptedTurn())  # type: ignore[arg-type]

    def test_rejects_other_items(self) -> None:
        """Items must be turns or errors."""
        with pytest.raises(TypeError, match="got str"):
            ScriptedChatModel(["hello"])  # type: ignore[list-item]

    def test_rejects_negative_delay(self) -> None:
        """A negative delay is a ValueError."""
        with pytest.raises(ValueError, match="delay"):
            ScriptedChatModel([], delay=-1)

    def test_repr_counts_turns(self) -> None:
        """The repr says how many turns there are and are left."""
        model = ScriptedChatModel([ScriptedTurn(text="a")])
        assert repr(model) == "ScriptedChatModel(1 turn(s), 1 left)"

    def test_rejects_a_bad_request_or_handler(self) -> None:
        """The request and handler types are checked."""
        model = ScriptedChatModel([ScriptedTurn(text="a")])
        with pytest.raises(TypeError, match="ChatRequest"):
            model.stream("hi", RecordingStreamingHandler())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="StreamingChatResponseHandler"):
            model.stream(REQUEST, object())  # type: ignore[arg-type]


class TestStream:
    """One call streams one turn through the contract."""

    def test_text_and_thinking_in_word_sized_partials(self) -> None:
        """Thinking streams first, then text, each word with its trailing space."""
        handler = RecordingStreamingHandler()
        model = ScriptedChatModel([ScriptedTurn(thinking="Hmm ok", text="Hi there!")])
        response = model.stream(REQUEST, handler)
        assert names(handler) == [
            "on_partial_thinking",
            "on_partial_thinking",
            "on_partial_response",
            "on_partial_response",
            "on_complete_response",
        ]
        assert [args[0].text for args in handler.of("on_partial_thinking")] == [
            "Hmm ",
            "ok",
        ]
        assert handler.text == "Hi there!"
        assert response.message.text == "Hi there!"
        assert response.message.thinking == "Hmm ok"
        assert response.finish_reason is FinishReason.STOP
        assert handler.of("on_complete_response") == [(response,)]

    def test_tool_calls_as_fragments_then_complete(self) -> None:
        """A call's JSON arguments arrive in fragments, then the complete call."""
        handler = RecordingStreamingHandler()
        usage = TokenUsage(input_tokens=3, output_tokens=4)
        model = ScriptedChatModel([ScriptedTurn(tool_calls=[CALL, CALL], usage=usage)])
        response = model.stream(REQUEST, handler)
        fragments = [args[0] for args in handler.of("on_partial_tool_call")]
        first = [f for f in fragments if f.index == 0]
        assert len(first) > 1
        assert "".join(f.partial_arguments for f in first) == (
            '{"query":"the weather in Paris"}'
        )
        assert {(f.id, f.name) for f in fragments} == {("c1", "lookup")}
        sequence = names(handler)
        assert sequence[len(first)] == "on_complete_tool_call"
        assert sequence[-1] == "on_complete_response"
        completes = [args[0] for args in handler.of("on_complete_tool_call")]
        assert [c.index for c in completes] == [0, 1]
        assert [c.index for c in response.message.tool_calls] == [0, 1]
        assert response.finish_reason is FinishReason.TOOL_EXECUTION
        assert response.token_usage == usage

    def test_metadata_is_on_the_response(self) -> None:
        """A turn's metadata is the response's metadata."""
        turn = ScriptedTurn(text="a", metadata={"response_headers": {"x": "1"}})
        response = ScriptedChatModel([turn]).stream(
            REQUEST, RecordingStreamingHandler()
        )
        assert response.metadata["response_headers"] == {"x": "1"}
        assert response.model_name == "scripted"
        assert response.id == "scripted-0"

    def test_turns_are_consumed_in_order_and_requests_recorded(self) -> None:
        """Each call takes the next turn; requests are kept."""
        model = ScriptedChatModel([ScriptedTurn(text="one"), ScriptedTurn(text="two")])
        handler = RecordingStreamingHandler()
        texts = [model.stream(REQUEST, handler).message.text for _ in range(2)]
        assert texts == ["one", "two"]
        assert model.requests == (REQUEST, REQUEST)
        assert model.remaining == 0

    def test_an_error_item_fails_the_call(self) -> None:
        """An error item calls on_error once and raises it."""
        error = LangHooksError("rate_limited", "slow down")
        handler = RecordingStreamingHandler()
        with pytest.raises(LangHooksError) as raised:
            ScriptedChatModel([error]).stream(REQUEST, handler)
        assert raised.value is error
        assert handler.events == [("on_error", (error,))]

    def test_a_turn_error_dies_after_the_partials(self) -> None:
        """A turn with ``error`` streams its partials, then fails with on_error."""
        error = LangHooksError("stream_error", "reset")
        handler = RecordingStreamingHandler()
        with pytest.raises(LangHooksError):
            ScriptedChatModel([ScriptedTurn(text="a b", error=error)]).stream(
                REQUEST, handler
            )
        assert names(handler) == ["on_partial_response"] * 2 + ["on_error"]

    def test_running_out_is_a_clear_error(self) -> None:
        """A call beyond the script fails with invalid_request saying so."""
        handler = RecordingStreamingHandler()
        with pytest.raises(LangHooksError, match="no turn left") as raised:
            ScriptedChatModel([]).stream(REQUEST, handler)
        assert raised.value.type == "invalid_request"
        assert not raised.value.retryable
        assert names(handler) == ["on_error"]

    def test_a_handler_exception_propagates_unchanged(self) -> None:
        """The handler's own exception is not turned into on_error."""

        class Boom(StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                raise KeyError("mine")

        with pytest.raises(KeyError, match="mine"):
            ScriptedChatModel([ScriptedTurn(text="a")]).stream(REQUEST, Boom())


class Canceller(RecordingStreamingHandler):
    """Cancels the stream on the n-th partial response."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        super().on_partial_response(partial, context)
        if len(self.of("on_partial_response")) == self.at:
            context.handle.cancel()


class TestCancel:
    """After cancel() nothing more is delivered; the partial response returns."""

    def test_cancel_mid_stream(self) -> None:
        """Cancelling on the second word stops the stream there."""
        handler = Canceller(at=2)
        model = ScriptedChatModel([ScriptedTurn(text="a b c d")], delay=0.001)
        response = model.stream(REQUEST, handler)
        assert names(handler) == ["on_partial_response"] * 2
        assert response.message.status == "cancelled"
        assert response.message.text == "a b "
        assert response.finish_reason is None

    def test_cancel_on_the_last_partial(self) -> None:
        """Cancelling on the last partial suppresses the terminal call."""
        handler = Canceller(at=1)
        response = ScriptedChatModel([ScriptedTurn(text="a")]).stream(REQUEST, handler)
        assert names(handler) == ["on_partial_response"]
        assert response.message.status == "cancelled"

    def test_cancelled_before_start(self) -> None:
        """A handle cancelled beforehand gets no callback, even for an error item."""
        handle = StreamingHandle()
        handle.cancel()
        handler = RecordingStreamingHandler()
        model = ScriptedChatModel(
            [ScriptedTurn(text="a"), LangHooksError("timeout", "t")]
        )
        response = model.stream(REQUEST, handler, handle=handle)
        assert response.message.status == "cancelled"
        with pytest.raises(LangHooksError):
            model.stream(REQUEST, handler, handle=handle)
        assert handler.events == []


class TestThreads:
    """Concurrent calls each take a different turn."""

    def test_turns_are_taken_once_each(self) -> None:
        """Eight threads streaming at once get eight distinct turns."""
        model = ScriptedChatModel([ScriptedTurn(text=f"t{i}") for i in range(8)])
        texts: list[str] = []
        lock = threading.Lock()

        def worker() -> None:
            text = model.stream(REQUEST, RecordingStreamingHandler()).message.text
            with lock:
                texts.append(text)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(texts) == sorted(f"t{i}" for i in range(8))


class AsyncRecorder(AsyncStreamingChatResponseHandler):
    """Records event names, awaited."""

    def __init__(self) -> None:
        self.names: list[str] = []

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.names.append("on_partial_response")
        await asyncio.sleep(0)

    @override
    async def on_complete_response(self, response: ChatResponse) -> None:
        self.names.append("on_complete_response")

    @override
    async def on_error(self, error: BaseException) -> None:
        self.names.append("on_error")


class TestAstream:
    """astream is the same contract with await."""

    async def test_async_handler(self) -> None:
        """An async handler is awaited for each event."""
        handler = AsyncRecorder()
        model = ScriptedChatModel([ScriptedTurn(text="a b")], delay=0.001)
        response = await model.astream(REQUEST, handler)
        assert handler.names == ["on_partial_response"] * 2 + ["on_complete_response"]
        assert response.message.text == "a b"

    async def test_sync_handler(self) -> None:
        """A sync handler is called inline."""
        handler = RecordingStreamingHandler()
        await ScriptedChatModel([ScriptedTurn(thinking="x", text="a")]).astream(
            REQUEST, handler
        )
        assert names(handler) == [
            "on_partial_thinking",
            "on_partial_response",
            "on_complete_response",
        ]

    async def test_errors(self) -> None:
        """Error items and dying turns call on_error once and raise."""
        handler = AsyncRecorder()
        died = LangHooksError("stream_error", "reset")
        model = ScriptedChatModel(
            [LangHooksError("timeout", "t"), ScriptedTurn(text="a", error=died)]
        )
        with pytest.raises(LangHooksError, match="timeout"):
            await model.astream(REQUEST, handler)
        with pytest.raises(LangHooksError, match="reset"):
            await model.astream(REQUEST, handler)
        assert handler.names == ["on_error", "on_partial_response", "on_error"]

    async def test_cancel(self) -> None:
        """Cancelling mid-stream or beforehand stops delivery."""
        handler = Canceller(at=1)
        model = ScriptedChatModel(
            [
                ScriptedTurn(text="a b"),
                ScriptedTurn(text="a"),
                ScriptedTurn(text="z"),
                LangHooksError("timeout", "t"),
            ],
            delay=0.001,
        )
        first = await model.astream(REQUEST, handler)
        assert first.message.status == "cancelled"
        second = await model.astream(REQUEST, Canceller(at=1))
        assert second.message.status == "cancelled"
        handle = StreamingHandle()
        handle.cancel()
        third = await model.astream(REQUEST, handler, handle=handle)
        assert third.message.text == ""
        with pytest.raises(LangHooksError):
            await model.astream(REQUEST, handler, handle=handle)
        assert names(handler) == ["on_partial_response"]

    async def test_rejects_a_non_handler(self) -> None:
        """astream checks the handler type too."""
        with pytest.raises(TypeError, match="AsyncStreamingChatResponseHandler"):
            await ScriptedChatModel([]).astream(REQUEST, object())  # type: ignore[arg-type]

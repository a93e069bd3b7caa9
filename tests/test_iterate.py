"""iterate_stream / aiterate_stream: a model stream as a (sync or async) iterator."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal, assert_type

import pytest

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    CompleteToolCall,
    Invocation,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialToolCall,
    StreamEvent,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
    aiterate_stream,
    current_invocation,
    invocation,
    iterate_stream,
)
from langhooks.models import (
    ChatRequest,
    OllamaChatModel,
    ScriptedChatModel,
    ScriptedTurn,
)
from langhooks.testing import RecordingStreamingHandler
from tests.models._server import FixtureServer, stalled_reply

REQUEST = ChatRequest([Message.user("hi")])
TURN = ScriptedTurn(
    thinking="let me think",
    text="the weather is fine",
    tool_calls=[ToolCall(call_id="c1", name="weather", arguments={"city": "Paris"})],
)
FAILURE = LangHooksError("connection", "the connection was lost")
PATIENCE = 20.0
BUFFER = 64  # the hand-off buffer's size (langhooks._wrap._iterate._BUFFER)


def describe(item: StreamEvent) -> str:
    """What an item is; ``match`` narrows each case to its own type."""
    match item:
        case PartialThinking(text=text):
            assert_type(item, PartialThinking)
            return f"thinking {text!r}"
        case PartialResponse(text=text):
            assert_type(item, PartialResponse)
            return f"text {text!r}"
        case PartialToolCall(index=index):
            assert_type(item, PartialToolCall)
            return f"fragment {index}"
        case CompleteToolCall(tool_call=call):
            assert_type(item, CompleteToolCall)
            return f"call {call.name}"
        case ChatResponse(message=message):
            assert_type(item, ChatResponse)
            return f"response {message.status}"


def recorded(turn: ScriptedTurn) -> list[object]:
    """The payloads a handler gets from ``turn``, and the response."""
    recorder = RecordingStreamingHandler()
    ScriptedChatModel([turn]).stream(REQUEST, recorder)
    return [args[0] for _, args in recorder.events]


class Counting:
    """A ChatModel streaming ``total`` partials that counts how many it has
    delivered so far, to see how far it runs ahead of a slow consumer."""

    def __init__(self, total: int = 1000) -> None:
        self.total = total
        self.delivered = 0
        self.cancelled = False
        self.invocations: list[Invocation | None] = []
        self.response: ChatResponse | None = None

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        assert handle is not None
        self.invocations.append(current_invocation())
        for i in range(self.total):
            if handle.is_cancelled:
                return self._end(cancelled=True)
            handler.on_partial_response(
                PartialResponse(text=f"t{i}"), PartialResponseContext(handle=handle)
            )
            self.delivered += 1
        return self._end(cancelled=False)

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        assert handle is not None
        assert isinstance(handler, AsyncStreamingChatResponseHandler)
        self.invocations.append(current_invocation())
        for i in range(self.total):
            if handle.is_cancelled:
                return self._end(cancelled=True)
            await handler.on_partial_response(
                PartialResponse(text=f"t{i}"), PartialResponseContext(handle=handle)
            )
            self.delivered += 1
        return self._end(cancelled=False)

    def _end(self, *, cancelled: bool) -> ChatResponse:
        self.cancelled = cancelled
        status: Literal["cancelled", "complete"] = (
            "cancelled" if cancelled else "complete"
        )
        self.response = ChatResponse(
            message=Message(role="assistant", content=(), status=status)
        )
        return self.response


def wait_until_full(model: Counting) -> None:
    """Wait until the stream has filled the buffer, then give it time to run
    further ahead if it could (it must not)."""
    deadline = time.monotonic() + PATIENCE
    while model.delivered < BUFFER and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.05)


async def await_until_full(model: Counting) -> None:
    """The async twin of ``wait_until_full``."""
    deadline = time.monotonic() + PATIENCE
    while model.delivered < BUFFER and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    await asyncio.sleep(0.05)


class TestItems:
    def test_items_in_stream_order_and_the_response_last(self) -> None:
        """The iterator yields what a handler receives, in order, then the
        response."""
        with iterate_stream(ScriptedChatModel([TURN]), REQUEST) as items:
            got = list(items)
        assert got == recorded(TURN)
        assert [describe(item) for item in got][-2:] == [
            "call weather",
            "response complete",
        ]
        assert describe(got[0]) == "thinking 'let '"

    async def test_async_items_in_stream_order_and_the_response_last(self) -> None:
        """The async iterator yields the same items in the same order."""
        async with aiterate_stream(ScriptedChatModel([TURN]), REQUEST) as items:
            got = [item async for item in items]
        assert got == recorded(TURN)
        assert describe(got[3]) == "text 'the '"
        assert describe(got[-3]).startswith("fragment 0")

    def test_an_error_is_raised_after_the_items_before_it(self) -> None:
        """A stream that dies yields its items, then raises its error."""
        turn = ScriptedTurn(text="so far so", error=FAILURE)
        got: list[StreamEvent] = []
        with (
            pytest.raises(LangHooksError, match="connection was lost"),
            iterate_stream(ScriptedChatModel([turn]), REQUEST) as items,
        ):
            got.extend(items)
        assert got == [PartialResponse(text=t) for t in ("so ", "far ", "so")]

    async def test_async_error_is_raised_after_the_items_before_it(self) -> None:
        """The async iterator raises the stream's error after its items."""
        turn = ScriptedTurn(text="so far", error=FAILURE)
        got: list[StreamEvent] = []

        async def consume() -> None:
            async with aiterate_stream(ScriptedChatModel([turn]), REQUEST) as items:
                async for item in items:
                    got.append(item)

        with pytest.raises(LangHooksError, match="connection was lost"):
            await consume()
        assert got == [PartialResponse(text="so "), PartialResponse(text="far")]

    def test_a_failed_call_raises_at_once(self) -> None:
        """A call that fails before any item raises from the first next()."""
        with (
            iterate_stream(ScriptedChatModel([FAILURE]), REQUEST) as items,
            pytest.raises(LangHooksError),
        ):
            next(items)

    def test_an_exhausted_iterator_stays_exhausted(self) -> None:
        """After the response, the iterator ends, and stays ended."""
        with iterate_stream(ScriptedChatModel([ScriptedTurn()]), REQUEST) as items:
            assert isinstance(next(items), ChatResponse)
            assert list(items) == []
            assert iter(items) is items

    async def test_an_exhausted_async_iterator_stays_exhausted(self) -> None:
        """The async iterator, too, ends after the response and stays ended."""
        model = ScriptedChatModel([ScriptedTurn()])
        async with aiterate_stream(model, REQUEST) as items:
            assert isinstance(await anext(items), ChatResponse)
            assert [item async for item in items] == []
            assert aiter(items) is items

    @pytest.mark.parametrize("use_async", [False, True])
    async def test_a_handle_cancels_from_elsewhere(self, use_async: bool) -> None:
        """Cancelling a passed handle ends the items with a cancelled response."""
        handle = StreamingHandle()
        model = Counting()
        got: list[StreamEvent] = []
        if use_async:
            async with aiterate_stream(model, REQUEST, handle=handle) as items:
                async for item in items:
                    got.append(item)
                    handle.cancel()
        else:
            with iterate_stream(model, REQUEST, handle=handle) as items:
                for item in items:
                    got.append(item)
                    handle.cancel()
        assert isinstance(got[-1], ChatResponse)
        assert got[-1].message.status == "cancelled"
        assert len(got) < model.total

    @pytest.mark.parametrize("use_async", [False, True])
    async def test_the_stream_runs_in_the_callers_context(
        self, use_async: bool
    ) -> None:
        """The stream sees the caller's invocation, on its thread or task."""
        model = Counting(total=1)
        with invocation("caller") as caller:
            if use_async:
                async with aiterate_stream(model, REQUEST) as items:
                    assert [i async for i in items][-1] == model.response
            else:
                with iterate_stream(model, REQUEST) as items:
                    assert list(items)[-1] == model.response
        assert model.invocations == [caller]

    @pytest.mark.parametrize(
        ("model", "request_", "handle", "message"),
        [
            (object(), REQUEST, None, "takes a ChatModel"),
            (ScriptedChatModel([]), "hi", None, "takes a ChatRequest"),
            (ScriptedChatModel([]), REQUEST, object(), "handle must be"),
        ],
    )
    async def test_rejects_bad_arguments(
        self, model: Any, request_: Any, handle: Any, message: str
    ) -> None:
        """A wrong model, request or handle is a TypeError before anything runs."""
        with (
            pytest.raises(TypeError, match=message),
            iterate_stream(model, request_, handle=handle),
        ):
            pass  # pragma: no cover  # never entered
        with pytest.raises(TypeError, match=message):
            async with aiterate_stream(model, request_, handle=handle):
                pass  # pragma: no cover  # never entered


class TestBackPressure:
    def test_a_slow_consumer_holds_the_stream_back(self) -> None:
        """The stream runs at most a buffer's length ahead of the consumer, and
        leaving early stops it there."""
        model = Counting()
        with iterate_stream(model, REQUEST) as items:
            next(items)
            wait_until_full(model)
            assert BUFFER <= model.delivered <= BUFFER + 2
        assert model.cancelled
        assert model.delivered <= BUFFER + 2

    async def test_a_slow_async_consumer_holds_the_stream_back(self) -> None:
        """The async stream, too, waits for a consumer that falls behind."""
        model = Counting()
        async with aiterate_stream(model, REQUEST) as items:
            await anext(items)
            await await_until_full(model)
            assert BUFFER <= model.delivered <= BUFFER + 2
        assert model.delivered <= BUFFER + 2

    @pytest.mark.parametrize("use_async", [False, True])
    async def test_a_slow_consumer_gets_every_kind_of_item(
        self, use_async: bool
    ) -> None:
        """A consumer that keeps the stream waiting at every kind of item still
        gets them all, once, in order."""
        turn = ScriptedTurn(
            thinking=" ".join(["hmm"] * 100),
            text=" ".join(["word"] * 100),
            tool_calls=[
                ToolCall(call_id=f"c{i}", name="f", arguments={"q": "x" * 10})
                for i in range(40)
            ],
        )
        got: list[StreamEvent] = []
        if use_async:
            async with aiterate_stream(ScriptedChatModel([turn]), REQUEST) as items:
                async for item in items:
                    got.append(item)
                    await asyncio.sleep(0)  # the stream runs ahead until it waits
        else:
            with iterate_stream(ScriptedChatModel([turn]), REQUEST) as items:
                for item in items:
                    got.append(item)
                    time.sleep(0.0001)
        assert got == recorded(turn)

    def test_a_fast_consumer_gets_everything(self) -> None:
        """Through many waits for room, every item arrives once, in order."""
        model = Counting(total=1000)
        with iterate_stream(model, REQUEST) as items:
            texts = [item.text for item in items if isinstance(item, PartialResponse)]
        assert texts == [f"t{i}" for i in range(1000)]


# --- against a local provider server ----------------------------------------------

OLLAMA = "ollama_chat.ndjson"


@pytest.fixture
def server() -> Iterator[FixtureServer]:
    """A provider server on 127.0.0.1 that replays Ollama's first lines, then
    keeps the connection open without a word until the client closes it."""
    with FixtureServer() as running:
        running.add(stalled_reply(OLLAMA, 4))
        yield running


def ollama(server: FixtureServer) -> OllamaChatModel:
    return OllamaChatModel("qwen3:8b", base_url=f"{server.url}/")


class Stop(Exception):
    """Raised in a loop body."""


class TestLeavingEarly:
    def test_break_closes_the_connection(self, server: FixtureServer) -> None:
        """Breaking out of the loop cancels the stream: the server sees the
        client go away."""
        with iterate_stream(ollama(server), REQUEST) as items:
            for item in items:
                assert isinstance(item, PartialThinking)
                break
        assert server.disconnected.wait(PATIENCE)

    def test_an_exception_in_the_loop_closes_the_connection(
        self, server: FixtureServer
    ) -> None:
        """An exception in the loop body propagates and cancels the stream."""

        def consume() -> None:
            with iterate_stream(ollama(server), REQUEST) as items:
                for _ in items:
                    raise Stop

        with pytest.raises(Stop):
            consume()
        assert server.disconnected.wait(PATIENCE)

    async def test_async_break_closes_the_connection(
        self, server: FixtureServer
    ) -> None:
        """Breaking out of an ``async for`` cancels the stream and closes it."""
        async with aiterate_stream(ollama(server), REQUEST) as items:
            async for item in items:
                assert isinstance(item, PartialThinking)
                break
        assert server.disconnected.wait(PATIENCE)

    async def test_async_exception_closes_the_connection(
        self, server: FixtureServer
    ) -> None:
        """An exception in an ``async for`` body cancels the stream."""

        async def consume() -> None:
            async with aiterate_stream(ollama(server), REQUEST) as items:
                async for _ in items:
                    raise Stop

        with pytest.raises(Stop):
            await consume()
        assert server.disconnected.wait(PATIENCE)

    async def test_cancelling_the_consumer_closes_the_connection(
        self, server: FixtureServer
    ) -> None:
        """Cancelling the consuming task, while it waits for an item that never
        comes, cancels the stream and closes its connection."""
        first = asyncio.Event()
        seen: list[StreamEvent] = []

        async def consume() -> None:
            async with aiterate_stream(ollama(server), REQUEST) as items:
                async for item in items:
                    seen.append(item)
                    first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), PATIENCE)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert server.disconnected.wait(PATIENCE)
        assert seen
        assert all(isinstance(i, PartialThinking) for i in seen)

    def test_leaving_waits_for_the_streams_thread(self, server: FixtureServer) -> None:
        """When the ``with`` block is left, the stream's thread has ended."""
        with iterate_stream(ollama(server), REQUEST) as items:
            next(items)
            (thread,) = [
                t for t in threading.enumerate() if t.name == "langhooks-iterate-stream"
            ]
        assert not thread.is_alive()

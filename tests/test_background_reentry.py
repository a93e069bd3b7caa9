"""in_background and aiterate_stream never lose a worker or hang on their own events.

- A handler whose ``await`` raises ``CancelledError`` that is not a cancel of the
  worker fails that event only: the worker goes on, the error is counted.
- A handler that sends events back into its own wrapper (a nested stream) never
  waits for room only its own worker could make.
- ``aiterate_stream`` hands the consumer the outcome of a stream that raised a
  ``CancelledError`` of its own.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from typing import Any, cast

import pytest
from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    aiterate_stream,
    in_background,
)
from langhooks._wrap._background import _Background
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

CONTEXT = PartialResponseContext(handle=StreamingHandle())
REQUEST = ChatRequest([Message.user("hi")])
PATIENCE = 20.0  # seconds a test waits for something that happens at once


def nested_model() -> ScriptedChatModel:
    """A model whose answer streams as several partials."""
    return ScriptedChatModel([ScriptedTurn(text="one two three four five six")])


class TestCancelledErrorInAHandler:
    """A handler's own CancelledError is that event's error, not the worker's end."""

    async def test_every_event_delivered(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """51 events, every 17th awaiting a cancelled future: all 51 reach the
        handler, 3 are counted as errors, and nothing says the loop ended."""
        seen: list[str] = []

        class Flaky(AsyncStreamingChatResponseHandler):
            @override
            async def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext, /
            ) -> None:
                seen.append(partial.text)
                if len(seen) % 17 == 0:
                    cancelled = asyncio.get_running_loop().create_future()
                    cancelled.cancel()
                    await cancelled  # raises CancelledError; nobody cancelled us

        wrapper = in_background(Flaky(), maxsize=4)
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            for i in range(51):
                await wrapper.on_partial_response(PartialResponse(text=str(i)), CONTEXT)
            await asyncio.wait_for(wrapper.aclose(), PATIENCE)
        assert seen == [str(i) for i in range(51)]
        assert wrapper.error_count == 3
        assert "event loop ended" not in caplog.text
        assert "before they were delivered" not in caplog.text
        assert caplog.text.count("raised in the background") == 3

    async def test_cancelling_the_worker_still_ends_it(self) -> None:
        """A real cancel of the worker task (its loop ending) still ends it: the
        events it still held are reported lost, not delivered."""
        started = asyncio.Event()
        release = asyncio.Event()

        class Slow(AsyncStreamingChatResponseHandler):
            @override
            async def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext, /
            ) -> None:
                started.set()
                await release.wait()

        wrapper = in_background(Slow())
        await wrapper.on_partial_response(PartialResponse(text="a"), CONTEXT)
        await wrapper.on_partial_response(PartialResponse(text="b"), CONTEXT)
        await asyncio.wait_for(started.wait(), PATIENCE)
        # (the checker's view has no internals: the wrapper at run time has)
        workers = cast(_Background, wrapper)._langhooks_workers
        worker = workers.loops[asyncio.get_running_loop()]
        worker.task.cancel()
        await asyncio.wait({worker.task})
        assert worker.task.cancelled()
        assert wrapper.error_count == 0


def assert_both_streams(seen: list[str]) -> None:
    """Every event of the outer stream and of the nested one arrived, each
    stream's in its order (the worker delivers in queue order, so the nested
    events follow what was queued before them)."""
    outer = ["outer", "0", "1", "2", "3", "4"]
    assert [text for text in seen if text in outer] == outer
    nested = [text for text in seen if text not in outer]
    assert nested[-1] == "complete"
    assert "".join(nested[:-1]) == "one two three four five six"


class TestNestedStreams:
    """A handler streaming into its own wrapper never waits for itself."""

    def test_thread_worker(self) -> None:
        """With maxsize=2, a sync handler that streams a nested answer into its
        own wrapper on the first event: every event of both streams arrives."""
        seen: list[str] = []

        class Nesting(StreamingChatResponseHandler):
            wrapper: Any = None

            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext, /
            ) -> None:
                seen.append(partial.text)
                if partial.text == "outer":
                    nested_model().stream(REQUEST, self.wrapper)

            @override
            def on_complete_response(self, response: ChatResponse, /) -> None:
                seen.append("complete")

        handler = Nesting()
        wrapper = handler.wrapper = in_background(handler, maxsize=2)
        done = threading.Event()

        def caller() -> None:
            wrapper.on_partial_response(PartialResponse(text="outer"), CONTEXT)
            for i in range(5):
                wrapper.on_partial_response(PartialResponse(text=str(i)), CONTEXT)
            wrapper.flush()
            done.set()

        threading.Thread(target=caller, daemon=True).start()
        assert done.wait(PATIENCE), "the nested stream waited for its own worker"
        assert wrapper.close(PATIENCE)
        assert_both_streams(seen)
        assert wrapper.error_count == 0

    async def test_task_worker(self) -> None:
        """With maxsize=2, an async handler that streams a nested answer into
        its own wrapper: every event of both streams arrives."""
        seen: list[str] = []

        class Nesting(AsyncStreamingChatResponseHandler):
            wrapper: Any = None

            @override
            async def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext, /
            ) -> None:
                seen.append(partial.text)
                if partial.text == "outer":
                    await nested_model().astream(REQUEST, self.wrapper)

            @override
            async def on_complete_response(self, response: ChatResponse, /) -> None:
                seen.append("complete")

        handler = Nesting()
        wrapper = handler.wrapper = in_background(handler, maxsize=2)
        await wrapper.on_partial_response(PartialResponse(text="outer"), CONTEXT)
        for i in range(5):
            await asyncio.wait_for(
                wrapper.on_partial_response(PartialResponse(text=str(i)), CONTEXT),
                PATIENCE,
            )
        await asyncio.wait_for(wrapper.aclose(), PATIENCE)
        assert_both_streams(seen)
        assert wrapper.error_count == 0


class CancelledInside:
    """A model whose stream sends one partial, then fails with a CancelledError
    of its own (an SDK's inner task was cancelled), not a cancel of its caller."""

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Not used: these tests stream asynchronously."""
        raise NotImplementedError

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        context = PartialResponseContext(handle=handle or StreamingHandle())
        sent = handler.on_partial_response(PartialResponse(text="Hello"), context)
        if inspect.isawaitable(sent):
            await sent
        inner = asyncio.get_running_loop().create_future()
        inner.cancel()
        await inner
        raise AssertionError("unreachable")


class TestAiterateStreamCancelledError:
    """The consumer always gets the stream's outcome."""

    async def test_consumer_gets_the_error(self) -> None:
        """The partial before it, then the stream's CancelledError, instead of
        waiting forever."""
        items: list[object] = []

        async def consume() -> BaseException | None:
            async with aiterate_stream(CancelledInside(), REQUEST) as stream:
                try:
                    async for item in stream:
                        items.append(item)
                except asyncio.CancelledError as error:
                    return error
            return None

        consumer = asyncio.create_task(consume())
        done, _ = await asyncio.wait({consumer}, timeout=PATIENCE)
        if not done:
            consumer.cancel()
            await asyncio.wait({consumer})
        assert done, "the consumer waited forever for the stream's outcome"
        assert isinstance(consumer.result(), asyncio.CancelledError)
        assert items == [PartialResponse(text="Hello")]

"""in_background: a handler's events delivered on its own worker."""

from __future__ import annotations

import asyncio
import gc
import logging
import pydoc
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChatResponse,
    CoalescingDeltas,
    CompositeStreamingHandler,
    Deny,
    HandlerWithoutInvocation,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    StreamingHandle,
    Tool,
    ToolCall,
    ToolContext,
    current_invocation,
    in_background,
    invocation,
)
from langhooks.chain import LLMChain
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler

CHAIN: Any = object()  # chain events carry a snapshot; these tests never read it
CONTEXT = PartialResponseContext(handle=StreamingHandle())
RESPONSE = ChatResponse(message=Message.assistant("done"))
REQUEST = ChatRequest([Message.user("hi")])
PATIENCE = 20.0  # seconds a test waits for something that happens at once


def _echo(arguments: Any, context: ToolContext) -> str:
    return "ok"


TOOL = Tool("echo", _echo)
CALL = ToolCall(call_id="c1", name="echo", arguments={"x": 1})


def part(i: int) -> PartialResponse:
    return PartialResponse(text=f"t{i}")


class Tokens(StreamingChatResponseHandler):
    """Records the text of each partial and the thread it arrived on; may wait for
    ``gate`` before each one, and raises on the texts in ``fail``."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.texts: list[str] = []
        self.threads: set[threading.Thread] = set()
        self.gate = gate
        self.fail: set[str] = set()
        self.started = threading.Event()

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(PATIENCE)
        if partial.text in self.fail:
            raise ValueError(f"cannot take {partial.text}")
        self.texts.append(partial.text)
        self.threads.add(threading.current_thread())

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self.texts.append("END")


class AsyncTokens(AsyncStreamingChatResponseHandler):
    """The async twin of ``Tokens``."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.texts: list[str] = []
        self.tasks: set[asyncio.Task[Any] | None] = set()
        self.gate = gate
        self.fail: set[str] = set()
        self.started = asyncio.Event()

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if partial.text in self.fail:
            raise ValueError(f"cannot take {partial.text}")
        self.texts.append(partial.text)
        self.tasks.add(asyncio.current_task())


class Reviewer(ChainCallbackHandler):
    """Records chain events; its review denies calls named ``deny``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.review_thread: threading.Thread | None = None

    @override
    def on_run_start(self, chain: Any) -> None:
        self.seen.append("run_start")

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self.review_thread = threading.current_thread()
        self.seen.append("review")
        if call.name == "boom":
            raise ValueError("the policy failed")
        return Deny("no") if call.name == "deny" else None

    @override
    def on_tool_pre_execution(self, chain: Any, call: ToolCall, tool: Tool) -> None:
        self.seen.append(f"pre {threading.current_thread().name}")

    @override
    def on_llm_call_start(self, chain: Any, model: Any, request: Any) -> None:
        self.seen.append(f"call start {threading.current_thread().name}")


class AsyncReviewer(AsyncChainCallbackHandler):
    """The async twin of ``Reviewer``."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @override
    async def on_run_start(self, chain: Any) -> None:
        await asyncio.sleep(0)
        self.seen.append("run_start")

    @override
    async def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self.seen.append("review")
        return Deny("no")


class Mixed(  # type: ignore[misc]  # the two on_error differ; neither is used
    StreamingChatResponseHandler, AsyncChainCallbackHandler
):
    """Sync streaming events and async chain events in one handler."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.seen.append(partial.text)

    @override
    async def on_run_start(self, chain: Any) -> None:
        self.seen.append("run_start")


def background_threads() -> list[threading.Thread]:
    return [
        t for t in threading.enumerate() if t.name.startswith("langhooks-background")
    ]


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Every test ends with no worker thread of its own left running."""
    before = set(background_threads())
    yield
    for thread in set(background_threads()) - before:
        thread.join(PATIENCE)
        assert not thread.is_alive(), f"{thread.name} leaked"


class TestConstruction:
    def test_keeps_the_interfaces(self) -> None:
        """The wrapper is an instance of the handler's interfaces, and handles only
        the events the handler overrides."""
        wrapper = in_background(Tokens())
        assert isinstance(wrapper, StreamingChatResponseHandler)
        assert ChainCallbackHandler not in type(wrapper).__mro__
        assert "on_partial_thinking" not in vars(wrapper)
        assert repr(wrapper) == f"in_background({wrapper.wrapped!r})"
        wrapper.close()

    def test_reads_the_handlers_attributes(self) -> None:
        """Attributes the wrapper lacks are read from the handler."""
        handler = Tokens()
        wrapper = in_background(handler)
        assert getattr(wrapper, "texts") is handler.texts  # noqa: B009  # untyped
        wrapper.close()

    @pytest.mark.parametrize("bad", [object(), StreamingChatResponseHandler])
    def test_rejects_a_non_handler(self, bad: Any) -> None:
        """Wrapping anything but a handler instance is a TypeError."""
        with pytest.raises(TypeError, match="in_background wraps a handler"):
            in_background(bad)

    @pytest.mark.parametrize("maxsize", [0, -1, 1.5, True])
    def test_rejects_a_bad_maxsize(self, maxsize: Any) -> None:
        """maxsize must be a positive int."""
        with pytest.raises(ValueError, match="maxsize must be an int >= 1"):
            in_background(Tokens(), maxsize=maxsize)

    def test_rejects_an_unknown_overflow(self) -> None:
        """overflow is "block" or "drop_oldest"."""
        with pytest.raises(ValueError, match="'block' or 'drop_oldest'"):
            in_background(Tokens(), overflow="drop_newest")  # type: ignore[call-overload]

    def test_starts_no_thread_before_the_first_event(self) -> None:
        """A wrapper that never receives an event never starts a thread."""
        before = background_threads()
        wrapper = in_background(Tokens())
        assert background_threads() == before
        assert wrapper.flush() is True
        assert wrapper.close() is True


class TestThreadDelivery:
    def test_delivers_on_a_worker_thread_in_order(self) -> None:
        """Events return at once and reach the handler on another thread, in
        order, by the time flush() returns."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler)
        for i in range(50):
            wrapper.on_partial_response(part(i), CONTEXT)
        wrapper.on_complete_response(RESPONSE)
        assert handler.texts == []  # the first is waiting at the gate
        gate.set()
        assert wrapper.flush() is True
        assert handler.texts == [f"t{i}" for i in range(50)] + ["END"]
        assert threading.current_thread() not in handler.threads
        assert len(handler.threads) == 1
        assert wrapper.close() is True

    @settings(max_examples=40, deadline=None)
    @given(
        texts=st.lists(st.text(min_size=1, max_size=3), max_size=40),
        maxsize=st.integers(1, 5),
    )
    def test_every_event_once_in_order(self, texts: list[str], maxsize: int) -> None:
        """Whatever the events and the queue size, with "block" the handler gets
        each event exactly once, in the order it was sent."""
        handler = Tokens()
        wrapper = in_background(handler, maxsize=maxsize)
        for text in texts:
            wrapper.on_partial_response(PartialResponse(text=text), CONTEXT)
        assert wrapper.close() is True
        assert handler.texts == texts
        assert wrapper.dropped_count == 0

    @settings(max_examples=20, deadline=None)
    @given(
        counts=st.lists(st.integers(0, 30), min_size=2, max_size=4),
        maxsize=st.integers(1, 4),
    )
    def test_concurrent_callers_keep_their_order(
        self, counts: list[int], maxsize: int
    ) -> None:
        """Events from several threads at once all arrive once, each thread's in
        the order it sent them."""
        handler = Tokens()
        wrapper = in_background(handler, maxsize=maxsize)

        def send(sender: int) -> None:
            for i in range(counts[sender]):
                wrapper.on_partial_response(
                    PartialResponse(text=f"{sender}:{i}"), CONTEXT
                )

        senders = [threading.Thread(target=send, args=(n,)) for n in range(len(counts))]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        assert wrapper.close() is True
        for n, count in enumerate(counts):
            mine = [t for t in handler.texts if t.startswith(f"{n}:")]
            assert mine == [f"{n}:{i}" for i in range(count)]
        assert len(handler.texts) == sum(counts)

    def test_block_waits_for_room(self) -> None:
        """With "block", a caller waits while the queue is full (back-pressure)."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler, maxsize=2)
        wrapper.on_partial_response(part(0), CONTEXT)
        assert handler.started.wait(PATIENCE)  # t0 is taken, waiting at the gate
        wrapper.on_partial_response(part(1), CONTEXT)
        wrapper.on_partial_response(part(2), CONTEXT)
        third = threading.Thread(
            target=wrapper.on_partial_response, args=(part(3), CONTEXT)
        )
        third.start()
        third.join(0.05)
        assert third.is_alive()  # blocked: two are waiting already
        gate.set()
        third.join(PATIENCE)
        assert wrapper.close() is True
        assert handler.texts == ["t0", "t1", "t2", "t3"]

    @settings(max_examples=30, deadline=None)
    @given(count=st.integers(0, 30), maxsize=st.integers(1, 5))
    def test_drop_oldest_keeps_the_newest(self, count: int, maxsize: int) -> None:
        """With "drop_oldest", a handler stuck on the first event then gets the
        newest ``maxsize`` events; the rest are counted as dropped."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler, maxsize=maxsize, overflow="drop_oldest")
        wrapper.on_partial_response(part(-1), CONTEXT)
        assert handler.started.wait(PATIENCE)
        for i in range(count):
            wrapper.on_partial_response(part(i), CONTEXT)
        gate.set()
        assert wrapper.close() is True
        kept = [f"t{i}" for i in range(max(0, count - maxsize), count)]
        assert handler.texts == ["t-1", *kept]
        assert wrapper.dropped_count == max(0, count - maxsize)

    def test_drops_are_logged_once(self, caplog: pytest.LogCaptureFixture) -> None:
        """The first drop is logged as a warning; later ones are only counted."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler, maxsize=1, overflow="drop_oldest")
        wrapper.on_partial_response(part(0), CONTEXT)
        assert handler.started.wait(PATIENCE)
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            for i in range(1, 6):
                wrapper.on_partial_response(part(i), CONTEXT)
        gate.set()
        assert wrapper.close() is True
        assert wrapper.dropped_count == 4
        warnings = [r for r in caplog.records if "drops the oldest" in r.message]
        assert len(warnings) == 1
        assert "in_background(Tokens)" in warnings[0].message

    def test_flush_waits_for_a_dropped_flush_target(self) -> None:
        """flush() returns once what it waits for was delivered or dropped."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler, maxsize=1, overflow="drop_oldest")
        wrapper.on_partial_response(part(0), CONTEXT)
        assert handler.started.wait(PATIENCE)
        wrapper.on_partial_response(part(1), CONTEXT)
        result: list[bool] = []
        flusher = threading.Thread(target=lambda: result.append(wrapper.flush()))
        flusher.start()
        flusher.join(0.05)
        wrapper.on_partial_response(part(2), CONTEXT)  # drops t1
        gate.set()
        flusher.join(PATIENCE)
        assert result == [True]
        assert wrapper.close() is True
        assert handler.texts == ["t0", "t2"]

    def test_flush_times_out(self) -> None:
        """flush(timeout) answers False while the handler is still busy."""
        gate = threading.Event()
        wrapper = in_background(Tokens(gate))
        wrapper.on_partial_response(part(0), CONTEXT)
        assert wrapper.flush(timeout=0.01) is False
        assert wrapper.close(timeout=0.01) is False
        gate.set()
        assert wrapper.close() is True

    def test_flush_from_the_handler_does_not_wait_for_itself(self) -> None:
        """A handler calling flush() or close() on its own wrapper gets an answer
        instead of waiting for its own delivery forever."""
        answers: list[bool] = []

        class SelfFlushing(StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                answers.append(wrapper.flush())
                answers.append(wrapper.close())

        wrapper = in_background(SelfFlushing())
        wrapper.on_partial_response(part(0), CONTEXT)
        thread = background_threads()[-1]
        thread.join(PATIENCE)
        assert answers == [False, False]
        assert wrapper.close() is True


class CancelsFromTheWorker(StreamingChatResponseHandler):
    """Cancels its stream from the background worker, after a little work."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        time.sleep(0.005)
        self.texts.append(partial.text)
        context.handle.cancel()


class TestCancelFromTheWorker:
    """A background handler that cancels its stream never deadlocks it."""

    def test_a_full_queue_and_a_cancel_from_the_worker(self) -> None:
        """With the stream waiting for room in a full queue, cancel() from the
        worker returns at once and the stream ends "cancelled"."""
        handler = CancelsFromTheWorker()
        wrapper = in_background(handler, maxsize=1)
        model = ScriptedChatModel([ScriptedTurn(text=" ".join(["word"] * 50))])
        results: list[str] = []

        def stream() -> None:
            response = model.stream(ChatRequest([Message.user("hi")]), wrapper)
            results.append(response.message.status)

        thread = threading.Thread(target=stream, daemon=True)
        thread.start()
        thread.join(timeout=30)  # a bound for a deadlock, not a timing assertion
        assert not thread.is_alive(), "the stream deadlocked"
        assert results == ["cancelled"]
        assert wrapper.flush(timeout=30)
        wrapper.close()
        assert handler.texts


class TestErrors:
    def test_an_exception_is_logged_counted_and_the_worker_goes_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A raising event is logged with its traceback and counted; the events
        after it are still delivered."""
        handler = Tokens()
        handler.fail = {"t1"}
        wrapper = in_background(handler)
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            for i in range(3):
                wrapper.on_partial_response(part(i), CONTEXT)
            assert wrapper.flush() is True
        assert handler.texts == ["t0", "t2"]
        assert wrapper.error_count == 1
        (record,) = caplog.records
        assert "Tokens.on_partial_response raised in the background" in record.message
        assert record.exc_info is not None
        assert str(record.exc_info[1]) == "cannot take t1"
        wrapper.close()

    def test_a_base_exception_does_not_end_the_worker(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Even SystemExit from a handler is logged and counted on the worker."""

        class Exiting(StreamingChatResponseHandler):
            @override
            def on_complete_response(self, response: ChatResponse) -> None:
                raise SystemExit(3)

        wrapper = in_background(Exiting())
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            wrapper.on_complete_response(RESPONSE)
            wrapper.on_complete_response(RESPONSE)
            assert wrapper.close() is True
        assert wrapper.error_count == 2

    def test_events_after_close_raise(self) -> None:
        """A closed wrapper refuses further events with a handler_error."""
        wrapper = in_background(Tokens())
        wrapper.on_partial_response(part(0), CONTEXT)
        assert wrapper.close() is True
        assert wrapper.close() is True  # idempotent
        with pytest.raises(LangHooksError, match="was closed") as raised:
            wrapper.on_partial_response(part(1), CONTEXT)
        assert raised.value.type == "handler_error"

    def test_close_releases_a_blocked_caller(self) -> None:
        """A caller waiting for room when the wrapper closes gets the error."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler, maxsize=1)
        wrapper.on_partial_response(part(0), CONTEXT)
        assert handler.started.wait(PATIENCE)
        wrapper.on_partial_response(part(1), CONTEXT)
        errors: list[BaseException] = []

        def send() -> None:
            try:
                wrapper.on_partial_response(part(2), CONTEXT)
            except LangHooksError as error:
                errors.append(error)

        blocked = threading.Thread(target=send)
        blocked.start()
        blocked.join(0.05)
        closer = threading.Thread(target=wrapper.close)
        closer.start()
        blocked.join(PATIENCE)
        assert [e.type for e in errors] == ["handler_error"]  # type: ignore[attr-defined]
        gate.set()
        closer.join(PATIENCE)
        assert handler.texts == ["t0", "t1"]

    def test_sync_methods_refuse_an_async_handler(self) -> None:
        """flush() and close() on an all-async handler point to the async twins."""
        wrapper = in_background(AsyncTokens())
        with pytest.raises(TypeError, match=r"await aflush\(\)"):
            wrapper.flush()  # type: ignore[attr-defined]
        with pytest.raises(TypeError, match=r"await aclose\(\)"):
            wrapper.close()  # type: ignore[attr-defined]


class TestInline:
    def test_review_runs_inline_after_the_queue(self) -> None:
        """A review runs on the caller's thread, after the events queued before it,
        and its decision is returned."""
        handler = Reviewer()
        wrapper = in_background(handler)
        wrapper.on_run_start(CHAIN)
        decision = wrapper.on_tool_call_review(
            CHAIN, ToolCall(call_id="1", name="deny"), TOOL, ReviewContext()
        )
        assert decision == Deny("no")
        assert handler.seen == ["run_start", "review"]
        assert handler.review_thread is threading.current_thread()
        wrapper.close()

    def test_a_failing_review_raises_to_the_caller(self) -> None:
        """A review's exception propagates: no decision was made."""
        wrapper = in_background(Reviewer())
        with pytest.raises(ValueError, match="policy failed"):
            wrapper.on_tool_call_review(
                CHAIN, ToolCall(call_id="1", name="boom"), TOOL, ReviewContext()
            )
        assert wrapper.error_count == 0
        wrapper.close()

    def test_llm_call_start_runs_in_the_callers_thread(self) -> None:
        """on_llm_call_start runs inline, in the model attempt's own context."""
        handler = Reviewer()
        wrapper = in_background(handler)
        model = ScriptedChatModel([])
        wrapper.on_llm_call_start(CHAIN, model, ChatRequest([Message.user("hi")]))
        assert handler.seen == [f"call start {threading.current_thread().name}"]
        wrapper.close()

    def test_pre_execution_runs_in_the_callers_thread(self) -> None:
        """on_tool_pre_execution runs inline, in the tool's own thread."""
        handler = Reviewer()
        wrapper = in_background(handler)
        wrapper.on_tool_pre_execution(CHAIN, CALL, TOOL)
        assert handler.seen == [f"pre {threading.current_thread().name}"]
        wrapper.close()

    async def test_a_first_async_review_starts_no_worker(self) -> None:
        """A review as the first event runs inline and starts no task."""
        before = asyncio.all_tasks()
        wrapper = in_background(AsyncReviewer())
        assert await wrapper.on_tool_call_review(CHAIN, CALL, TOOL, ReviewContext())
        assert asyncio.all_tasks() == before
        await wrapper.aclose()

    async def test_async_review_runs_inline_after_the_queue(self) -> None:
        """An async review is awaited after this loop's queued events."""
        handler = AsyncReviewer()
        wrapper = in_background(handler)
        await wrapper.on_run_start(CHAIN)
        decision = await wrapper.on_tool_call_review(CHAIN, CALL, TOOL, ReviewContext())
        assert decision == Deny("no")
        assert handler.seen == ["run_start", "review"]
        await wrapper.aclose()


class TestLifetime:
    def test_close_ends_the_thread(self) -> None:
        """After close() every queued event was delivered and the thread ended."""
        handler = Tokens()
        wrapper = in_background(handler)
        wrapper.on_partial_response(part(0), CONTEXT)
        (thread,) = background_threads()
        assert wrapper.close() is True
        assert not thread.is_alive()
        assert handler.texts == ["t0"]

    def test_garbage_collection_ends_the_thread(self) -> None:
        """A wrapper nobody closed ends its thread once collected, after
        delivering what it held."""
        gate = threading.Event()
        handler = Tokens(gate)
        wrapper = in_background(handler)
        for i in range(3):
            wrapper.on_partial_response(part(i), CONTEXT)
        (thread,) = background_threads()
        del wrapper
        gc.collect()
        gate.set()
        thread.join(PATIENCE)
        assert not thread.is_alive()
        assert handler.texts == ["t0", "t1", "t2"]

    def test_interpreter_exit_delivers_what_is_queued(self) -> None:
        """A program that exits without close() still delivers its queued events."""
        script = textwrap.dedent(
            """
            import sys, time
            from langhooks import PartialResponse, PartialResponseContext
            from langhooks import StreamingChatResponseHandler, StreamingHandle
            from langhooks import in_background

            class Slow(StreamingChatResponseHandler):
                def on_partial_response(self, partial, context):
                    time.sleep(0.01)
                    print(partial.text, flush=True)

            handler = in_background(Slow())
            context = PartialResponseContext(handle=StreamingHandle())
            for i in range(5):
                handler.on_partial_response(PartialResponse(text=f"t{i}"), context)
            """
        )
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert done.stdout.split() == ["t0", "t1", "t2", "t3", "t4"]

    async def test_aclose_ends_the_task(self) -> None:
        """After aclose() every queued event was delivered and the task ended."""
        handler = AsyncTokens()
        before = asyncio.all_tasks()
        wrapper = in_background(handler)
        for i in range(3):
            await wrapper.on_partial_response(part(i), CONTEXT)
        (task,) = asyncio.all_tasks() - before
        await wrapper.aclose()
        assert task.done()
        assert handler.texts == ["t0", "t1", "t2"]
        await wrapper.aclose()  # idempotent
        with pytest.raises(LangHooksError, match="was closed"):
            await wrapper.on_partial_response(part(3), CONTEXT)

    async def test_garbage_collection_ends_the_task(self) -> None:
        """An async wrapper nobody closed ends its task once collected."""
        handler = AsyncTokens()
        before = asyncio.all_tasks()
        wrapper = in_background(handler)
        await wrapper.on_partial_response(part(0), CONTEXT)
        (task,) = asyncio.all_tasks() - before
        del wrapper
        gc.collect()
        await asyncio.wait_for(task, PATIENCE)
        assert handler.texts == ["t0"]

    def test_a_loop_that_ends_first_logs_the_loss(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Events still queued when their event loop ends are reported, not lost
        silently."""
        gate_holder: list[asyncio.Event] = []

        async def main() -> None:
            gate = asyncio.Event()
            gate_holder.append(gate)
            wrapper = in_background(AsyncTokens(gate))
            for i in range(3):
                await wrapper.on_partial_response(part(i), CONTEXT)

        with caplog.at_level(logging.WARNING, logger="langhooks"):
            asyncio.run(main())
        assert any("lost 2 event(s)" in r.message for r in caplog.records)

    async def test_an_event_after_the_worker_was_cancelled_is_reported(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An event that arrives just after the loop cancelled the worker (as
        asyncio.run does on its way out, while other tasks clean up) is reported
        as lost, not dropped silently."""
        handler = AsyncTokens()
        wrapper = in_background(handler)
        before = asyncio.all_tasks()
        await wrapper.on_partial_response(part(0), CONTEXT)
        (task,) = asyncio.all_tasks() - before
        task.cancel()
        await asyncio.sleep(0)  # the worker ends in this turn of the loop
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            await wrapper.on_partial_response(part(1), CONTEXT)
        assert task.cancelled()
        assert "lost 1 event(s)" in caplog.records[0].message
        assert "t1" not in handler.texts
        await wrapper.aclose()


class TestAsyncDelivery:
    async def test_delivers_on_a_task_in_order(self) -> None:
        """Async events reach the handler on another task, in order."""
        gate = asyncio.Event()
        handler = AsyncTokens(gate)
        wrapper = in_background(handler)
        for i in range(20):
            await wrapper.on_partial_response(part(i), CONTEXT)
        assert handler.texts == []
        gate.set()
        await wrapper.aflush()
        assert handler.texts == [f"t{i}" for i in range(20)]
        assert asyncio.current_task() not in handler.tasks
        await wrapper.aclose()

    @settings(max_examples=30, deadline=None)
    @given(
        texts=st.lists(st.text(min_size=1, max_size=3), max_size=30),
        maxsize=st.integers(1, 4),
    )
    def test_every_event_once_in_order(self, texts: list[str], maxsize: int) -> None:
        """With "block", an async handler gets each event once, in order."""
        handler = AsyncTokens()

        async def main() -> None:
            wrapper = in_background(handler, maxsize=maxsize)
            for text in texts:
                await wrapper.on_partial_response(PartialResponse(text=text), CONTEXT)
            await wrapper.aclose()

        asyncio.run(main())
        assert handler.texts == texts

    async def test_block_waits_for_room(self) -> None:
        """With "block", the calling task waits while the queue is full."""
        gate = asyncio.Event()
        handler = AsyncTokens(gate)
        wrapper = in_background(handler, maxsize=1)
        await wrapper.on_partial_response(part(0), CONTEXT)
        await handler.started.wait()
        await wrapper.on_partial_response(part(1), CONTEXT)
        third = asyncio.create_task(wrapper.on_partial_response(part(2), CONTEXT))
        await asyncio.sleep(0.01)
        assert not third.done()
        gate.set()
        await third
        await wrapper.aclose()
        assert handler.texts == ["t0", "t1", "t2"]

    async def test_aclose_releases_a_blocked_task(self) -> None:
        """A task waiting for room when the wrapper closes gets the error."""
        gate = asyncio.Event()
        handler = AsyncTokens(gate)
        wrapper = in_background(handler, maxsize=1)
        await wrapper.on_partial_response(part(0), CONTEXT)
        await handler.started.wait()
        await wrapper.on_partial_response(part(1), CONTEXT)
        blocked = asyncio.create_task(wrapper.on_partial_response(part(2), CONTEXT))
        await asyncio.sleep(0.01)
        closing = asyncio.create_task(wrapper.aclose())
        with pytest.raises(LangHooksError, match="was closed"):
            await blocked
        gate.set()
        await closing
        assert handler.texts == ["t0", "t1"]

    async def test_drop_oldest(self, caplog: pytest.LogCaptureFixture) -> None:
        """With "drop_oldest", the newest events are kept and drops counted."""
        gate = asyncio.Event()
        handler = AsyncTokens(gate)
        wrapper = in_background(handler, maxsize=2, overflow="drop_oldest")
        await wrapper.on_partial_response(part(0), CONTEXT)
        await handler.started.wait()
        flushed = asyncio.create_task(wrapper.aflush())
        for i in range(1, 6):
            await wrapper.on_partial_response(part(i), CONTEXT)
        gate.set()
        await flushed
        await wrapper.aclose()
        assert handler.texts == ["t0", "t4", "t5"]
        assert wrapper.dropped_count == 3

    async def test_an_exception_is_logged_and_counted(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A raising async event is logged and counted; the worker goes on."""
        handler = AsyncTokens()
        handler.fail = {"t0"}
        wrapper = in_background(handler)
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            await wrapper.on_partial_response(part(0), CONTEXT)
            await wrapper.on_partial_response(part(1), CONTEXT)
            await wrapper.aflush()
        assert handler.texts == ["t1"]
        assert wrapper.error_count == 1
        assert caplog.records[0].exc_info is not None
        await wrapper.aclose()

    async def test_aflush_from_the_handler_does_not_wait_for_itself(self) -> None:
        """An async handler awaiting aflush() of its own wrapper is not stuck."""

        class SelfFlushing(AsyncStreamingChatResponseHandler):
            @override
            async def on_complete_response(self, response: ChatResponse) -> None:
                await wrapper.aflush()
                await wrapper.aclose()

        wrapper = in_background(SelfFlushing())
        await wrapper.on_complete_response(RESPONSE)
        await wrapper.aflush()
        await wrapper.aclose()

    def test_one_worker_per_event_loop(self) -> None:
        """A wrapper used from one asyncio.run after another delivers in each."""
        handler = AsyncTokens()
        wrapper = in_background(handler)

        async def send(i: int) -> None:
            await wrapper.on_partial_response(part(i), CONTEXT)
            await wrapper.aflush()

        asyncio.run(send(0))
        asyncio.run(send(1))
        assert handler.texts == ["t0", "t1"]

        async def close() -> None:
            await wrapper.aclose()
            with pytest.raises(LangHooksError, match="was closed"):
                await wrapper.on_partial_response(part(2), CONTEXT)

        asyncio.run(close())

    def test_close_from_another_thread_stops_a_loops_worker(self) -> None:
        """close() of a mixed handler also stops the worker of a loop running in
        another thread, which still delivers what it held."""
        handler = Mixed()
        wrapper: Any = in_background(handler)  # typed as one interface only
        ready, closed = threading.Event(), threading.Event()

        async def main() -> None:
            await wrapper.on_run_start(CHAIN)
            (task,) = asyncio.all_tasks() - {asyncio.current_task()}
            ready.set()
            await asyncio.to_thread(closed.wait, PATIENCE)
            await asyncio.wait_for(task, PATIENCE)

        runner = threading.Thread(target=asyncio.run, args=(main(),))
        runner.start()
        assert ready.wait(PATIENCE)
        assert wrapper.close() is True
        closed.set()
        runner.join(PATIENCE)
        assert handler.seen == ["run_start"]

    async def test_aflush_covers_sync_and_async_events(self) -> None:
        """For a handler with sync and async events, aflush() and aclose() wait
        for both workers."""
        handler = Mixed()
        wrapper: Any = in_background(handler)  # typed as one interface only
        await wrapper.aflush()  # nothing queued, no worker started yet
        wrapper.on_partial_response(part(0), CONTEXT)
        await wrapper.on_run_start(CHAIN)
        await wrapper.aflush()
        assert sorted(handler.seen) == ["run_start", "t0"]
        await wrapper.aclose()
        assert background_threads() == []


class TestComposition:
    def test_runs_without_an_invocation(self) -> None:
        """The handler runs in an empty context: no current invocation, whichever
        way it is combined with HandlerWithoutInvocation."""
        seen: list[object] = []

        class Looking(StreamingChatResponseHandler):
            @override
            def on_complete_response(self, response: ChatResponse) -> None:
                seen.append(current_invocation())

        outer = in_background(HandlerWithoutInvocation(Looking()))
        background = in_background(Looking())
        inner = HandlerWithoutInvocation(background)
        with invocation("run"):
            outer.on_complete_response(RESPONSE)
            inner.on_complete_response(RESPONSE)
        outer.close()
        background.close()
        assert seen == [None, None]

    def test_with_coalescing_either_way_round(self) -> None:
        """Coalescing inside or outside the background wrapper, the stream's text
        arrives whole and in order once the response went through."""
        turn = ScriptedTurn(text=" ".join(f"w{i}" for i in range(100)))
        inner, outer = Tokens(), Tokens()
        inside = in_background(CoalescingDeltas(inner, max_chars=16))
        background = in_background(outer)
        outside = CoalescingDeltas(background, max_chars=16)
        ScriptedChatModel([turn]).stream(REQUEST, inside)
        ScriptedChatModel([turn]).stream(REQUEST, outside)
        assert inside.close() is True
        assert background.close() is True
        for handler in (inner, outer):
            assert handler.texts[-1] == "END"
            assert "".join(handler.texts[:-1]) == turn.text
            assert len(handler.texts) < 100

    def test_inside_a_composite(self) -> None:
        """A composite fans out to a background handler beside an inline one."""
        slow, fast = Tokens(), Tokens()
        wrapper = in_background(slow)
        composite = CompositeStreamingHandler([wrapper, fast])
        composite.on_partial_response(part(0), CONTEXT)
        assert fast.texts == ["t0"]
        assert wrapper.flush() is True
        assert slow.texts == ["t0"]
        wrapper.close()

    def test_a_scripted_stream(self) -> None:
        """Behind a model stream, the handler gets what it would get inline."""
        turn = ScriptedTurn(thinking="let me see", text="one two three")
        direct = RecordingStreamingHandler()
        ScriptedChatModel([turn]).stream(REQUEST, direct)
        handler = RecordingStreamingHandler()
        wrapper = in_background(handler)
        ScriptedChatModel([turn]).stream(REQUEST, wrapper)
        assert wrapper.close() is True
        assert handler.names == direct.names
        assert [args[0] for _, args in handler.events] == [
            args[0] for _, args in direct.events
        ]

    @pytest.mark.parametrize("use_async", [False, True])
    async def test_a_chain_run(self, use_async: bool) -> None:
        """Behind a chain run (review included), the handler gets the events a
        direct handler gets, in the same order."""

        def script() -> ScriptedChatModel:
            return ScriptedChatModel(
                [
                    ScriptedTurn(tool_calls=[CALL]),
                    ScriptedTurn(text="the answer"),
                ]
            )

        def run(handler: ChainCallbackHandler) -> Callable[[], Any]:
            chain = LLMChain(script(), tools=[TOOL], callbacks=[handler])
            chain = chain.add_message(Message.user("go"))
            return chain.arun if use_async else chain.run

        direct = RecordingChainHandler()
        handler = RecordingChainHandler()
        wrapper = in_background(handler)
        for target in (direct, wrapper):
            outcome = run(target)()
            result = await outcome if use_async else outcome
            assert result.status == "ok"
        assert wrapper.close() is True
        assert handler.names == direct.names
        assert "on_tool_call_review" in handler.names


GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "wrappers.md"


class TestGuide:
    def test_the_push_example_runs(self) -> None:
        """The guide's example of pushing tokens to a slow service runs as shown."""
        (source,) = re.findall(
            r"<!-- example: push -->\n```python\n(.*?)```", GUIDE.read_text(), re.S
        )
        namespace: dict[str, Any] = {"__name__": "guide_example"}
        exec(compile(source, str(GUIDE), "exec"), namespace)
        assert namespace["tokens"].sent[:2] == ["one ", "two "]


class TestPresentation:
    def test_dir_shows_the_controls_and_the_handler(self) -> None:
        """dir() lists the wrapper's own API beside the handler's attributes."""
        wrapper = in_background(Tokens())
        names = set(dir(wrapper))
        assert {"flush", "close", "aflush", "aclose", "wrapped"} <= names
        assert {"error_count", "dropped_count", "texts"} <= names
        assert "on_partial_response" in names
        assert isinstance(wrapper, Tokens)
        wrapper.close()

    def test_dir_of_an_async_handler_has_no_sync_controls(self) -> None:
        """An all-async handler's wrapper offers aflush/aclose, not flush/close."""
        names = set(dir(in_background(AsyncTokens())))
        assert {"aflush", "aclose", "error_count"} <= names
        assert not {"flush", "close"} & names

    def test_help_documents_the_wrapper(self) -> None:
        """help() names the wrapper and shows its docstring and controls."""
        wrapper = in_background(Tokens())
        text = pydoc.plain(pydoc.render_doc(wrapper))
        assert "class in_background(" in text
        assert "flush(self, timeout: 'float | None' = None) -> 'bool'" in text
        assert type(wrapper).__doc__ == type(wrapper).__mro__[1].__doc__
        wrapper.close()

    def test_vars_are_the_wrapper_own(self) -> None:
        """vars() is the wrapper's own state: its installed events, not the
        handler's attributes."""
        handler = Tokens()
        wrapper = in_background(handler)
        assert "on_partial_response" in vars(wrapper)
        assert "texts" not in vars(wrapper)
        assert wrapper.wrapped is handler
        wrapper.close()

    def test_the_checker_view_matches_the_controls(self) -> None:
        """The types the overloads return offer what the wrapper offers: flush()
        and close() only where the handler has sync events."""
        from langhooks._wrap import _controls

        assert {"flush", "close", "aflush"} <= set(dir(_controls.SyncControls))
        assert not {"flush", "close"} & set(dir(_controls.AsyncControls))
        both = _controls._ChainAndStreamingBackground
        assert issubclass(both, ChainCallbackHandler)
        assert issubclass(both, StreamingChatResponseHandler)
        async_only = set(dir(in_background(AsyncTokens())))
        offered = {n for n in dir(_controls.AsyncControls) if not n.startswith("_")}
        assert offered <= async_only

"""Wrappers: HandlerWithoutInvocation, isolate, Synchronized, filtered and
CoalescingDeltas."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncCompositeStreamingHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChainEventName,
    ChatResponse,
    CoalescingDeltas,
    CompleteToolCall,
    CompositeChainHandler,
    CompositeStreamingHandler,
    Deny,
    HandlerWithoutInvocation,
    Invocation,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    StreamingEventName,
    StreamingHandle,
    Synchronized,
    Tool,
    ToolCall,
    ToolContext,
    UpdateArguments,
    current_invocation,
    filtered,
    invocation,
    isolate,
)
from langhooks._core._handler import HandlerBase, overridden_events
from langhooks.notify import NotifyingHandler

CHAIN: Any = object()  # chain events carry a snapshot; these tests never read it
ERROR = LangHooksError("timeout", "t")
RESPONSE = ChatResponse(message=Message.assistant("done"))
OTHER: contextvars.ContextVar[str] = contextvars.ContextVar("other", default="unset")


def _echo(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return "ok"


TOOL = Tool("echo", _echo)
CALL = ToolCall(call_id="c1", name="echo")
REVIEW = ReviewContext()


class Boom(LangHooksError):
    """Raised by handlers on request (a LangHooksError, as on_error receives)."""

    def __init__(self, message: str = "boom") -> None:
        super().__init__("handler_error", message)


# --- one observing handler per interface -------------------------------------------
# Each records what it sees inside on_error, writes OTHER, and raises on a Boom.


def _observe(seen: list[tuple[Invocation | None, str]], error: BaseException) -> None:
    seen.append((current_invocation(), OTHER.get()))
    OTHER.set("written by the handler")
    if isinstance(error, Boom):
        raise error


class SyncStream(StreamingChatResponseHandler):
    def __init__(self) -> None:
        self.seen: list[tuple[Invocation | None, str]] = []

    @override
    def on_error(self, error: BaseException) -> None:
        _observe(self.seen, error)


class AsyncStream(AsyncStreamingChatResponseHandler):
    def __init__(self) -> None:
        self.seen: list[tuple[Invocation | None, str]] = []

    @override
    async def on_error(self, error: BaseException) -> None:
        await asyncio.sleep(0)
        _observe(self.seen, error)


class SyncChain(ChainCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[tuple[Invocation | None, str]] = []

    @override
    def on_error(self, chain: Any, error: LangHooksError) -> None:
        _observe(self.seen, error)


class AsyncChain(AsyncChainCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[tuple[Invocation | None, str]] = []

    @override
    async def on_error(self, chain: Any, error: LangHooksError) -> None:
        await asyncio.sleep(0)
        _observe(self.seen, error)


KINDS = [SyncStream, AsyncStream, SyncChain, AsyncChain]
INTERFACE = {
    SyncStream: StreamingChatResponseHandler,
    AsyncStream: AsyncStreamingChatResponseHandler,
    SyncChain: ChainCallbackHandler,
    AsyncChain: AsyncChainCallbackHandler,
}


async def _fire_error(handler: Any, error: LangHooksError) -> None:
    """Deliver on_error to any of the four kinds, awaiting when needed."""
    streaming = StreamingChatResponseHandler | AsyncStreamingChatResponseHandler
    if isinstance(handler, streaming):
        result = handler.on_error(error)
    else:
        result = handler.on_error(CHAIN, error)
    if inspect.isawaitable(result):
        await result


class TestHandlerWithoutInvocation:
    @pytest.mark.parametrize("kind", KINDS)
    async def test_no_current_invocation_inside(self, kind: type[Any]) -> None:
        """Inside the handler there is no current invocation; outside it is kept."""
        inner = kind()
        wrapped = HandlerWithoutInvocation(inner)
        with invocation("run") as run:
            await _fire_error(wrapped, ERROR)
            assert current_invocation() is run
        assert inner.seen[0][0] is None

    @pytest.mark.parametrize("kind", KINDS)
    async def test_other_context_vars_visible(self, kind: type[Any]) -> None:
        """The handler still sees the caller's other context variables."""
        inner = kind()
        token = OTHER.set("caller")
        try:
            await _fire_error(HandlerWithoutInvocation(inner), ERROR)
        finally:
            OTHER.reset(token)
        assert inner.seen[0][1] == "caller"

    @pytest.mark.parametrize("kind", KINDS)
    async def test_writes_do_not_leak(self, kind: type[Any]) -> None:
        """Context variables the handler sets do not leak back to the caller."""
        token = OTHER.set("caller")
        try:
            await _fire_error(HandlerWithoutInvocation(kind()), ERROR)
            assert OTHER.get() == "caller"
        finally:
            OTHER.reset(token)

    @pytest.mark.parametrize("kind", KINDS)
    async def test_restored_when_handler_raises(self, kind: type[Any]) -> None:
        """The exception propagates and the caller's state is intact."""
        token = OTHER.set("caller")
        try:
            with invocation("run") as run:
                with pytest.raises(Boom):
                    await _fire_error(HandlerWithoutInvocation(kind()), Boom())
                assert current_invocation() is run
                assert OTHER.get() == "caller"
        finally:
            OTHER.reset(token)

    @pytest.mark.parametrize("kind", KINDS)
    def test_wrapping_twice_is_a_no_op(self, kind: type[Any]) -> None:
        """Wrapping a wrapped handler returns it unchanged."""
        once = HandlerWithoutInvocation(kind())
        assert HandlerWithoutInvocation(once) is once
        assert HandlerWithoutInvocation.wrap(once) is once

    @pytest.mark.parametrize("kind", KINDS)
    def test_isinstance_kept(self, kind: type[Any]) -> None:
        """The wrapper is an instance of the wrapped handler's interface."""
        wrapped = HandlerWithoutInvocation(kind())
        assert isinstance(wrapped, INTERFACE[kind])
        assert isinstance(wrapped, HandlerWithoutInvocation)
        for other in set(INTERFACE.values()) - {INTERFACE[kind]}:
            assert not isinstance(wrapped, other)

    @pytest.mark.parametrize("kind", KINDS)
    def test_only_overridden_events_wrapped(self, kind: type[Any]) -> None:
        """Events the handler does not override stay the interface's free no-op."""
        inner = kind()
        wrapped = HandlerWithoutInvocation(inner)
        assert overridden_events(wrapped) == overridden_events(inner) == {"on_error"}
        assert "on_error" in vars(wrapped)
        unwrapped = set(type(wrapped)._langhooks_events) - {"on_error"}
        assert unwrapped
        for name in unwrapped:
            assert name not in vars(wrapped)

    def test_wrapped_property_and_repr(self) -> None:
        """wrapped is the inner handler; repr shows it."""
        inner = SyncStream()
        wrapped = HandlerWithoutInvocation(inner)
        assert wrapped.wrapped is inner
        assert "SyncStream" in repr(wrapped)

    def test_non_handler_rejected(self) -> None:
        """Wrapping something that is not a handler is a TypeError."""
        with pytest.raises(TypeError, match="HandlerWithoutInvocation wraps a handler"):
            HandlerWithoutInvocation(object())  # type: ignore[call-overload]

    def test_nested_run_starts_fresh_root(self) -> None:
        """A run started inside the handler is a new root, not the caller's child."""
        started: list[Invocation] = []

        class StartsRun(ChainCallbackHandler):
            @override
            def on_run_start(self, chain: Any) -> None:
                with invocation("nested") as nested:
                    started.append(nested)

        with invocation("outer"):
            HandlerWithoutInvocation(StartsRun()).on_run_start(CHAIN)
        assert started[0].parent_id is None

    def test_return_value_passed_through(self) -> None:
        """A review decision comes back through the wrapper."""

        class Reviewer(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                return Deny("no")

        wrapped = HandlerWithoutInvocation(Reviewer())
        assert wrapped.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Deny("no")

    async def test_async_handler_across_awaits(self) -> None:
        """An async handler sees no invocation at every step, while a concurrent
        task keeps its own."""
        inside: list[Invocation | None] = []
        others: list[bool] = []

        class Sleeper(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: Any) -> None:
                for _ in range(5):
                    inside.append(current_invocation())
                    await asyncio.sleep(0)
                OTHER.set("set inside")

        async def neighbour() -> None:
            with invocation("neighbour") as mine:
                for _ in range(5):
                    await asyncio.sleep(0)
                    others.append(current_invocation() is mine)

        with invocation("run") as run:
            await asyncio.gather(
                HandlerWithoutInvocation(Sleeper()).on_run_start(CHAIN), neighbour()
            )
            assert current_invocation() is run
        assert inside == [None] * 5
        assert others == [True] * 5
        assert OTHER.get() == "unset"

    async def test_async_handler_return_value(self) -> None:
        """An async handler's return value comes back through the await."""

        class Reviewer(AsyncChainCallbackHandler):
            @override
            async def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                await asyncio.sleep(0)
                return UpdateArguments({"a": 1})

        wrapped = HandlerWithoutInvocation(Reviewer())
        decision = await wrapped.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        assert decision == UpdateArguments({"a": 1})

    def test_async_method_returns_a_coroutine(self) -> None:
        """An async method of the wrapper returns a coroutine, like the method it
        wraps, so asyncio.run and asyncio.create_task take it (from Python 3.12
        they reject any other awaitable)."""
        seen: list[object] = []

        class Handler(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: Any) -> None:
                seen.append(current_invocation())

        wrapped = HandlerWithoutInvocation(Handler())
        with invocation("run"):
            call = wrapped.on_run_start(CHAIN)
            assert inspect.iscoroutine(call)
            asyncio.run(call)
        assert seen == [None]

    async def test_async_immediate_return_value(self) -> None:
        """A decision returned without awaiting anything is not lost (a lost
        Deny would let the call through)."""

        class Reviewer(AsyncChainCallbackHandler):
            @override
            async def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                return Deny("no")

        wrapped = HandlerWithoutInvocation(Reviewer())
        assert await wrapped.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Deny(
            "no"
        )
        with invocation("run"):
            twice = isolate(HandlerWithoutInvocation(isolate(Reviewer())))
            assert await twice.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Deny(
                "no"
            )

    async def test_cancelled_task(self) -> None:
        """Cancelling a task awaiting a wrapped handler cancels the handler."""
        entered = asyncio.Event()
        outcome: list[str] = []

        class Waits(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: Any) -> None:
                entered.set()
                try:
                    await asyncio.Event().wait()
                except asyncio.CancelledError:
                    outcome.append(f"cancelled, invocation {current_invocation()}")
                    raise

        async def run() -> None:
            with invocation("run"):
                await HandlerWithoutInvocation(Waits()).on_run_start(CHAIN)

        task = asyncio.create_task(run())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert outcome == ["cancelled, invocation None"]
        assert current_invocation() is None

    async def test_async_handler_catching_thrown_exception(self) -> None:
        """A handler that catches a cancellation and returns finishes normally."""

        class Absorbs(AsyncStreamingChatResponseHandler):
            @override
            async def on_complete_response(self, response: ChatResponse) -> None:
                try:
                    await asyncio.sleep(10)
                except asyncio.CancelledError:
                    return

        wrapped = HandlerWithoutInvocation(Absorbs())
        coroutine = wrapped.on_complete_response(RESPONSE)
        task = asyncio.ensure_future(coroutine)
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)
        assert task.done()
        assert not task.cancelled()

    def test_wrapped_composite_sees_additions(self) -> None:
        """A wrapped composite calls handlers added to it later."""
        inner = SyncChain()
        composite = CompositeChainHandler([])
        wrapped = HandlerWithoutInvocation(composite)
        composite.add(inner)
        wrapped.on_error(CHAIN, ERROR)
        assert len(inner.seen) == 1


class TestIsolate:
    def test_logs_with_traceback_and_carries_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A raising handler is logged with its traceback and the caller goes on."""
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            isolate(SyncStream()).on_error(Boom("no disk"))
        (record,) = caplog.records
        assert record.exc_info is not None
        assert record.exc_info[0] is Boom
        assert "on_error raised" in record.getMessage()

    async def test_async_logs_and_carries_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An async handler's exception is logged after awaiting it."""
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            await isolate(AsyncChain()).on_error(CHAIN, Boom("no disk"))
        assert "no disk" in caplog.text

    def test_log_names_the_wrapped_handler(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The log message names the isolated handler, also for a composite."""
        composite = CompositeStreamingHandler([SyncStream()])
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            isolate(composite).on_error(Boom("no disk"))
        assert "CompositeStreamingHandler([" in caplog.records[0].getMessage()

    def test_no_error_no_log(self, caplog: pytest.LogCaptureFixture) -> None:
        """A handler that does not raise is called normally and nothing is logged."""
        inner = SyncChain()
        isolate(inner).on_error(CHAIN, ERROR)
        assert len(inner.seen) == 1
        assert caplog.records == []

    def test_failing_review_denies(self, caplog: pytest.LogCaptureFixture) -> None:
        """A raising review counts as Deny: a failed policy lets nothing through."""

        class Broken(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                raise Boom("policy store down")

        with caplog.at_level(logging.ERROR, logger="langhooks"):
            decision = isolate(Broken()).on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        assert isinstance(decision, Deny)
        assert "(its answer is Deny(" in caplog.text

    async def test_async_failing_review_denies(self) -> None:
        """The async twin also fails closed."""

        class Broken(AsyncChainCallbackHandler):
            @override
            async def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                raise Boom("policy store down")

        wrapped = isolate(Broken())
        logging.getLogger("langhooks").disabled = True
        try:
            decision = await wrapped.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        finally:
            logging.getLogger("langhooks").disabled = False
        assert isinstance(decision, Deny)

    def test_keeps_interface_and_events(self) -> None:
        """isolate keeps the interface and wraps only overridden events."""
        inner = SyncChain()
        wrapped = isolate(inner)
        assert isinstance(wrapped, ChainCallbackHandler)
        assert overridden_events(wrapped) == {"on_error"}

    def test_non_handler_rejected(self) -> None:
        """isolate needs a handler."""
        with pytest.raises(TypeError, match="isolate wraps a handler"):
            isolate(42)  # type: ignore[type-var]


class _OverlapDetector(StreamingChatResponseHandler):
    """Counts calls non-atomically and records any overlap between calls."""

    def __init__(self) -> None:
        self.count = 0
        self.overlaps = 0
        self._inside = threading.Lock()

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        if not self._inside.acquire(blocking=False):
            self.overlaps += 1
            return
        try:
            value = self.count
            for _ in range(3):
                threading.Event().wait(0)  # let other threads run here
            self.count = value + 1
        finally:
            self._inside.release()


class TestSynchronized:
    def test_serialises_threads(self) -> None:
        """Concurrent threads never overlap inside the handler; no update is lost."""
        detector = _OverlapDetector()
        handler = Synchronized(detector)

        def work() -> None:
            for _ in range(300):
                handler.on_unmapped_raw_event(None)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert (detector.count, detector.overlaps) == (1200, 0)

    def test_second_caller_waits_for_the_first(self) -> None:
        """While one thread is inside the handler, another cannot enter."""
        entered = threading.Event()
        release = threading.Event()
        second_entered = threading.Event()

        class Blocking(StreamingChatResponseHandler):
            @override
            def on_unmapped_raw_event(self, raw_event: object) -> None:
                if raw_event == "first":
                    entered.set()
                    release.wait()
                else:
                    second_entered.set()

        handler = Synchronized(Blocking())
        first = threading.Thread(target=handler.on_unmapped_raw_event, args=("first",))
        first.start()
        entered.wait()
        second = threading.Thread(
            target=handler.on_unmapped_raw_event, args=("second",)
        )
        second.start()
        assert not second_entered.wait(0.05)
        release.set()
        first.join()
        second.join()
        assert second_entered.is_set()

    def test_reentrant(self) -> None:
        """A sync handler may trigger its own events through the wrapper."""
        calls: list[str] = []

        class Reentrant(StreamingChatResponseHandler):
            wrapper: Any = None

            @override
            def on_unmapped_raw_event(self, raw_event: object) -> None:
                calls.append("raw")
                self.wrapper.on_error(ERROR)

            @override
            def on_error(self, error: BaseException) -> None:
                calls.append("error")

        inner = Reentrant()
        inner.wrapper = Synchronized(inner)
        inner.wrapper.on_unmapped_raw_event(None)
        assert calls == ["raw", "error"]

    async def test_serialises_tasks(self) -> None:
        """Async methods run one task at a time."""
        active = 0
        overlaps = 0

        class Slow(AsyncStreamingChatResponseHandler):
            @override
            async def on_unmapped_raw_event(self, raw_event: object) -> None:
                nonlocal active, overlaps
                active += 1
                overlaps += active > 1
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                active -= 1

        handler = Synchronized(Slow())
        await asyncio.gather(*(handler.on_unmapped_raw_event(i) for i in range(20)))
        assert overlaps == 0

    def test_async_usable_from_several_loops(self) -> None:
        """An async handler can be shared by one event loop after another."""
        entered: list[int] = []

        class Slow(AsyncStreamingChatResponseHandler):
            @override
            async def on_unmapped_raw_event(self, raw_event: object) -> None:
                await asyncio.sleep(0)
                entered.append(1)

        handler = Synchronized(Slow())

        async def contend() -> None:
            await asyncio.gather(*(handler.on_unmapped_raw_event(i) for i in range(3)))

        asyncio.run(contend())
        asyncio.run(contend())
        worker = threading.Thread(target=asyncio.run, args=(contend(),))
        worker.start()
        worker.join()
        assert len(entered) == 9

    def test_keeps_interface_and_events(self) -> None:
        """Synchronized keeps the interface and the overridden events."""
        wrapped = Synchronized(SyncChain())
        assert isinstance(wrapped, ChainCallbackHandler)
        assert isinstance(wrapped, Synchronized)
        assert overridden_events(wrapped) == {"on_error"}

    def test_non_handler_rejected(self) -> None:
        """Synchronized needs a handler."""
        with pytest.raises(TypeError, match="Synchronized wraps a handler"):
            Synchronized("handler")  # type: ignore[call-overload]


class _Everything(StreamingChatResponseHandler):
    """Records the name of every event it receives."""

    def __init__(self) -> None:
        self.log: list[str] = []

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.log.append("partial")

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self.log.append("complete")

    @override
    def on_error(self, error: BaseException) -> None:
        self.log.append("error")


class TestFiltered:
    def test_only_named_events_delivered(self) -> None:
        """Only the named events reach the handler."""
        inner = _Everything()
        handler = filtered(inner, events=["on_error", "on_unmapped_raw_event"])
        handler.on_partial_response(
            PartialResponse(text="x"), PartialResponseContext(handle=StreamingHandle())
        )
        handler.on_complete_response(RESPONSE)
        handler.on_error(ERROR)
        assert inner.log == ["error"]
        assert overridden_events(handler) == {"on_error"}

    def test_unknown_name_rejected_with_hint(self) -> None:
        """An unknown event name is a TypeError naming the closest event."""
        with pytest.raises(TypeError, match="did you mean on_complete_response"):
            filtered(_Everything(), events=["on_complete_respose"])  # type: ignore[list-item]

    @pytest.mark.parametrize(
        ("names", "interface"),
        [
            (StreamingEventName, StreamingChatResponseHandler),
            (StreamingEventName, AsyncStreamingChatResponseHandler),
            (ChainEventName, ChainCallbackHandler),
            (ChainEventName, AsyncChainCallbackHandler),
        ],
    )
    def test_event_name_types_list_every_event(
        self, names: object, interface: type[HandlerBase]
    ) -> None:
        """The Literal types of event names hold exactly the interface's events."""
        assert set(get_args(names)) == set(interface._langhooks_events)

    def test_bare_string_rejected(self) -> None:
        """A single str is not taken as a collection of letters."""
        with pytest.raises(TypeError, match="collection of names"):
            filtered(_Everything(), events="on_error")  # type: ignore[arg-type]

    def test_keeps_interface(self) -> None:
        """The filtered handler is still an instance of the interface."""
        assert isinstance(
            filtered(_Everything(), events=()), StreamingChatResponseHandler
        )

    def test_non_handler_rejected(self) -> None:
        """filtered needs a handler."""
        with pytest.raises(TypeError, match="filtered wraps a handler"):
            filtered(None, events=())  # type: ignore[call-overload]

    def test_in_a_composite(self) -> None:
        """Filtered and wrapped handlers compose like any handler."""
        inner = _Everything()
        composite = CompositeStreamingHandler(
            [filtered(isolate(inner), events=["on_complete_response"])]
        )
        composite.on_error(ERROR)
        composite.on_complete_response(RESPONSE)
        assert inner.log == ["complete"]


# --- CoalescingDeltas --------------------------------------------------------------

Delivered = tuple[str, str]  # ("text" | "thinking" | other event name, payload)


class _Collector(StreamingChatResponseHandler):
    def __init__(self) -> None:
        self.log: list[Delivered] = []
        self.handles: list[StreamingHandle] = []

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.log.append(("text", partial.text))
        self.handles.append(context.handle)

    @override
    def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self.log.append(("thinking", partial.text))

    @override
    def on_unmapped_raw_event(self, raw_event: object) -> None:
        self.log.append(("raw", str(raw_event)))

    @override
    def on_complete_tool_call(self, complete: CompleteToolCall) -> None:
        self.log.append(("tool", complete.tool_call.name))

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self.log.append(("complete", ""))

    @override
    def on_error(self, error: BaseException) -> None:
        self.log.append(("error", ""))


class _CancelsOn(_Collector):
    """Cancels the stream when a text partial contains ``word``."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        super().on_partial_response(partial, context)
        if self.word in partial.text:
            context.handle.cancel()


class _AsyncCollector(AsyncStreamingChatResponseHandler):
    def __init__(self) -> None:
        self.log: list[Delivered] = []

    @override
    async def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        await asyncio.sleep(0)
        self.log.append(("text", partial.text))

    @override
    async def on_partial_thinking(
        self, partial: PartialThinking, context: PartialThinkingContext
    ) -> None:
        self.log.append(("thinking", partial.text))

    @override
    async def on_unmapped_raw_event(self, raw_event: object) -> None:
        self.log.append(("raw", str(raw_event)))

    @override
    async def on_complete_response(self, response: ChatResponse) -> None:
        self.log.append(("complete", ""))


def _feed(handler: Any, events: list[Delivered], handle: StreamingHandle) -> None:
    for kind, payload in events:
        if kind == "text":
            handler.on_partial_response(
                PartialResponse(text=payload), PartialResponseContext(handle=handle)
            )
        elif kind == "thinking":
            handler.on_partial_thinking(
                PartialThinking(text=payload), PartialThinkingContext(handle=handle)
            )
        elif kind == "raw":
            handler.on_unmapped_raw_event(payload)
        elif kind == "tool":
            handler.on_complete_tool_call(
                CompleteToolCall(index=0, tool_call=ToolCall(call_id="c", name=payload))
            )
        elif kind == "error":
            handler.on_error(ERROR)
        else:
            handler.on_complete_response(RESPONSE)


async def _afeed(
    handler: Any, events: list[Delivered], handle: StreamingHandle
) -> None:
    for kind, payload in events:
        if kind == "text":
            await handler.on_partial_response(
                PartialResponse(text=payload), PartialResponseContext(handle=handle)
            )
        elif kind == "thinking":
            await handler.on_partial_thinking(
                PartialThinking(text=payload), PartialThinkingContext(handle=handle)
            )
        elif kind == "raw":
            await handler.on_unmapped_raw_event(payload)
        else:
            await handler.on_complete_response(RESPONSE)


def _merged(events: list[Delivered]) -> list[Delivered]:
    """Consecutive partials of one kind joined: what coalescing must preserve."""
    out: list[Delivered] = []
    for kind, payload in events:
        if out and kind in ("text", "thinking") and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + payload)
        else:
            out.append((kind, payload))
    return out


class TestCoalescingDeltas:
    def test_joins_by_size(self) -> None:
        """Partials are joined until max_chars wait, then delivered as one."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=5, max_interval=None)
        _feed(
            handler, [("text", "ab"), ("text", "cd"), ("text", "ef")], StreamingHandle()
        )
        assert inner.log == [("text", "abcdef")]
        _feed(handler, [("text", "g")], StreamingHandle())
        assert inner.log == [("text", "abcdef")]

    def test_flushes_before_other_events(self) -> None:
        """Waiting text is delivered before any non-partial event."""
        for other in ("raw", "tool", "error", "complete"):
            inner = _Collector()
            handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
            _feed(
                handler, [("text", "a"), ("text", "b"), (other, "x")], StreamingHandle()
            )
            assert inner.log[0] == ("text", "ab"), other
            assert inner.log[1][0] == other

    def test_switches_between_text_and_thinking_in_order(self) -> None:
        """Thinking and text are never joined together and keep their order."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
        _feed(
            handler,
            [
                ("thinking", "hm"),
                ("thinking", "m"),
                ("text", "Hel"),
                ("text", "lo"),
                ("thinking", "!"),
                ("complete", ""),
            ],
            StreamingHandle(),
        )
        assert inner.log == [
            ("thinking", "hmm"),
            ("text", "Hello"),
            ("thinking", "!"),
            ("complete", ""),
        ]

    def test_streams_not_joined(self) -> None:
        """Partials of two streams (two handles) are never joined together."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
        first, second = StreamingHandle(), StreamingHandle()
        _feed(handler, [("text", "a")], first)
        _feed(handler, [("text", "b"), ("complete", "")], second)
        assert inner.log == [("text", "a"), ("text", "b"), ("complete", "")]
        assert inner.handles == [first, second]

    def test_interval_zero_delivers_each(self) -> None:
        """With max_interval=0 every partial is due at once."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=0)
        _feed(handler, [("text", "a"), ("text", "b")], StreamingHandle())
        assert inner.log == [("text", "a"), ("text", "b")]

    def test_explicit_flush(self) -> None:
        """flush() delivers what waits, and does nothing when nothing waits."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
        handler.flush()
        _feed(handler, [("text", "a")], StreamingHandle())
        handler.flush()
        assert inner.log == [("text", "a")]

    def test_cancelled_stream_text_dropped(self) -> None:
        """Text waiting when its stream is cancelled is never delivered."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
        cancelled = StreamingHandle()
        _feed(handler, [("text", "stale")], cancelled)
        cancelled.cancel()
        _feed(handler, [("text", "fresh"), ("complete", "")], StreamingHandle())
        assert inner.log == [("text", "fresh"), ("complete", "")]

    def test_cancel_on_flushed_text_stops_the_next_event(self) -> None:
        """When the handler cancels on text flushed before an event, that event
        (like anything after a cancel) is not delivered."""
        for following in ("tool", "complete", "thinking"):
            inner = _CancelsOn("STOP")
            handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
            handle = StreamingHandle()
            _feed(handler, [("text", "ST"), ("text", "OP"), (following, "x")], handle)
            assert handle.is_cancelled
            assert inner.log == [("text", "STOP")], following

    def test_event_after_earlier_cancel_delivered(self) -> None:
        """Text of a stream cancelled earlier is dropped, but the next event (of
        the next stream) is delivered."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
        cancelled = StreamingHandle()
        _feed(handler, [("text", "stale")], cancelled)
        cancelled.cancel()
        _feed(handler, [("complete", "")], StreamingHandle())
        assert inner.log == [("complete", "")]

    def test_partial_of_cancelled_stream_not_buffered(self) -> None:
        """A partial arriving for an already cancelled stream is dropped."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=1, max_interval=None)
        handle = StreamingHandle()
        handle.cancel()
        _feed(handler, [("text", "late")], handle)
        assert inner.log == []

    def test_threads_lose_no_text(self) -> None:
        """Partials fed from several threads at once all arrive, each exactly once."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=7, max_interval=0.0001)
        handle = StreamingHandle()
        words = [f"<{thread}:{i}>" for thread in range(4) for i in range(2000)]

        def feed(thread: int) -> None:
            _feed(
                handler,
                [("text", word) for word in words if word.startswith(f"<{thread}:")],
                handle,
            )

        threads = [threading.Thread(target=feed, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        handler.flush()
        delivered = "".join(text for _, text in inner.log)
        assert sorted(delivered.replace("<", " <").split()) == sorted(words)

    def test_no_partials_passes_events_through(self) -> None:
        """A handler without partial methods keeps exactly its own events."""
        inner = SyncStream()
        handler = CoalescingDeltas(inner)
        assert overridden_events(handler) == {"on_error"}

    def test_takes_every_event_when_buffering(self) -> None:
        """A buffering wrapper takes every event, so each can flush first."""
        handler = CoalescingDeltas(_Collector())
        assert overridden_events(handler) == set(
            StreamingChatResponseHandler._langhooks_events
        )

    def test_validation(self) -> None:
        """Bad arguments fail with a message naming them."""
        with pytest.raises(ValueError, match="max_chars must be an int >= 1"):
            CoalescingDeltas(_Collector(), max_chars=0)
        with pytest.raises(ValueError, match="max_interval must be >= 0 or None"):
            CoalescingDeltas(_Collector(), max_interval=-1)
        with pytest.raises(TypeError, match="wraps a streaming handler"):
            CoalescingDeltas(SyncChain())  # type: ignore[call-overload]

    def test_flush_kind_checked(self) -> None:
        """flush() exists only around sync handlers and aflush() around async ones."""
        with pytest.raises(AttributeError, match="flush"):
            CoalescingDeltas(_AsyncCollector()).flush()  # type: ignore[attr-defined]
        with pytest.raises(AttributeError, match="aflush"):
            CoalescingDeltas(_Collector()).aflush()  # type: ignore[attr-defined]

    @settings(max_examples=200, deadline=None)
    @given(
        events=st.lists(
            st.one_of(
                st.tuples(st.sampled_from(["text", "thinking"]), st.text(min_size=1)),
                st.tuples(st.sampled_from(["raw", "tool"]), st.just("x")),
            ),
            max_size=40,
        ),
        max_chars=st.integers(min_value=1, max_value=20),
    )
    def test_never_loses_text_or_order(
        self, events: list[Delivered], max_chars: int
    ) -> None:
        """All text arrives, in order, with every other event in its place."""
        inner = _Collector()
        handler = CoalescingDeltas(inner, max_chars=max_chars, max_interval=None)
        stream = [*events, ("complete", "")]
        _feed(handler, stream, StreamingHandle())
        assert _merged(inner.log) == _merged(stream)
        for kind, payload in inner.log:
            if kind in ("text", "thinking"):
                assert payload

    @settings(max_examples=50, deadline=None)
    @given(
        events=st.lists(
            st.one_of(
                st.tuples(st.sampled_from(["text", "thinking"]), st.text(min_size=1)),
                st.tuples(st.just("raw"), st.just("x")),
            ),
            max_size=20,
        ),
        max_chars=st.integers(min_value=1, max_value=10),
    )
    def test_async_never_loses_text_or_order(
        self, events: list[Delivered], max_chars: int
    ) -> None:
        """The async wrapper keeps every text and the order of all events."""
        inner = _AsyncCollector()
        handler = CoalescingDeltas(inner, max_chars=max_chars, max_interval=None)
        stream = [*events, ("complete", "")]
        asyncio.run(_afeed(handler, stream, StreamingHandle()))
        assert _merged(inner.log) == _merged(stream)

    async def test_async_flush_and_cancel(self) -> None:
        """aflush delivers waiting text; text of a cancelled stream is dropped."""
        inner = _AsyncCollector()
        handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
        await handler.aflush()
        await _afeed(handler, [("thinking", "t")], StreamingHandle())
        await handler.aflush()
        cancelled = StreamingHandle()
        await _afeed(handler, [("text", "stale")], cancelled)
        cancelled.cancel()
        await _afeed(handler, [("raw", "x")], StreamingHandle())
        await _afeed(handler, [("text", "stale")], cancelled)
        cancelled_again = StreamingHandle()
        await _afeed(handler, [("text", "stale")], cancelled_again)
        cancelled_again.cancel()
        await _afeed(handler, [("text", "new"), ("complete", "")], StreamingHandle())
        assert inner.log == [
            ("thinking", "t"),
            ("raw", "x"),
            ("text", "new"),
            ("complete", ""),
        ]

    async def test_async_cancel_on_flushed_text(self) -> None:
        """The async wrapper also delivers nothing after a cancel on flushed text."""

        class CancelsOnStop(_AsyncCollector):
            @override
            async def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                await super().on_partial_response(partial, context)
                context.handle.cancel()

        for following in ("raw", "thinking"):
            inner = CancelsOnStop()
            handler = CoalescingDeltas(inner, max_chars=100, max_interval=None)
            await _afeed(
                handler,
                [("text", "a"), ("text", "b"), (following, "x")],
                StreamingHandle(),
            )
            assert inner.log == [("text", "ab")]

    async def test_inside_async_composite(self) -> None:
        """A coalesced async handler composes into an async composite."""
        inner = _AsyncCollector()
        composite = AsyncCompositeStreamingHandler(
            [CoalescingDeltas(inner, max_chars=100, max_interval=None)]
        )
        await _afeed(
            composite,
            [("text", "a"), ("text", "b"), ("complete", "")],
            StreamingHandle(),
        )
        assert inner.log == [("text", "ab"), ("complete", "")]


def test_wrappers_are_handlers() -> None:
    """Every wrapper is a HandlerBase, so it can be wrapped and composed again."""
    inner = SyncStream()
    for wrapped in (
        HandlerWithoutInvocation(inner),
        isolate(inner),
        Synchronized(inner),
        filtered(inner, events=["on_error"]),
        CoalescingDeltas(inner),
    ):
        assert isinstance(wrapped, HandlerBase)
        assert isinstance(wrapped, StreamingChatResponseHandler)


class _Stateful(StreamingChatResponseHandler):
    def __init__(self) -> None:
        self.errors = 0

    def summary(self) -> str:
        return f"{self.errors} errors"

    @override
    def on_error(self, error: BaseException) -> None:
        self.errors += 1


class TestAttributeReads:
    def test_state_and_helpers_read_through(self) -> None:
        """A wrapper typed as the handler's class reads its state and helpers."""
        inner = _Stateful()
        for wrapped in (
            HandlerWithoutInvocation.wrap(inner),
            isolate(inner),
            filtered(inner, events=["on_error"]),
        ):
            wrapped.on_error(ERROR)
            assert wrapped.errors == inner.errors
            assert wrapped.summary() == inner.summary()
        assert inner.errors == 3

    def test_missing_attribute_still_an_error(self) -> None:
        """An attribute neither has is an AttributeError."""
        wrapped: Any = isolate(_Stateful())
        with pytest.raises(AttributeError, match="missing"):
            wrapped.missing  # noqa: B018

    def test_dunder_and_private_names_not_forwarded(self) -> None:
        """Protocol probes (dunders) and langhooks internals are not forwarded."""
        inner = _Stateful()
        inner.__wrapped__ = "inner only"  # type: ignore[attr-defined]
        wrapped = isolate(inner)
        assert not hasattr(wrapped, "__wrapped__")
        assert not hasattr(wrapped, "_langhooks_missing")

    def test_events_not_forwarded(self) -> None:
        """Events the handler does not override stay the wrapper's free no-op."""
        wrapped = HandlerWithoutInvocation(_Stateful())
        assert "on_complete_response" not in vars(wrapped)
        wrapped.on_complete_response(RESPONSE)


def test_handler_of_two_interfaces() -> None:
    """A handler implementing a streaming and a chain interface is wrapped for both
    shapes of an event they share."""
    seen: list[tuple[int, Invocation | None]] = []

    class Both(StreamingChatResponseHandler, ChainCallbackHandler):
        @override
        def on_error(self, *args: Any) -> None:
            seen.append((len(args), current_invocation()))

    wrapped: Any = HandlerWithoutInvocation(Both())
    mro = type(wrapped).__mro__
    assert StreamingChatResponseHandler in mro
    assert ChainCallbackHandler in mro
    with invocation("run"):
        wrapped.on_error(ERROR)
        wrapped.on_error(CHAIN, ERROR)
    assert seen == [(1, None), (2, None)]


class _Counter(StreamingChatResponseHandler):
    label = "counter"

    def __init__(self) -> None:
        self.chars = 0

    def bump(self, n: int) -> int:
        self.chars += n
        return self.chars

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.chars += len(partial.text)


class TestWrappersAreWhatTheirTypeSays:
    WRAPPERS: ClassVar[list[Callable[[_Counter], _Counter]]] = [
        HandlerWithoutInvocation.wrap,
        Synchronized.wrap,
        isolate,
        lambda h: filtered(h, events=["on_partial_response"]),
    ]

    @pytest.mark.parametrize("wrap", WRAPPERS)
    def test_instance_of_the_handler_class(
        self, wrap: Callable[[_Counter], _Counter]
    ) -> None:
        """A wrapper typed as the handler's class is an instance of it."""
        assert isinstance(wrap(_Counter()), _Counter)

    @pytest.mark.parametrize("wrap", WRAPPERS)
    def test_attributes_read_and_written_on_the_handler(
        self, wrap: Callable[[_Counter], _Counter]
    ) -> None:
        """State read, written or changed by a method through the wrapper is the
        handler's own; the handler's events still reach it."""
        inner = _Counter()
        wrapper = wrap(inner)
        wrapper.chars += 5
        assert inner.chars == 5
        assert wrapper.bump(2) == 7
        wrapper.on_partial_response(
            PartialResponse(text="abc"),
            PartialResponseContext(handle=StreamingHandle()),
        )
        assert (inner.chars, wrapper.chars, wrapper.label) == (10, 10, "counter")
        wrapper.extra = 1  # type: ignore[attr-defined]
        assert inner.extra == 1  # type: ignore[attr-defined]
        del wrapper.extra  # type: ignore[attr-defined]
        assert not hasattr(inner, "extra")
        assert "_langhooks_inner" not in vars(inner)
        assert "chars" not in vars(wrapper)

    def test_a_filtered_out_override_is_not_called(self) -> None:
        """An event filtered out is the interface's no-op, not the class's method."""
        inner = _Counter()
        wrapper = filtered(inner, events=["on_error"])
        wrapper.on_partial_response(
            PartialResponse(text="abc"),
            PartialResponseContext(handle=StreamingHandle()),
        )
        assert inner.chars == 0

    def test_a_wrapped_wrapper_is_an_instance_of_the_handler_class(self) -> None:
        """Wrapping a wrapper again keeps the handler's class, not the wrapper's."""
        wrapper = isolate(HandlerWithoutInvocation.wrap(_Counter()))
        assert isinstance(wrapper, _Counter)
        wrapper.chars = 3
        assert wrapper.wrapped.wrapped.chars == 3  # type: ignore[attr-defined]

    def test_a_wrapped_composite_adds_to_the_composite(self) -> None:
        """A composite's own API (add, handlers) works through a wrapper."""
        composite = CompositeStreamingHandler([])
        wrapper = isolate(composite)
        counter = _Counter()
        wrapper.add(counter)
        assert composite.handlers == (counter,)

    def test_wrapper_equality_is_identity(self) -> None:
        """A wrapper equals itself only, and is hashable."""
        inner = _Counter()
        wrapper = isolate(inner)
        assert wrapper == wrapper
        assert wrapper != inner
        assert len({wrapper, wrapper}) == 1

    @pytest.mark.parametrize("wrap", [HandlerWithoutInvocation.wrap, Synchronized.wrap])
    def test_a_two_interface_handler_goes_in_either_composite(
        self, wrap: Callable[[NotifyingHandler], NotifyingHandler]
    ) -> None:
        """A handler of two interfaces, wrapped, goes in the composite of each."""
        notifying = wrap(NotifyingHandler())
        CompositeStreamingHandler([notifying])
        CompositeChainHandler([notifying])
        assert isinstance(notifying, NotifyingHandler)


class TestCoalescingDeltasSharedByStreams:
    """One async CoalescingDeltas shared by concurrent streams keeps them apart."""

    async def test_concurrent_streams_are_never_joined(self) -> None:
        """Each delivered partial holds the text of one stream, with its handle."""

        class Log(AsyncStreamingChatResponseHandler):
            def __init__(self) -> None:
                self.delivered: list[tuple[str, StreamingHandle]] = []

            @override
            async def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                await asyncio.sleep(0)  # another stream's task runs meanwhile
                self.delivered.append((partial.text, context.handle))

        inner = Log()
        handler = CoalescingDeltas(inner, max_chars=7, max_interval=None)
        handles = {"a": StreamingHandle(), "b": StreamingHandle()}

        async def stream(name: str) -> None:
            for i in range(200):
                await handler.on_partial_response(
                    PartialResponse(text=f"{name}{i} "),
                    PartialResponseContext(handle=handles[name]),
                )
                await asyncio.sleep(0)  # as a stream awaits its next bytes
                if i % 7 == 0:
                    await handler.on_unmapped_raw_event(name)
            await handler.aflush()

        await asyncio.gather(stream("a"), stream("b"))
        await handler.aflush()
        for name, handle in handles.items():
            mine = [text for text, h in inner.delivered if h is handle]
            words = "".join(mine).split()
            assert words == [f"{name}{i}" for i in range(200)]
        for text, handle in inner.delivered:
            name = "a" if handle is handles["a"] else "b"
            assert all(word.startswith(name) for word in text.split())

"""Composites: one handler that calls every registered handler."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import override

from langhooks import (
    Allow,
    AsyncChainCallbackHandler,
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    ChatResponse,
    CompositeChainHandler,
    CompositeStreamingHandler,
    Deny,
    HandlerWithoutInvocation,
    Interrupt,
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
    UpdateArguments,
    isolate,
)
from langhooks._core._handler import overridden_events

CHAIN: Any = object()  # chain events carry a snapshot; these tests never read it
HANDLE = StreamingHandle()
RESPONSE = ChatResponse(message=Message.assistant("done"))
STREAM_EVENTS = sorted(
    n for n in vars(StreamingChatResponseHandler) if n.startswith("on_")
)


def _echo(arguments: Mapping[str, Any], context: ToolContext) -> str:
    return "ok"


TOOL = Tool("echo", _echo)
CALL = ToolCall(call_id="c1", name="echo", arguments={"n": 0})
REVIEW = ReviewContext()


def _partial(text: str) -> tuple[PartialResponse, PartialResponseContext]:
    return PartialResponse(text=text), PartialResponseContext(handle=HANDLE)


class Recorder(StreamingChatResponseHandler):
    """Records text partials and terminal calls into a shared log."""

    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        self.name = name
        self.log = log

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        self.log.append((self.name, partial.text))

    @override
    def on_complete_response(self, response: ChatResponse) -> None:
        self.log.append((self.name, "complete"))


class ErrorsOnly(StreamingChatResponseHandler):
    """Overrides only on_error."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    @override
    def on_error(self, error: BaseException) -> None:
        self.log.append("error")


def _record_all(log: list[tuple[str, str]], name: str) -> Any:
    """A method body that records any event it receives."""

    def method(self: Any, *args: Any) -> None:
        log.append((self.name, name))

    return method


def _recording_class(events: frozenset[str]) -> type[StreamingChatResponseHandler]:
    """A handler class overriding exactly ``events``, recording into self.log."""

    def make(name: str) -> Any:
        def method(self: Any, *args: Any) -> None:
            self.log.append((self.name, name, args))

        return method

    return type(
        "Generated",
        (StreamingChatResponseHandler,),
        {name: make(name) for name in events},
    )


class _Reviewer(ChainCallbackHandler):
    """Returns a fixed decision and records the arguments it saw."""

    def __init__(self, decision: object, seen: list[object]) -> None:
        self.decision = decision
        self.seen = seen

    @override
    def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        self.seen.append(dict(call.arguments))
        return self.decision  # type: ignore[return-value]  # tests pass bad values


class _AsyncReviewer(AsyncChainCallbackHandler):
    """The async twin of _Reviewer."""

    def __init__(self, decision: object, seen: list[object]) -> None:
        self.decision = decision
        self.seen = seen

    @override
    async def on_tool_call_review(
        self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        await asyncio.sleep(0)
        self.seen.append(dict(call.arguments))
        return self.decision  # type: ignore[return-value]  # tests pass bad values


def _increment(by: int) -> UpdateArguments:
    return UpdateArguments({"n": by})


class TestRegistration:
    def test_calls_in_registration_order(self) -> None:
        """Every handler is called, in registration order, for every event."""
        log: list[tuple[str, str]] = []
        composite = CompositeStreamingHandler([Recorder("a", log), Recorder("b", log)])
        composite.add(Recorder("c", log))
        composite.on_partial_response(*_partial("x"))
        composite.on_complete_response(RESPONSE)
        assert log == [
            ("a", "x"),
            ("b", "x"),
            ("c", "x"),
            ("a", "complete"),
            ("b", "complete"),
            ("c", "complete"),
        ]

    def test_handlers_property(self) -> None:
        """handlers lists the registered handlers in calling order."""
        log: list[tuple[str, str]] = []
        a, b = Recorder("a", log), Recorder("b", log)
        composite = CompositeStreamingHandler([a])
        composite.add(b)
        assert composite.handlers == (a, b)
        assert "Recorder" in repr(composite)

    def test_remove(self) -> None:
        """A removed handler is no longer called; the others keep their order."""
        log: list[tuple[str, str]] = []
        a, b, c = Recorder("a", log), Recorder("b", log), Recorder("c", log)
        composite = CompositeStreamingHandler([a, b, c])
        composite.remove(b)
        composite.on_partial_response(*_partial("x"))
        assert log == [("a", "x"), ("c", "x")]
        assert composite.handlers == (a, c)

    def test_remove_unknown_rejected(self) -> None:
        """Removing a handler that is not registered is a ValueError."""
        composite = CompositeStreamingHandler([])
        with pytest.raises(ValueError, match="is not registered"):
            composite.remove(Recorder("a", []))

    def test_empty_composite_accepts_events(self) -> None:
        """A composite with no handlers takes every event and does nothing."""
        composite = CompositeStreamingHandler([])
        composite.on_partial_response(*_partial("x"))
        composite.on_error(LangHooksError("timeout", "t"))

    def test_duplicate_rejected(self) -> None:
        """The same handler instance cannot be registered twice."""
        handler = Recorder("a", [])
        composite = CompositeStreamingHandler([handler])
        with pytest.raises(ValueError, match="already registered"):
            composite.add(handler)
        with pytest.raises(ValueError, match="already registered"):
            CompositeStreamingHandler([handler, handler])

    def test_self_rejected(self) -> None:
        """A composite cannot contain itself."""
        composite = CompositeStreamingHandler([])
        with pytest.raises(ValueError, match="cannot contain itself"):
            composite.add(composite)

    def test_cycle_through_composite_rejected(self) -> None:
        """A composite cannot contain a composite (or wrapper) that contains it."""
        outer = CompositeChainHandler([])
        inner = CompositeChainHandler([outer])
        with pytest.raises(ValueError, match="cannot contain itself"):
            outer.add(inner)
        with pytest.raises(ValueError, match="cannot contain itself"):
            outer.add(isolate(HandlerWithoutInvocation(inner)))

    def test_wrong_interface_rejected(self) -> None:
        """A handler of another interface is a TypeError naming the accepted one."""
        composite = CompositeStreamingHandler([])
        with pytest.raises(
            TypeError, match="takes StreamingChatResponseHandler instances"
        ):
            composite.add(ChainCallbackHandler())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="StreamingChatResponseHandler"):
            CompositeStreamingHandler([object()])  # type: ignore[list-item]

    def test_async_handler_in_sync_composite_hint(self) -> None:
        """An async handler in a sync composite points to the async composite."""
        with pytest.raises(
            TypeError, match="an async handler needs AsyncCompositeStreamingHandler"
        ):
            CompositeStreamingHandler([AsyncStreamingChatResponseHandler()])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="AsyncCompositeChainHandler"):
            CompositeChainHandler([AsyncChainCallbackHandler()])  # type: ignore[list-item]

    def test_wrong_interface_hint_names_the_composite_that_takes_it(self) -> None:
        """The hint for a handler of another interface names a composite that
        exists and accepts it."""
        cases: list[tuple[Any, Any, str]] = [
            (
                AsyncCompositeStreamingHandler,
                AsyncChainCallbackHandler(),
                "an async handler needs AsyncCompositeChainHandler",
            ),
            (
                CompositeStreamingHandler,
                AsyncChainCallbackHandler(),
                "an async handler needs AsyncCompositeChainHandler",
            ),
            (
                CompositeChainHandler,
                StreamingChatResponseHandler(),
                "a StreamingChatResponseHandler needs CompositeStreamingHandler",
            ),
            (
                AsyncCompositeChainHandler,
                AsyncStreamingChatResponseHandler(),
                "an async handler needs AsyncCompositeStreamingHandler",
            ),
        ]
        for composite, handler, hint in cases:
            with pytest.raises(TypeError) as caught:
                composite([handler])
            assert f"({hint})" in str(caught.value)

    def test_unknown_error_policy_rejected(self) -> None:
        """errors must be 'raise' or 'log'."""
        with pytest.raises(ValueError, match="errors must be 'raise' or 'log'"):
            CompositeStreamingHandler([], errors="ignore")  # type: ignore[arg-type]

    def test_composite_is_a_handler(self) -> None:
        """A composite is an instance of its interface and handles every event."""
        composite = CompositeStreamingHandler([])
        assert isinstance(composite, StreamingChatResponseHandler)
        assert overridden_events(composite) == frozenset(STREAM_EVENTS)


class TestCost:
    def test_not_overridden_never_called(self) -> None:
        """A handler is never called for an event it does not override."""
        log: list[tuple[str, str]] = []

        class Everything(StreamingChatResponseHandler):
            """Defines every event, but reports only on_partial_response."""

            name = "everything"

            @override
            def _langhooks_overridden_events(self) -> frozenset[str]:
                return frozenset({"on_partial_response"})

        for name in STREAM_EVENTS:
            setattr(Everything, name, _record_all(log, name))
        composite = CompositeStreamingHandler([Everything()])
        composite.on_partial_response(*_partial("x"))
        composite.on_complete_response(RESPONSE)
        composite.on_error(LangHooksError("timeout", "t"))
        composite.on_unmapped_raw_event({})
        assert log == [("everything", "on_partial_response")]

    def test_base_no_op_never_reached(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The inherited no-op of a non-overridden event is not even called."""
        reached: list[str] = []
        errors: list[str] = []
        handler = ErrorsOnly(errors)
        composite = CompositeStreamingHandler([handler])
        monkeypatch.setattr(
            StreamingChatResponseHandler,
            "on_complete_response",
            lambda self, response: reached.append("complete"),
        )
        composite.on_complete_response(RESPONSE)
        composite.on_error(LangHooksError("timeout", "t"))
        assert (reached, errors) == ([], ["error"])

    def test_overrides_reported_per_handler(self) -> None:
        """overridden_events names exactly the methods the class defines."""
        assert overridden_events(ErrorsOnly([])) == {"on_error"}
        assert overridden_events(Recorder("a", [])) == {
            "on_partial_response",
            "on_complete_response",
        }


class TestNesting:
    def test_nested_composite_sees_later_additions(self) -> None:
        """A handler added to an inner composite later is called through the outer."""
        log: list[tuple[str, str]] = []
        inner = CompositeStreamingHandler([Recorder("a", log)])
        outer = CompositeStreamingHandler([inner, Recorder("z", log)])
        inner.add(Recorder("b", log))
        outer.on_partial_response(*_partial("x"))
        assert log == [("a", "x"), ("b", "x"), ("z", "x")]

    def test_nested_composite_sees_removals(self) -> None:
        """A handler removed from an inner composite is no longer called."""
        log: list[tuple[str, str]] = []
        a = Recorder("a", log)
        inner = CompositeStreamingHandler([a])
        outer = CompositeStreamingHandler([inner])
        inner.remove(a)
        outer.on_partial_response(*_partial("x"))
        assert log == []

    def test_wrapped_nested_composite_sees_additions(self) -> None:
        """A wrapped inner composite also sees handlers added after wrapping."""
        log: list[tuple[str, str]] = []
        inner = CompositeStreamingHandler([])
        outer = CompositeStreamingHandler([HandlerWithoutInvocation(inner)])
        inner.add(Recorder("late", log))
        outer.on_partial_response(*_partial("x"))
        assert log == [("late", "x")]


class TestReviewFold:
    def test_no_reviewers_allows(self) -> None:
        """With no reviewer the composite allows the call."""
        composite = CompositeChainHandler([ChainCallbackHandler()])
        assert composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Allow()

    def test_none_and_allow_allow(self) -> None:
        """None and Allow() from every reviewer give Allow()."""
        seen: list[object] = []
        composite = CompositeChainHandler(
            [_Reviewer(None, seen), _Reviewer(Allow(), seen)]
        )
        assert composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Allow()
        assert seen == [{"n": 0}, {"n": 0}]

    def test_rewrites_threaded_forward(self) -> None:
        """Each reviewer sees the arguments as rewritten by those before it."""
        seen: list[object] = []
        composite = CompositeChainHandler(
            [
                _Reviewer(_increment(1), seen),
                _Reviewer(None, seen),
                _Reviewer(_increment(2), seen),
                _Reviewer(Allow(), seen),
            ]
        )
        decision = composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        assert decision == UpdateArguments({"n": 2})
        assert seen == [{"n": 0}, {"n": 1}, {"n": 1}, {"n": 2}]

    @pytest.mark.parametrize("settling", [Deny("no"), Interrupt("ask", data={"a": 1})])
    def test_first_deny_or_interrupt_settles(self, settling: object) -> None:
        """The first Deny or Interrupt is the result; later reviewers are not asked."""
        seen: list[object] = []
        later: list[object] = []
        composite = CompositeChainHandler(
            [
                _Reviewer(_increment(5), seen),
                _Reviewer(settling, seen),
                _Reviewer(Deny("second"), later),
            ]
        )
        assert composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) is settling
        assert seen == [{"n": 0}, {"n": 5}]
        assert later == []

    def test_bad_return_value_names_handler(self) -> None:
        """A reviewer returning anything else is a TypeError naming it."""
        composite = CompositeChainHandler([_Reviewer(True, [])])
        with pytest.raises(TypeError, match=r"_Reviewer.*returned True: return None"):
            composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)

    def test_exception_propagates(self) -> None:
        """A reviewer's exception propagates and later reviewers are not asked."""

        class Broken(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                raise RuntimeError("policy store down")

        later: list[object] = []
        composite = CompositeChainHandler([Broken(), _Reviewer(None, later)])
        with pytest.raises(RuntimeError, match="policy store down"):
            composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        assert later == []

    def test_logged_review_failure_denies(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """With errors='log' a failing reviewer is logged and settles as Deny."""

        class Broken(ChainCallbackHandler):
            @override
            def on_tool_call_review(
                self, chain: Any, call: ToolCall, tool: Tool, review: ReviewContext
            ) -> ReviewDecision | None:
                raise RuntimeError("policy store down")

        composite = CompositeChainHandler([Broken()], errors="log")
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            decision = composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        assert isinstance(decision, Deny)
        assert "policy store down" in caplog.text

    async def test_async_fold(self) -> None:
        """The async composite folds async and sync reviewers in order."""
        seen: list[object] = []
        composite = AsyncCompositeChainHandler(
            [
                _AsyncReviewer(_increment(1), seen),
                _Reviewer(_increment(2), seen),
                _AsyncReviewer(None, seen),
            ]
        )
        decision = await composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)
        assert decision == UpdateArguments({"n": 2})
        assert seen == [{"n": 0}, {"n": 1}, {"n": 2}]

    async def test_async_first_deny_settles(self) -> None:
        """In the async fold too, the first Deny settles and later ones are skipped."""
        later: list[object] = []
        composite = AsyncCompositeChainHandler(
            [_AsyncReviewer(Deny("no"), []), _AsyncReviewer(None, later)]
        )
        assert await composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Deny(
            "no"
        )
        assert later == []

    async def test_async_no_reviewers_allows(self) -> None:
        """The async composite with no reviewer allows."""
        composite = AsyncCompositeChainHandler([])
        assert await composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW) == Allow()

    async def test_async_bad_return_value(self) -> None:
        """A bad async review result is a TypeError naming the handler."""
        composite = AsyncCompositeChainHandler([_AsyncReviewer("yes", [])])
        with pytest.raises(TypeError, match="_AsyncReviewer"):
            await composite.on_tool_call_review(CHAIN, CALL, TOOL, REVIEW)


class _Raising(StreamingChatResponseHandler):
    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        raise ValueError(f"cannot handle {partial.text!r}")


class TestErrors:
    def test_exception_propagates_by_default(self) -> None:
        """By default a handler's exception propagates; later handlers miss it."""
        log: list[tuple[str, str]] = []
        composite = CompositeStreamingHandler([_Raising(), Recorder("after", log)])
        with pytest.raises(ValueError, match="cannot handle 'x'"):
            composite.on_partial_response(*_partial("x"))
        assert log == []

    def test_log_policy_logs_and_carries_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """errors='log' logs the exception with its traceback and goes on."""
        log: list[tuple[str, str]] = []
        composite = CompositeStreamingHandler(
            [_Raising(), Recorder("after", log)], errors="log"
        )
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            composite.on_partial_response(*_partial("x"))
        assert log == [("after", "x")]
        (record,) = caplog.records
        assert record.name == "langhooks"
        assert record.exc_info is not None
        assert record.exc_info[0] is ValueError
        assert "on_partial_response" in record.getMessage()

    def test_log_policy_keeps_originals_registered(self) -> None:
        """With errors='log' handlers lists and removes the originals."""
        handler = _Raising()
        composite = CompositeStreamingHandler([handler], errors="log")
        assert composite.handlers == (handler,)
        composite.remove(handler)
        assert not composite.handlers

    def test_base_exception_not_swallowed(self) -> None:
        """errors='log' isolates Exceptions only: KeyboardInterrupt propagates."""

        class Interrupted(StreamingChatResponseHandler):
            @override
            def on_error(self, error: BaseException) -> None:
                raise KeyboardInterrupt

        composite = CompositeStreamingHandler([Interrupted()], errors="log")
        with pytest.raises(KeyboardInterrupt):
            composite.on_error(LangHooksError("timeout", "t"))


class TestAsyncComposites:
    async def test_awaits_in_order_and_calls_sync_inline(self) -> None:
        """Async handlers are awaited in turn; sync ones are called inline in order."""
        log: list[str] = []

        class Slow(AsyncStreamingChatResponseHandler):
            def __init__(self, name: str) -> None:
                self.name = name

            @override
            async def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                log.append(f"{self.name} start")
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                log.append(f"{self.name} end")

        class Sync(StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                log.append("sync")

        composite = AsyncCompositeStreamingHandler([Slow("a"), Sync(), Slow("b")])
        await composite.on_partial_response(*_partial("x"))
        assert log == ["a start", "a end", "sync", "b start", "b end"]

    async def test_single_sync_handler(self) -> None:
        """A lone sync handler in an async composite is still awaitable."""
        log: list[tuple[str, str]] = []
        composite = AsyncCompositeStreamingHandler([Recorder("s", log)])
        await composite.on_partial_response(*_partial("x"))
        await composite.on_error(LangHooksError("timeout", "t"))
        assert log == [("s", "x")]

    async def test_async_log_policy(self, caplog: pytest.LogCaptureFixture) -> None:
        """errors='log' on an async composite logs an async handler's exception."""

        class Failing(AsyncStreamingChatResponseHandler):
            @override
            async def on_complete_response(self, response: ChatResponse) -> None:
                raise RuntimeError("disk full")

        log: list[tuple[str, str]] = []
        composite = AsyncCompositeStreamingHandler(
            [Failing(), Recorder("after", log)], errors="log"
        )
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            await composite.on_complete_response(RESPONSE)
        assert log == [("after", "complete")]
        assert "disk full" in caplog.text

    async def test_async_exception_propagates(self) -> None:
        """By default an async handler's exception propagates from the await."""

        class Failing(AsyncStreamingChatResponseHandler):
            @override
            async def on_complete_response(self, response: ChatResponse) -> None:
                raise RuntimeError("disk full")

        composite = AsyncCompositeStreamingHandler([Failing()])
        with pytest.raises(RuntimeError, match="disk full"):
            await composite.on_complete_response(RESPONSE)


_EVENT_ARGS: dict[str, tuple[Any, ...]] = {
    "on_partial_response": _partial("t"),
    "on_complete_response": (RESPONSE,),
    "on_error": (LangHooksError("timeout", "t"),),
    "on_unmapped_raw_event": ({"type": "ping"},),
}


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(
        handler_events=st.lists(
            st.frozensets(st.sampled_from(sorted(_EVENT_ARGS))), max_size=6
        ),
        sequence=st.lists(st.sampled_from(sorted(_EVENT_ARGS)), max_size=30),
        nested=st.booleans(),
    )
    def test_each_handler_gets_exactly_its_events(
        self,
        handler_events: list[frozenset[str]],
        sequence: list[str],
        nested: bool,
    ) -> None:
        """Every handler receives exactly its overridden events, in order, once."""
        log: list[tuple[str, str, tuple[Any, ...]]] = []
        handlers = []
        for i, events in enumerate(handler_events):
            handler = _recording_class(events)()
            handler.name = f"h{i}"  # type: ignore[attr-defined]
            handler.log = log  # type: ignore[attr-defined]
            handlers.append(handler)
        composite = CompositeStreamingHandler(handlers)
        target: StreamingChatResponseHandler = composite
        if nested:
            target = CompositeStreamingHandler([composite])
        for name in sequence:
            getattr(target, name)(*_EVENT_ARGS[name])
        expected = [
            (f"h{i}", name, _EVENT_ARGS[name])
            for name in sequence
            for i, events in enumerate(handler_events)
            if name in events
        ]
        assert log == expected


def _async_recording_class(
    events: frozenset[str],
) -> type[AsyncStreamingChatResponseHandler]:
    """An async handler class overriding exactly ``events``, recording to self.log."""

    def make(name: str) -> Any:
        async def method(self: Any, *args: Any) -> None:
            await asyncio.sleep(0)
            self.log.append((self.name, name, args))

        return method

    return type(
        "AsyncGenerated",
        (AsyncStreamingChatResponseHandler,),
        {name: make(name) for name in events},
    )


class TestAsyncProperties:
    @settings(max_examples=60, deadline=None)
    @given(
        handler_events=st.lists(
            st.tuples(
                st.booleans(), st.frozensets(st.sampled_from(sorted(_EVENT_ARGS)))
            ),
            max_size=5,
        ),
        sequence=st.lists(st.sampled_from(sorted(_EVENT_ARGS)), max_size=20),
    )
    def test_each_handler_gets_exactly_its_events(
        self, handler_events: list[tuple[bool, frozenset[str]]], sequence: list[str]
    ) -> None:
        """In an async composite mixing sync and async handlers, every handler
        receives exactly its overridden events, in order, once."""
        log: list[tuple[str, str, tuple[Any, ...]]] = []
        handlers: list[Any] = []
        for i, (is_async, events) in enumerate(handler_events):
            make = _async_recording_class if is_async else _recording_class
            handler: Any = make(events)()
            handler.name = f"h{i}"
            handler.log = log
            handlers.append(handler)
        composite = AsyncCompositeStreamingHandler(handlers)

        async def drive() -> None:
            for name in sequence:
                await getattr(composite, name)(*_EVENT_ARGS[name])

        asyncio.run(drive())
        assert log == [
            (f"h{i}", name, _EVENT_ARGS[name])
            for name in sequence
            for i, (_, events) in enumerate(handler_events)
            if name in events
        ]


class TestThreads:
    def test_concurrent_dispatch_while_registering(self) -> None:
        """4 threads dispatch through a composite while another adds and removes
        handlers: handlers registered throughout miss nothing."""
        per_thread = 3000
        counts = {"a": 0, "b": 0}
        lock = threading.Lock()

        class Counter(StreamingChatResponseHandler):
            def __init__(self, key: str) -> None:
                self.key = key

            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                with lock:
                    counts[self.key] += 1

        composite = CompositeStreamingHandler([Counter("a"), Counter("b")])
        stop = threading.Event()

        def churn() -> None:
            while not stop.is_set():
                transient = Counter("transient")
                counts.setdefault("transient", 0)
                composite.add(transient)
                composite.remove(transient)

        def dispatch() -> None:
            args = _partial("x")
            for _ in range(per_thread):
                composite.on_partial_response(*args)

        churner = threading.Thread(target=churn)
        churner.start()
        workers = [threading.Thread(target=dispatch) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        stop.set()
        churner.join()
        assert counts["a"] == counts["b"] == 4 * per_thread
        assert len(composite.handlers) == 2

    def test_registration_is_seen_whole_by_a_concurrent_dispatch(self) -> None:
        """A dispatch that runs while add() rebuilds sees every event's fan-out from
        before the add, or every one from after it, never a mix of both."""
        seen: list[str] = []
        composite = CompositeStreamingHandler()

        class Probe(StreamingChatResponseHandler):
            """Dispatches through the composite while add() binds its methods."""

            armed = True

            @override
            def __getattribute__(self, name: str) -> Any:
                if name == "on_complete_response" and Probe.armed:
                    Probe.armed = False
                    composite.on_partial_response(*_partial("mid-add"))
                    composite.on_complete_response(RESPONSE)
                return super().__getattribute__(name)

            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                seen.append("partial")

            @override
            def on_complete_response(self, response: ChatResponse) -> None:
                seen.append("complete")

        composite.add(Probe())
        assert not Probe.armed
        assert seen in ([], ["partial", "complete"])

"""Streaming handlers, their contexts and the cancel handle."""

from __future__ import annotations

import functools
import inspect
import logging
import threading

import pytest
from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    CompleteToolCall,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    PartialToolCall,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
)

EVENTS = [
    "on_complete_response",
    "on_complete_tool_call",
    "on_error",
    "on_partial_response",
    "on_partial_thinking",
    "on_partial_tool_call",
    "on_unmapped_raw_event",
]


def _cancel_concurrently(*, threads: int, callbacks: int) -> list[int]:
    """Cancel one handle from ``threads`` threads at once; the callbacks that ran."""
    handle = StreamingHandle()
    calls: list[int] = []
    lock = threading.Lock()

    def record(i: int) -> None:
        with lock:
            calls.append(i)

    for i in range(callbacks):
        handle.add_cancel_callback(functools.partial(record, i))
    barrier = threading.Barrier(threads)

    def cancel() -> None:
        barrier.wait()
        handle.cancel()

    workers = [threading.Thread(target=cancel) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return calls


class TestStreamingHandle:
    def test_starts_not_cancelled(self) -> None:
        """A new handle is not cancelled."""
        assert not StreamingHandle().is_cancelled

    def test_non_callable_cancel_callback_rejected(self) -> None:
        """A cancel callback that cannot be called fails when it is added, not
        later as a logged error while the connection stays open."""
        handle = StreamingHandle()
        with pytest.raises(TypeError, match="add_cancel_callback takes a callable"):
            handle.add_cancel_callback("close")  # type: ignore[arg-type]
        assert not handle.is_cancelled

    def test_cancel_is_idempotent(self) -> None:
        """Cancelling twice is allowed and callbacks still run once."""
        handle = StreamingHandle()
        calls: list[str] = []
        handle.add_cancel_callback(lambda: calls.append("closed"))
        handle.cancel()
        handle.cancel()
        assert handle.is_cancelled
        assert calls == ["closed"]

    def test_callbacks_run_in_registration_order(self) -> None:
        """Cancel callbacks run in the order they were added."""
        handle = StreamingHandle()
        calls: list[int] = []
        for i in range(3):
            handle.add_cancel_callback(functools.partial(calls.append, i))
        handle.cancel()
        assert calls == [0, 1, 2]

    def test_callback_added_after_cancel_runs_at_once(self) -> None:
        """A callback added to a cancelled handle runs immediately."""
        handle = StreamingHandle()
        handle.cancel()
        calls: list[str] = []
        handle.add_cancel_callback(lambda: calls.append("now"))
        assert calls == ["now"]

    def test_cancel_from_many_threads(self) -> None:
        """Many threads cancelling at once run each callback exactly once."""
        for _ in range(20):
            assert sorted(_cancel_concurrently(threads=16, callbacks=5)) == [
                0,
                1,
                2,
                3,
                4,
            ]

    def test_concurrent_add_and_cancel(self) -> None:
        """Every callback added around a concurrent cancel runs exactly once."""
        handle = StreamingHandle()
        counts = [0] * 400
        lock = threading.Lock()

        def add(start: int) -> None:
            for i in range(start, start + 100):

                def bump(i: int = i) -> None:
                    with lock:
                        counts[i] += 1

                handle.add_cancel_callback(bump)

        threads = [threading.Thread(target=add, args=(s,)) for s in range(0, 400, 100)]
        for thread in threads:
            thread.start()
        handle.cancel()
        for thread in threads:
            thread.join()
        assert counts == [1] * 400

    def test_raising_callback_logged_others_run(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A raising cancel callback is logged with its traceback; the rest run."""
        handle = StreamingHandle()
        calls: list[str] = []

        def broken() -> None:
            raise RuntimeError("socket already gone")

        handle.add_cancel_callback(broken)
        handle.add_cancel_callback(lambda: calls.append("closed"))
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            handle.cancel()
        assert calls == ["closed"]
        (record,) = caplog.records
        assert record.exc_info is not None
        assert "socket already gone" in caplog.text

    def test_raising_late_callback_logged(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A raising callback added after cancel is logged, not raised."""
        handle = StreamingHandle()
        handle.cancel()

        def broken() -> None:
            raise RuntimeError("late")

        with caplog.at_level(logging.ERROR, logger="langhooks"):
            handle.add_cancel_callback(broken)
        assert "late" in caplog.text

    def test_final(self) -> None:
        """StreamingHandle is not an extension point: it has slots."""
        with pytest.raises(AttributeError):
            StreamingHandle().extra = 1  # type: ignore[attr-defined]


class TestContexts:
    @pytest.mark.parametrize(
        "kind",
        [PartialResponseContext, PartialThinkingContext, PartialToolCallContext],
    )
    def test_carries_handle(self, kind: type[PartialResponseContext]) -> None:
        """Each context carries the stream's handle."""
        handle = StreamingHandle()
        assert kind(handle=handle).handle is handle

    @pytest.mark.parametrize(
        "kind",
        [PartialResponseContext, PartialThinkingContext, PartialToolCallContext],
    )
    def test_handle_required_and_checked(
        self, kind: type[PartialResponseContext]
    ) -> None:
        """A context needs a real StreamingHandle."""
        with pytest.raises(TypeError, match="handle"):
            kind(handle=object())  # type: ignore[arg-type]

    def test_handler_can_cancel_through_context(self) -> None:
        """A handler cancels the stream through the context it receives."""

        class StopAfterHello(StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                if "hello" in partial.text:
                    context.handle.cancel()

        handle = StreamingHandle()
        StopAfterHello().on_partial_response(
            PartialResponse(text="hello"), PartialResponseContext(handle=handle)
        )
        assert handle.is_cancelled


class TestHandlerInterfaces:
    def test_sync_events(self) -> None:
        """The sync interface declares exactly langchain4j's seven events."""
        names = sorted(n for n in vars(StreamingChatResponseHandler) if n[:3] == "on_")
        assert names == EVENTS

    def test_async_twin_has_same_events(self) -> None:
        """The async twin declares the same events, each as a coroutine function."""
        names = sorted(
            n for n in vars(AsyncStreamingChatResponseHandler) if n[:3] == "on_"
        )
        assert names == EVENTS
        for name in names:
            assert inspect.iscoroutinefunction(
                getattr(AsyncStreamingChatResponseHandler, name)
            )

    def test_every_method_documented(self) -> None:
        """Every event method has a docstring saying when it fires."""
        for base in (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler):
            for name in EVENTS:
                assert getattr(base, name).__doc__, f"{base.__name__}.{name}"

    def test_sync_methods_are_no_ops(self) -> None:
        """Every base method accepts its arguments and does nothing."""
        handler = StreamingChatResponseHandler()
        handle = StreamingHandle()
        call = ToolCall(call_id="c", name="s")
        response = ChatResponse(message=Message.assistant("x"))
        handler.on_partial_response(
            PartialResponse(text="a"), PartialResponseContext(handle=handle)
        )
        handler.on_partial_thinking(
            PartialThinking(text="t"), PartialThinkingContext(handle=handle)
        )
        handler.on_partial_tool_call(
            PartialToolCall(index=0, id="c", name="s", partial_arguments="{"),
            PartialToolCallContext(handle=handle),
        )
        handler.on_complete_tool_call(CompleteToolCall(index=0, tool_call=call))
        handler.on_unmapped_raw_event({"type": "ping"})
        handler.on_complete_response(response)
        handler.on_error(LangHooksError("timeout", "x"))

    async def test_async_methods_are_no_ops(self) -> None:
        """Every async base method can be awaited and does nothing."""
        handler = AsyncStreamingChatResponseHandler()
        handle = StreamingHandle()
        call = ToolCall(call_id="c", name="s")
        await handler.on_partial_response(
            PartialResponse(text="a"), PartialResponseContext(handle=handle)
        )
        await handler.on_partial_thinking(
            PartialThinking(text="t"), PartialThinkingContext(handle=handle)
        )
        await handler.on_partial_tool_call(
            PartialToolCall(index=0, id=None, name="s", partial_arguments=""),
            PartialToolCallContext(handle=handle),
        )
        await handler.on_complete_tool_call(CompleteToolCall(index=0, tool_call=call))
        await handler.on_unmapped_raw_event(object())
        await handler.on_complete_response(ChatResponse(message=Message.assistant("x")))
        await handler.on_error(LangHooksError("timeout", "x"))

    def test_parameters_positional_only(self) -> None:
        """Event parameters are positional-only, matching how events are delivered."""
        for base in (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler):
            for name in EVENTS:
                params = list(
                    inspect.signature(getattr(base, name)).parameters.values()
                )
                assert all(
                    p.kind is inspect.Parameter.POSITIONAL_ONLY for p in params
                ), f"{base.__name__}.{name}"

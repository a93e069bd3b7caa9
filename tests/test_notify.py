"""Nous-style notification: events, messages, map callbacks, queues, event mapping."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langhooks import (
    AsyncCompositeChainHandler,
    ChainCallbackHandler,
    CompositeChainHandler,
    CompositeStreamingHandler,
    HandlerWithoutInvocation,
    LangHooksError,
    Message,
    MessageDelta,
    StreamingChatResponseHandler,
    TokenUsage,
    Tool,
    ToolCall,
    ToolResult,
    isolate,
)
from langhooks._core._handler import overridden_events
from langhooks._wrap._notify import _TAGS
from langhooks.chain import LLMChain, OkResult
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.notify import (
    NotifyingHandler,
    NousCallbacks,
    NousEvent,
    events,
    to_message,
)

NOUS_EVENTS = [
    "on_agent_start",
    "on_llm_new_delta",
    "on_llm_new_thinking_delta",
    "on_llm_new_message",
    "on_tool_call",
    "on_tool_response",
    "on_agent_complete",
    "on_error",
]
CALL = ToolCall(call_id="call_1", name="search", arguments={"q": "elixir"})


def _search(arguments: Any, context: Any) -> str:
    return "found"


TOOL = Tool("search", _search)


def _chain() -> LLMChain:
    return LLMChain(ScriptedChatModel([]))


def _request() -> ChatRequest:
    return ChatRequest([Message.user("hi")])


def _drain(q: queue.Queue[Any]) -> list[Any]:
    items = []
    while not q.empty():
        items.append(q.get_nowait())
        q.task_done()
    return items


@pytest.fixture
def loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """A real event loop running forever in its own thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


class TestEventsAndMessages:
    def test_events_are_nous_eight_in_nous_order(self) -> None:
        """events() lists Nous's eight event names in Nous's order."""
        assert events() == NOUS_EVENTS

    def test_events_returns_a_new_list(self) -> None:
        """Changing the returned list does not change the next one."""
        events().clear()
        assert events() == NOUS_EVENTS

    @pytest.mark.parametrize(
        ("event", "tag"),
        [
            ("on_agent_start", "agent_start"),
            ("on_llm_new_delta", "agent_delta"),
            ("on_llm_new_thinking_delta", "agent_thinking"),
            ("on_llm_new_message", "agent_message"),
            ("on_tool_call", "tool_call"),
            ("on_tool_response", "tool_result"),
            ("on_agent_complete", "agent_complete"),
            ("on_error", "agent_error"),
        ],
    )
    def test_each_event_has_nous_tag(self, event: str, tag: str) -> None:
        """to_message tags each Nous event as Nous does, payload unchanged."""
        payload = object()
        assert to_message(event, payload) == (tag, payload)

    def test_an_unknown_event_is_its_own_tag(self) -> None:
        """to_message passes an unknown event through as (event, payload)."""
        assert to_message("on_custom", 1) == ("on_custom", 1)


class TestCallbacks:
    def test_the_callback_receives_event_and_payload(self) -> None:
        """execute calls the event's callback with (event, payload)."""
        seen: list[tuple[str, Any]] = []
        handler = NotifyingHandler(
            callbacks={"on_llm_new_delta": lambda e, p: seen.append((e, p))}
        )
        handler.execute("on_llm_new_delta", "Hello")
        handler.execute("on_tool_call", {"id": "1"})
        assert seen == [("on_llm_new_delta", "Hello")]

    def test_callback_first_then_message(self) -> None:
        """Per event the callback runs before the message is sent, as in Nous."""
        order: list[object] = []
        handler = NotifyingHandler(
            callbacks={"on_agent_start": lambda e, p: order.append(("callback", e))},
            notify=order.append,
        )
        handler.execute("on_agent_start", {"x": 1})
        assert order == [("callback", "on_agent_start"), ("agent_start", {"x": 1})]

    def test_a_raising_callback_is_logged_and_delivery_goes_on(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A callback's exception is logged with its traceback; the message still
        goes and later events are delivered."""
        messages: list[tuple[str, Any]] = []

        def broken(event: str, payload: Any) -> None:
            raise ValueError("callback bug")

        handler = NotifyingHandler(
            callbacks={"on_llm_new_delta": broken}, notify=messages.append
        )
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            handler.execute("on_llm_new_delta", "a")
            handler.execute("on_llm_new_delta", "b")
        assert messages == [("agent_delta", "a"), ("agent_delta", "b")]
        assert len(caplog.records) == 2
        record = caplog.records[0]
        assert record.name == "langhooks"
        assert record.exc_info is not None
        assert "on_llm_new_delta callback raised" in record.getMessage()
        assert "Traceback" in caplog.text
        assert "ValueError: callback bug" in caplog.text

    def test_execute_many_delivers_in_order(self) -> None:
        """execute_many executes each pair in turn."""
        messages: list[tuple[str, Any]] = []
        handler = NotifyingHandler(notify=messages.append)
        handler.execute_many(
            [("on_tool_call", {"id": "1"}), ("on_tool_response", {"id": "1"})]
        )
        assert messages == [("tool_call", {"id": "1"}), ("tool_result", {"id": "1"})]

    def test_an_unknown_event_is_sent_with_its_own_name(self) -> None:
        """Executing a non-Nous event sends (event, payload), as Nous does."""
        messages: list[tuple[str, Any]] = []
        NotifyingHandler(notify=messages.append).execute("on_custom", 7)
        assert messages == [("on_custom", 7)]

    def test_execute_rejects_a_non_str_event(self) -> None:
        """An event must be a str."""
        with pytest.raises(TypeError, match="must be a str"):
            NotifyingHandler().execute(1, None)  # type: ignore[arg-type]

    def test_has_callback_and_has_notification(self) -> None:
        """has_callback and has_notification report the configuration."""
        handler = NotifyingHandler(callbacks={"on_error": lambda e, p: None})
        assert handler.has_callback("on_error")
        assert not handler.has_callback("on_tool_call")
        assert not handler.has_notification()
        assert NotifyingHandler(notify=queue.Queue()).has_notification()

    def test_put_callback_returns_a_new_handler(self) -> None:
        """put_callback adds or replaces in a copy; the original is unchanged."""
        seen: list[str] = []
        original = NotifyingHandler()
        added = original.put_callback("on_tool_call", lambda e, p: seen.append("a"))
        replaced = added.put_callback("on_tool_call", lambda e, p: seen.append("b"))
        assert not original.has_callback("on_tool_call")
        assert added.has_callback("on_tool_call")
        original.execute("on_tool_call", {})
        added.execute("on_tool_call", {})
        replaced.execute("on_tool_call", {})
        assert seen == ["a", "b"]

    def test_remove_callback_returns_a_new_handler(self) -> None:
        """remove_callback removes in a copy; removing a missing one is harmless."""
        original = NotifyingHandler(callbacks={"on_error": lambda e, p: None})
        removed = original.remove_callback("on_error")
        assert original.has_callback("on_error")
        assert not removed.has_callback("on_error")
        assert not removed.remove_callback("on_error").has_callback("on_error")

    def test_copies_share_the_notify_target(self) -> None:
        """A handler from put_callback sends to the same notify target."""
        q: queue.Queue[Any] = queue.Queue()
        copy = NotifyingHandler(notify=q).put_callback("on_error", lambda e, p: None)
        assert copy.notify is q
        copy.execute("on_error", "x")
        assert _drain(q) == [("agent_error", "x")]

    def test_callbacks_are_read_only(self) -> None:
        """The callbacks mapping cannot be changed in place."""
        handler = NotifyingHandler(callbacks={"on_error": print})
        with pytest.raises(TypeError):
            handler.callbacks["on_error"] = print  # type: ignore[index]

    def test_a_misspelled_callback_names_the_closest_event(self) -> None:
        """A callback key that is not a Nous event is a ValueError with a hint."""
        with pytest.raises(ValueError, match="did you mean on_llm_new_delta"):
            NotifyingHandler(callbacks={"on_llm_new_detla": lambda e, p: None})  # type: ignore[call-overload]
        with pytest.raises(ValueError, match="did you mean on_tool_call"):
            NotifyingHandler().put_callback("on_tool_cal", lambda e, p: None)  # type: ignore[call-overload]
        with pytest.raises(ValueError, match="not a Nous event"):
            NotifyingHandler().remove_callback("on_run_start")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be a str"):
            NotifyingHandler().put_callback(None, print)  # type: ignore[call-overload]

    def test_a_bad_callback_is_rejected(self) -> None:
        """A callback must be callable with (event, payload)."""
        with pytest.raises(TypeError, match="must be a function of"):
            NotifyingHandler(callbacks={"on_error": "print"})  # type: ignore[call-overload]

        def one(payload: Any) -> None:
            pass

        with pytest.raises(TypeError, match="cannot take them"):
            NotifyingHandler().put_callback("on_error", one)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match="callbacks must be a mapping"):
            NotifyingHandler(callbacks=[print])  # type: ignore[call-overload]

    def test_a_builtin_without_a_signature_is_trusted(self) -> None:
        """A callable inspect cannot read is accepted as a callback."""
        # max takes comparable values, not (str, LangHooksError): only the type
        # checker can tell.
        handler = NotifyingHandler(callbacks={"on_error": max})  # type: ignore[call-overload]
        assert handler.has_callback("on_error")

    def test_repr_shows_the_configuration(self) -> None:
        """repr shows the callbacks and the notify target."""
        assert repr(NotifyingHandler()) == "NotifyingHandler(callbacks={}, notify=None)"


class TestQueueDelivery:
    def test_messages_go_to_a_queue_in_order(self) -> None:
        """A queue.Queue receives (tag, payload) messages in event order."""
        q: queue.Queue[Any] = queue.Queue()
        handler = NotifyingHandler(notify=q)
        handler.execute("on_agent_start", {})
        handler.execute("on_llm_new_delta", "Hi")
        handler.execute("on_agent_complete", "done")
        assert _drain(q) == [
            ("agent_start", {}),
            ("agent_delta", "Hi"),
            ("agent_complete", "done"),
        ]

    def test_messages_from_another_thread_reach_a_reader(self) -> None:
        """A producer thread's messages are read in order by this thread."""
        q: queue.Queue[Any] = queue.Queue()
        handler = NotifyingHandler(notify=q)
        texts = [str(i) for i in range(200)]
        producer = threading.Thread(
            target=handler.execute_many,
            args=([("on_llm_new_delta", t) for t in texts],),
        )
        producer.start()
        received = [q.get(timeout=10)[1] for _ in texts]
        producer.join()
        assert received == texts

    def test_a_full_queue_drops_the_oldest_and_counts(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A full bounded queue never blocks: the oldest message goes, dropped counts
        it, and one warning is logged."""
        q: queue.Queue[Any] = queue.Queue(maxsize=2)
        handler = NotifyingHandler(notify=q)
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            for text in "abcde":
                handler.execute("on_llm_new_delta", text)
        assert handler.dropped == 3
        assert _drain(q) == [("agent_delta", "d"), ("agent_delta", "e")]
        assert q.unfinished_tasks == 0
        assert len(caplog.records) == 1
        assert "notify queue is full (maxsize=2)" in caplog.text

    @given(
        texts=st.lists(st.text(min_size=1, max_size=3), max_size=30),
        maxsize=st.integers(min_value=0, max_value=8),
    )
    def test_a_queue_keeps_the_newest_messages_in_order(
        self, texts: list[str], maxsize: int
    ) -> None:
        """For any messages and bound, the queue holds the newest ones in order and
        dropped counts the rest (maxsize 0 is unbounded)."""
        q: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
        handler = NotifyingHandler(notify=q)
        handler.execute_many(("on_llm_new_delta", text) for text in texts)
        kept = texts if maxsize == 0 else texts[-maxsize:]
        assert [payload for _, payload in _drain(q)] == kept
        assert handler.dropped == len(texts) - len(kept)

    def test_dropped_is_shared_by_copies(self) -> None:
        """Copies send to the same queue and share its drop count."""
        q: queue.Queue[Any] = queue.Queue(maxsize=1)
        original = NotifyingHandler(notify=q)
        copy = original.put_callback("on_error", lambda e, p: None)
        original.execute("on_error", 1)
        copy.execute("on_error", 2)
        assert original.dropped == copy.dropped == 1
        assert NotifyingHandler().dropped == 0

    def test_a_callable_receives_each_message(self) -> None:
        """A callable notify target is called with each message."""
        messages: list[tuple[str, Any]] = []
        handler = NotifyingHandler(notify=messages.append)
        handler.execute("on_tool_call", {"id": "1"})
        assert messages == [("tool_call", {"id": "1"})]
        assert handler.notify == messages.append

    def test_a_raising_callable_propagates(self) -> None:
        """A notify callable's exception reaches the caller (e.g. q.put_nowait)."""
        q: queue.Queue[Any] = queue.Queue(maxsize=1)
        handler = NotifyingHandler(notify=q.put_nowait)
        handler.execute("on_error", 1)
        with pytest.raises(queue.Full):
            handler.execute("on_error", 2)

    def test_an_unsupported_notify_is_rejected(self) -> None:
        """notify must be a queue, an asyncio queue, a callable or None."""
        with pytest.raises(TypeError, match="notify must be"):
            NotifyingHandler(notify=[])  # type: ignore[call-overload]
        loop = asyncio.new_event_loop()
        try:
            with pytest.raises(TypeError, match="loop= only applies"):
                NotifyingHandler(notify=queue.Queue(), loop=loop)  # type: ignore[call-overload]
        finally:
            loop.close()


class TestAsyncQueueDelivery:
    def test_another_thread_delivers_into_a_loop_in_its_own_thread(
        self, loop_thread: asyncio.AbstractEventLoop
    ) -> None:
        """Messages sent from this thread reach a consumer task in a loop running
        in another thread, in order."""

        async def setup() -> tuple[asyncio.Queue[Any], NotifyingHandler]:
            q: asyncio.Queue[Any] = asyncio.Queue()
            return q, NotifyingHandler(notify=q)  # created in the loop: binds it

        q, handler = asyncio.run_coroutine_threadsafe(setup(), loop_thread).result(10)

        async def consume() -> list[Any]:
            received = []
            while True:
                tag, payload = await q.get()
                received.append((tag, payload))
                if tag == "agent_complete":
                    return received

        consumer = asyncio.run_coroutine_threadsafe(consume(), loop_thread)
        handler.execute("on_agent_start", {})
        for text in ["Hel", "lo"]:
            handler.execute("on_llm_new_delta", text)
        handler.execute("on_agent_complete", "ok")
        assert consumer.result(timeout=10) == [
            ("agent_start", {}),
            ("agent_delta", "Hel"),
            ("agent_delta", "lo"),
            ("agent_complete", "ok"),
        ]

    def test_an_explicit_loop_is_used(
        self, loop_thread: asyncio.AbstractEventLoop
    ) -> None:
        """loop= names the reading loop for a queue created outside it."""
        q: asyncio.Queue[Any] = asyncio.Queue()
        handler = NotifyingHandler(notify=q, loop=loop_thread)
        handler.execute("on_error", "boom")

        async def read() -> Any:
            return await q.get()

        result = asyncio.run_coroutine_threadsafe(read(), loop_thread).result(10)
        assert result == ("agent_error", "boom")

    async def test_a_sync_stream_in_a_worker_thread_feeds_a_consumer_task(
        self,
    ) -> None:
        """A sync model stream run with to_thread feeds an asyncio.Queue read by a
        consumer task, with Nous's tags, in stream order."""
        q: asyncio.Queue[Any] = asyncio.Queue()
        handler = NotifyingHandler(notify=q)
        received: list[tuple[str, Any]] = []

        async def consume() -> None:
            while True:
                message = await q.get()
                received.append(message)
                if message[0] in ("agent_message", "agent_error"):
                    return

        consumer = asyncio.create_task(consume())
        model = ScriptedChatModel([ScriptedTurn(thinking="Let me", text="Hi there")])
        response = await asyncio.to_thread(model.stream, _request(), handler)
        await consumer
        assert received == [
            ("agent_thinking", "Let "),
            ("agent_thinking", "me"),
            ("agent_delta", "Hi "),
            ("agent_delta", "there"),
            ("agent_message", response.message),
        ]

    async def test_in_the_loop_thread_the_message_is_put_at_once(self) -> None:
        """From the loop's own thread the message is on the queue when execute
        returns."""
        q: asyncio.Queue[Any] = asyncio.Queue()
        NotifyingHandler(notify=q).execute("on_error", "x")
        assert q.get_nowait() == ("agent_error", "x")

    async def test_a_full_asyncio_queue_drops_the_oldest(self) -> None:
        """A full bounded asyncio.Queue drops its oldest message in the loop, from
        any thread, and dropped counts it."""
        q: asyncio.Queue[Any] = asyncio.Queue(maxsize=2)
        handler = NotifyingHandler(notify=q)

        def produce() -> None:
            for text in "abcde":
                handler.execute("on_llm_new_delta", text)

        # to_thread's result is handed to the loop after the puts, so they ran.
        await asyncio.to_thread(produce)
        handler.execute("on_llm_new_delta", "f")
        assert handler.dropped == 4
        assert [q.get_nowait(), q.get_nowait()] == [
            ("agent_delta", "e"),
            ("agent_delta", "f"),
        ]

    def test_the_loop_a_consumer_bound_is_found(self) -> None:
        """A handler made outside any loop finds the loop a waiting consumer bound
        the queue to."""
        q: asyncio.Queue[Any] = asyncio.Queue()
        handler = NotifyingHandler(notify=q)

        async def main() -> Any:
            reader = asyncio.create_task(q.get())
            await asyncio.sleep(0)  # the reader waits: the queue is bound now
            await asyncio.to_thread(handler.execute, "on_error", "late")
            return await reader

        assert asyncio.run(main()) == ("agent_error", "late")

    def test_the_loop_of_the_first_delivery_is_found(self) -> None:
        """A handler made outside any loop uses the loop running where it first
        delivers."""
        q: asyncio.Queue[Any] = asyncio.Queue()
        handler = NotifyingHandler(notify=q)

        async def main() -> Any:
            handler.execute("on_error", "here")
            await asyncio.to_thread(handler.execute, "on_error", "there")
            return [await q.get(), await q.get()]

        assert asyncio.run(main()) == [
            ("agent_error", "here"),
            ("agent_error", "there"),
        ]

    def test_an_unknown_loop_is_a_clear_error(self) -> None:
        """With no loop known, delivery raises a RuntimeError saying what to do."""
        handler = NotifyingHandler(notify=asyncio.Queue())
        with pytest.raises(RuntimeError, match="pass loop="):
            handler.execute("on_error", "x")

    def test_a_closed_loop_is_a_clear_error(self) -> None:
        """Delivery to a closed loop raises a RuntimeError naming the message."""
        loop = asyncio.new_event_loop()
        handler = NotifyingHandler(notify=asyncio.Queue(), loop=loop)
        loop.close()
        with pytest.raises(RuntimeError, match=r"'agent_error'.*closed"):
            handler.execute("on_error", "x")


def _messages_of(handler_events: list[tuple[str, Any]]) -> NotifyingHandler:
    return NotifyingHandler(notify=handler_events.append)


class TestAsChainHandler:
    def test_it_is_both_kinds_of_handler(self) -> None:
        """NotifyingHandler is a ChainCallbackHandler and a
        StreamingChatResponseHandler."""
        handler = NotifyingHandler()
        assert isinstance(handler, ChainCallbackHandler)
        assert isinstance(handler, StreamingChatResponseHandler)

    def test_run_start_is_agent_start(self) -> None:
        """on_run_start becomes on_agent_start with {"chain": chain}."""
        seen: list[tuple[str, Any]] = []
        chain = _chain()
        _messages_of(seen).on_run_start(chain)
        assert seen == [("agent_start", {"chain": chain})]

    def test_deltas_are_thinking_then_text(self) -> None:
        """Each delta's thinking then text become Nous deltas; empty parts do not."""
        seen: list[tuple[str, Any]] = []
        _messages_of(seen).on_llm_new_delta(
            _chain(),
            [
                MessageDelta(thinking="hmm", text="He"),
                MessageDelta(text="llo"),
                MessageDelta(usage=TokenUsage(input_tokens=1)),
            ],
        )
        assert seen == [
            ("agent_thinking", "hmm"),
            ("agent_delta", "He"),
            ("agent_delta", "llo"),
        ]

    def test_a_processed_assistant_message_is_agent_message(self) -> None:
        """An assistant message becomes on_llm_new_message; a tool message does not."""
        seen: list[tuple[str, Any]] = []
        handler = _messages_of(seen)
        answer = Message.assistant("Hi")
        handler.on_message_processed(_chain(), answer)
        handler.on_message_processed(
            _chain(), Message.tool([ToolResult(tool_call_id="c", name="t")])
        )
        assert seen == [("agent_message", answer)]

    def test_tool_execution_is_tool_call_and_tool_result(self) -> None:
        """Tool start, success and failure become on_tool_call and on_tool_response
        with Nous's payload keys."""
        seen: list[tuple[str, Any]] = []
        handler = _messages_of(seen)
        ok = ToolResult(tool_call_id="call_1", name="search", content="found")
        failed = ToolResult(
            tool_call_id="call_1", name="search", content="boom", is_error=True
        )
        handler.on_tool_execution_started(_chain(), CALL, TOOL)
        handler.on_tool_execution_completed(_chain(), CALL, ok)
        handler.on_tool_execution_failed(_chain(), CALL, failed)
        assert seen == [
            (
                "tool_call",
                {"id": "call_1", "name": "search", "arguments": {"q": "elixir"}},
            ),
            ("tool_result", {"id": "call_1", "name": "search", "result": ok}),
            ("tool_result", {"id": "call_1", "name": "search", "result": failed}),
        ]

    def test_run_complete_and_error(self) -> None:
        """on_run_complete is agent_complete with the result; on_error(chain, error)
        is agent_error with the error."""
        seen: list[tuple[str, Any]] = []
        handler = _messages_of(seen)
        chain = _chain()
        result = OkResult(chain=chain)
        error = LangHooksError("timeout", "slow")
        handler.on_run_complete(chain, result)
        handler.on_error(chain, error)
        assert seen == [("agent_complete", result), ("agent_error", error)]

    def test_composites_deliver_on_error_in_each_shape(self) -> None:
        """A chain composite calls on_error(chain, error), a streaming one
        on_error(error); both become agent_error."""
        seen: list[tuple[str, Any]] = []
        handler = _messages_of(seen)
        error = LangHooksError("timeout", "slow")
        CompositeChainHandler([handler]).on_error(_chain(), error)
        CompositeStreamingHandler([handler]).on_error(error)
        assert seen == [("agent_error", error), ("agent_error", error)]

    def test_on_error_with_the_wrong_arity_is_rejected(self) -> None:
        """on_error takes one or two arguments."""
        with pytest.raises(TypeError, match=r"takes \(error\)"):
            NotifyingHandler().on_error()  # type: ignore[call-overload]

    async def test_an_async_composite_calls_it_inline(self) -> None:
        """In an async composite the sync handler is called inline."""
        seen: list[tuple[str, Any]] = []
        composite = AsyncCompositeChainHandler([_messages_of(seen)])
        await composite.on_run_start(_chain())
        await composite.on_error(_chain(), LangHooksError("timeout", "slow"))
        assert [tag for tag, _ in seen] == ["agent_start", "agent_error"]

    def test_wrappers_keep_both_interfaces(self) -> None:
        """Wrapping keeps both isinstance relations and the handled events."""
        handler = NotifyingHandler(notify=print)
        for wrapped in (isolate(handler), HandlerWithoutInvocation.wrap(handler)):
            assert isinstance(wrapped, ChainCallbackHandler)
            assert isinstance(wrapped, StreamingChatResponseHandler)
            assert overridden_events(wrapped) == overridden_events(handler)


class TestHandledEvents:
    def test_with_notify_every_mapped_event_is_handled(self) -> None:
        """With a notify target the handler takes every event it maps."""
        assert overridden_events(NotifyingHandler(notify=print)) == {
            "on_run_start",
            "on_llm_new_delta",
            "on_partial_response",
            "on_partial_thinking",
            "on_message_processed",
            "on_complete_response",
            "on_tool_execution_started",
            "on_tool_execution_completed",
            "on_tool_execution_failed",
            "on_run_complete",
            "on_error",
        }

    def test_without_notify_only_events_with_a_callback_are_handled(self) -> None:
        """With callbacks only, composites skip events that reach no callback."""
        handler = NotifyingHandler(callbacks={"on_llm_new_delta": lambda e, p: None})
        assert overridden_events(handler) == {"on_llm_new_delta", "on_partial_response"}
        empty = CompositeChainHandler([])
        assert CompositeChainHandler([handler]).on_run_start is empty.on_run_start
        assert overridden_events(NotifyingHandler()) == frozenset()

    def test_put_callback_updates_the_handled_events(self) -> None:
        """A copy with another callback handles that callback's events too."""
        handler = NotifyingHandler().put_callback("on_tool_call", lambda e, p: None)
        assert overridden_events(handler) == {"on_tool_execution_started"}


class TestAsStreamingHandler:
    def test_a_stream_becomes_nous_events(self) -> None:
        """Thinking, text and the complete response of a stream become Nous events,
        with each map callback called before its message."""
        order: list[object] = []
        handler = NotifyingHandler(
            callbacks={"on_llm_new_delta": lambda e, p: order.append(("cb", p))},
            notify=order.append,
        )
        model = ScriptedChatModel([ScriptedTurn(thinking="Hmm", text="Hi you")])
        response = model.stream(_request(), handler)
        assert order == [
            ("agent_thinking", "Hmm"),
            ("cb", "Hi "),
            ("agent_delta", "Hi "),
            ("cb", "you"),
            ("agent_delta", "you"),
            ("agent_message", response.message),
        ]

    def test_a_failed_stream_is_agent_error(self) -> None:
        """A stream's on_error(error) becomes agent_error."""
        seen: list[tuple[str, Any]] = []
        failure = LangHooksError("overloaded", "busy")
        with pytest.raises(LangHooksError):
            ScriptedChatModel([failure]).stream(_request(), _messages_of(seen))
        assert seen == [("agent_error", failure)]


def _weather(arguments: Any, context: Any) -> str:
    return f"sunny in {arguments['city']}"


class TestWithTheRuntime:
    async def test_a_run_in_a_worker_thread_feeds_a_consumer_task(self) -> None:
        """A chain run with a tool call, run with to_thread, sends Nous's messages in
        firing order to an asyncio.Queue read by a consumer task."""
        mailbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        call = ToolCall(call_id="c1", name="weather", arguments={"city": "Oslo"})
        model = ScriptedChatModel(
            [
                ScriptedTurn(thinking="Look", tool_calls=[call]),
                ScriptedTurn(text="Sunny."),
            ]
        )
        chain = LLMChain(
            model,
            tools=[Tool("weather", _weather)],
            callbacks=[NotifyingHandler(notify=mailbox)],
        ).add_message(Message.user("Weather in Oslo?"))
        received: list[tuple[str, Any]] = []

        async def consume() -> None:
            while True:
                message = await mailbox.get()
                received.append(message)
                if message[0] in ("agent_complete", "agent_error"):
                    return

        consumer = asyncio.create_task(consume())
        result = await asyncio.to_thread(chain.run)
        await consumer
        assert result.status == "ok"
        assert [tag for tag, _ in received] == [
            "agent_start",
            "agent_thinking",
            "agent_message",
            "tool_call",
            "tool_result",
            "agent_delta",
            "agent_message",
            "agent_complete",
        ]
        assert received[3][1] == {
            "id": "c1",
            "name": "weather",
            "arguments": {"city": "Oslo"},
        }
        assert received[4][1]["result"].text == "sunny in Oslo"
        assert received[-1] == ("agent_complete", result)

    def test_a_failed_run_ends_with_agent_error(self) -> None:
        """A run that gives up sends agent_error with its error, last."""
        q: queue.Queue[Any] = queue.Queue()
        failure = LangHooksError("authentication", "bad key")
        chain = LLMChain(
            ScriptedChatModel([failure]), callbacks=[NotifyingHandler(notify=q)]
        ).add_message(Message.user("hi"))
        result = chain.run()
        messages = _drain(q)
        assert result.status == "error"
        assert messages[0][0] == "agent_start"
        assert messages[-1] == ("agent_error", result.error)


class TestNousTypes:
    def test_the_event_type_lists_nous_events_in_order(self) -> None:
        """NousEvent's names are events(), in Nous's order, and the tag table's."""
        assert list(get_args(NousEvent)) == events() == list(_TAGS)

    def test_the_callbacks_type_has_a_key_per_event(self) -> None:
        """NousCallbacks types one callback per Nous event."""
        assert list(NousCallbacks.__annotations__) == events()

"""Handlers built from plain functions: chain_callbacks, streaming_callbacks, async."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, get_type_hints

import pytest

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
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    ReviewContext,
    ReviewDecision,
    StreamingChatResponseHandler,
    Tool,
    ToolCall,
    ToolProgress,
    UpdateArguments,
    achain_callbacks,
    astreaming_callbacks,
    chain_callbacks,
    filtered,
    isolate,
    streaming_callbacks,
)
from langhooks._core._functions import (
    AsyncChainCallbackFunctions,
    AsyncStreamingCallbackFunctions,
    ChainCallbackFunctions,
    StreamingCallbackFunctions,
)
from langhooks._core._handler import HandlerBase, interfaces_of, overridden_events
from langhooks.chain import LLMChain, RunResult
from langhooks.models import ChatModel, ChatRequest, ScriptedChatModel, ScriptedTurn

CALL = ToolCall(call_id="call_1", name="search", arguments={"q": "elixir"})


def _search(arguments: Any, context: Any) -> str:
    return "found"


TOOL = Tool("search", _search)
REVIEW = ReviewContext()


def _chain() -> LLMChain:
    return LLMChain(ScriptedChatModel([]))


def _request() -> ChatRequest:
    return ChatRequest([Message.user("hi")])


class TestChainCallbacks:
    def test_a_given_function_receives_the_event_arguments(self) -> None:
        """Calling an event calls its function with the method's arguments."""
        seen: list[tuple[LLMChain, Sequence[MessageDelta]]] = []
        handler = chain_callbacks(
            on_llm_new_delta=lambda chain, deltas: seen.append((chain, deltas))
        )
        chain = _chain()
        deltas = [MessageDelta(text="Hel"), MessageDelta(text="lo")]
        handler.on_llm_new_delta(chain, deltas)
        assert seen == [(chain, deltas)]

    def test_the_result_is_a_chain_handler(self) -> None:
        """The function handler is a ChainCallbackHandler and not a streaming one."""
        interfaces = interfaces_of(chain_callbacks())
        assert ChainCallbackHandler in interfaces
        assert StreamingChatResponseHandler not in interfaces

    def test_the_function_is_called_directly(self) -> None:
        """The event attribute is the user's own function: no wrapper in between."""

        def on_run_start(chain: LLMChain) -> None:
            pass

        handler = chain_callbacks(on_run_start=on_run_start)
        assert handler.on_run_start is on_run_start

    def test_overridden_events_are_exactly_the_given_names(self) -> None:
        """The handler reports the given events as handled, and no other."""
        handler = chain_callbacks(
            on_run_start=lambda chain: None, on_error=lambda chain, error: None
        )
        assert overridden_events(handler) == {"on_run_start", "on_error"}
        assert overridden_events(chain_callbacks()) == frozenset()

    def test_events_not_given_are_no_ops(self) -> None:
        """An event that was not given does nothing and review allows."""
        handler = chain_callbacks()
        handler.on_run_start(_chain())
        assert handler.on_tool_call_review(_chain(), CALL, TOOL, REVIEW) is None

    def test_a_composite_never_calls_an_event_not_given(self) -> None:
        """A composite's fan-out for an event not given is the empty one; a given
        event is the function itself."""
        calls: list[str] = []

        def on_run_start(chain: LLMChain) -> None:
            calls.append("start")

        handler = chain_callbacks(on_run_start=on_run_start)
        composite = CompositeChainHandler([handler])
        empty = CompositeChainHandler([])
        assert composite.on_run_start is on_run_start
        assert composite.on_llm_new_delta is empty.on_llm_new_delta
        assert composite.on_error is empty.on_error
        composite.on_run_start(_chain())
        assert calls == ["start"]

    def test_two_function_handlers_compose_in_order(self) -> None:
        """A composite calls every function handler that handles the event, in order."""
        calls: list[str] = []
        first = chain_callbacks(on_run_start=lambda chain: calls.append("first"))
        second = chain_callbacks(
            on_run_start=lambda chain: calls.append("second"),
            on_error=lambda chain, error: calls.append("error"),
        )
        composite = CompositeChainHandler([first, second])
        composite.on_run_start(_chain())
        composite.on_error(_chain(), LangHooksError("timeout", "slow"))
        assert calls == ["first", "second", "error"]

    def test_wrappers_keep_the_given_events(self) -> None:
        """isolate, filtered and HandlerWithoutInvocation handle only given events."""
        handler = chain_callbacks(
            on_run_start=lambda chain: None,
            on_llm_new_delta=lambda chain, deltas: None,
        )
        assert overridden_events(isolate(handler)) == overridden_events(handler)
        assert overridden_events(HandlerWithoutInvocation(handler)) == {
            "on_run_start",
            "on_llm_new_delta",
        }
        assert overridden_events(
            filtered(handler, events=["on_run_start", "on_error"])
        ) == {"on_run_start"}

    def test_repr_names_the_factory_and_the_events(self) -> None:
        """repr shows how the handler was built."""

        def on_run_start(chain: LLMChain) -> None:
            pass

        text = repr(chain_callbacks(on_run_start=on_run_start))
        assert text.startswith("chain_callbacks(on_run_start=<function")


class TestChainReview:
    def test_the_review_return_value_is_the_decision(self) -> None:
        """A given on_tool_call_review's return value is the handler's decision."""
        handler = chain_callbacks(
            on_tool_call_review=lambda chain, call, tool, review: Deny("read only")
        )
        assert "on_tool_call_review" in overridden_events(handler)
        assert handler.on_tool_call_review(_chain(), CALL, TOOL, REVIEW) == Deny(
            "read only"
        )

    def test_a_composite_folds_function_reviews(self) -> None:
        """A later reviewer sees the arguments an earlier one rewrote; the first Deny
        settles the call."""
        seen: list[dict[str, Any]] = []

        def rewrite(
            chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision:
            return UpdateArguments({**call.arguments, "limit": 3})

        def deny(
            chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision | None:
            seen.append(dict(call.arguments))
            return Deny("no") if call.arguments.get("q") == "secret" else None

        composite = CompositeChainHandler(
            [
                chain_callbacks(on_tool_call_review=rewrite),
                chain_callbacks(on_run_start=lambda chain: None),
                chain_callbacks(on_tool_call_review=deny),
            ]
        )
        decision = composite.on_tool_call_review(_chain(), CALL, TOOL, REVIEW)
        assert decision == UpdateArguments({"q": "elixir", "limit": 3})
        assert seen == [{"q": "elixir", "limit": 3}]
        secret = ToolCall(call_id="c2", name="search", arguments={"q": "secret"})
        assert composite.on_tool_call_review(_chain(), secret, TOOL, REVIEW) == Deny(
            "no"
        )

    def test_a_composite_allows_when_no_function_reviews(self) -> None:
        """Function handlers without a reviewer leave the call allowed."""
        composite = CompositeChainHandler(
            [chain_callbacks(on_run_start=lambda chain: None)]
        )
        assert composite.on_tool_call_review(_chain(), CALL, TOOL, REVIEW) == Allow()


class TestStreamingCallbacks:
    def test_a_stream_drives_the_functions(self) -> None:
        """A scripted model's stream calls the given functions in stream order."""
        text: list[str] = []
        responses: list[ChatResponse] = []
        handler = streaming_callbacks(
            on_partial_response=lambda partial, context: text.append(partial.text),
            on_complete_response=responses.append,
        )
        model = ScriptedChatModel([ScriptedTurn(text="Hello there, world")])
        response = model.stream(_request(), handler)
        assert "".join(text) == "Hello there, world"
        assert responses == [response]

    def test_an_error_reaches_on_error(self) -> None:
        """A failing stream calls the given on_error with the error."""
        errors: list[BaseException] = []
        handler = streaming_callbacks(on_error=errors.append)
        failure = LangHooksError("overloaded", "busy")
        with pytest.raises(LangHooksError):
            ScriptedChatModel([failure]).stream(_request(), handler)
        assert errors == [failure]

    def test_the_result_is_a_streaming_handler(self) -> None:
        """The function handler is a StreamingChatResponseHandler."""
        interfaces = interfaces_of(streaming_callbacks())
        assert StreamingChatResponseHandler in interfaces
        assert ChainCallbackHandler not in interfaces

    def test_a_composite_skips_events_not_given(self) -> None:
        """Only the given events reach the composite's fan-out."""

        def on_partial(
            partial: PartialResponse, context: PartialResponseContext
        ) -> None:
            pass

        handler = streaming_callbacks(on_partial_response=on_partial)
        assert overridden_events(handler) == {"on_partial_response"}
        composite = CompositeStreamingHandler([handler])
        empty = CompositeStreamingHandler([])
        assert composite.on_partial_response is on_partial
        assert composite.on_partial_thinking is empty.on_partial_thinking


class TestValidation:
    def test_an_unknown_keyword_names_the_closest_event(self) -> None:
        """A misspelled event is a TypeError with a 'did you mean' hint."""
        with pytest.raises(TypeError, match="did you mean on_llm_new_delta"):
            chain_callbacks(on_llm_new_delt=lambda chain, deltas: None)  # type: ignore[call-arg]

    def test_an_event_of_the_other_interface_is_unknown(self) -> None:
        """A streaming event is not a chain event, and the reverse."""
        with pytest.raises(TypeError, match="not an event of ChainCallbackHandler"):
            chain_callbacks(on_partial_response=lambda p, c: None)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="StreamingChatResponseHandler"):
            streaming_callbacks(on_run_start=lambda chain: None)  # type: ignore[call-arg]

    def test_an_event_of_the_other_interface_names_that_interface(self) -> None:
        """The hint for another interface's event names that interface rather than
        a look-alike event of this one."""
        with pytest.raises(TypeError) as caught:
            chain_callbacks(on_partial_response=lambda p, c: None)  # type: ignore[call-arg]
        assert "it is an event of StreamingChatResponseHandler" in str(caught.value)
        assert "did you mean" not in str(caught.value)

    def test_a_value_that_is_not_callable_is_rejected(self) -> None:
        """A non-callable value is a TypeError naming the event's arguments."""
        with pytest.raises(TypeError, match=r"on_run_start must be a function taking"):
            chain_callbacks(on_run_start="print")  # type: ignore[arg-type]

    def test_a_function_of_the_wrong_arity_is_rejected(self) -> None:
        """A function that cannot take the event's arguments fails at construction."""

        def one(chain: LLMChain) -> None:
            pass

        with pytest.raises(TypeError, match="called with 2 argument"):
            chain_callbacks(on_llm_new_delta=one)  # type: ignore[arg-type]

    def test_a_function_with_defaults_or_star_args_is_accepted(self) -> None:
        """A function that can take the arguments is fine, however it declares them."""

        def anything(*args: object) -> None:
            pass

        handler = chain_callbacks(on_tool_call_identified=anything)
        assert overridden_events(handler) == {"on_tool_call_identified"}

    def test_a_builtin_without_a_signature_is_trusted(self) -> None:
        """A callable inspect cannot read is accepted as is."""
        handler = streaming_callbacks(on_unmapped_raw_event=max)  # type: ignore[arg-type]
        assert handler.on_unmapped_raw_event is max  # type: ignore[comparison-overlap]

    def test_an_async_function_is_rejected_by_the_sync_factories(self) -> None:
        """An async def in a sync handler is a TypeError pointing at the async twin."""

        async def on_run_start(chain: LLMChain) -> None:
            pass

        with pytest.raises(TypeError, match="use achain_callbacks"):
            chain_callbacks(on_run_start=on_run_start)  # type: ignore[arg-type]

        async def on_error(error: BaseException) -> None:
            pass

        with pytest.raises(TypeError, match="use astreaming_callbacks"):
            streaming_callbacks(on_error=on_error)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("functions", "interface"),
        [
            (ChainCallbackFunctions, ChainCallbackHandler),
            (AsyncChainCallbackFunctions, AsyncChainCallbackHandler),
            (StreamingCallbackFunctions, StreamingChatResponseHandler),
            (AsyncStreamingCallbackFunctions, AsyncStreamingChatResponseHandler),
        ],
    )
    def test_the_typed_keywords_are_the_interface_events(
        self, functions: type, interface: type[HandlerBase]
    ) -> None:
        """Each TypedDict has one key per event of its interface, in the same order."""
        assert list(functions.__annotations__) == list(interface._langhooks_own_events)
        hints = get_type_hints(
            functions,
            localns={
                "LLMChain": LLMChain,
                "RunResult": RunResult,
                "ChatModel": ChatModel,
                "ChatRequest": ChatRequest,
                # (Imported for type checkers only, as the four above: the tools'
                # module is not loaded by import langhooks.)
                "Tool": Tool,
                "ToolProgress": ToolProgress,
            },
        )
        assert set(hints) == set(interface._langhooks_own_events)


class TestAsyncVariants:
    async def test_async_functions_are_awaited(self) -> None:
        """An async def function is installed as is and awaited by the event."""
        seen: list[str] = []

        async def on_run_start(chain: LLMChain) -> None:
            await asyncio.sleep(0)
            seen.append("start")

        handler = achain_callbacks(on_run_start=on_run_start)
        assert isinstance(handler, AsyncChainCallbackHandler)
        assert handler.on_run_start is on_run_start
        await handler.on_run_start(_chain())
        assert seen == ["start"]

    async def test_plain_functions_are_called_inline(self) -> None:
        """A plain function is allowed and runs when the event is awaited."""
        seen: list[str] = []
        handler = achain_callbacks(on_run_start=lambda chain: seen.append("x"))
        assert overridden_events(handler) == {"on_run_start"}
        await handler.on_run_start(_chain())
        assert seen == ["x"]

    async def test_an_awaitable_a_plain_function_returns_is_awaited(self) -> None:
        """A plain function returning a coroutine has that coroutine awaited."""
        seen: list[str] = []

        async def later(chain: LLMChain) -> None:
            seen.append("awaited")

        def plain(chain: LLMChain) -> Awaitable[None]:
            return later(chain)

        handler = achain_callbacks(on_run_start=plain)
        await handler.on_run_start(_chain())
        assert seen == ["awaited"]

    async def test_async_and_plain_reviews_fold_in_an_async_composite(self) -> None:
        """Review return values of async and plain functions are folded in order."""

        async def rewrite(
            chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision:
            return UpdateArguments({"q": "rewritten"})

        def check(
            chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
        ) -> ReviewDecision | None:
            return Deny(f"saw {call.arguments['q']}")

        composite = AsyncCompositeChainHandler(
            [
                achain_callbacks(on_tool_call_review=rewrite),
                achain_callbacks(on_tool_call_review=check),
            ]
        )
        decision = await composite.on_tool_call_review(_chain(), CALL, TOOL, REVIEW)
        assert decision == Deny("saw rewritten")

    async def test_an_async_composite_skips_events_not_given(self) -> None:
        """In an async composite an event not given is the empty fan-out."""
        handler = astreaming_callbacks(on_error=lambda error: None)
        assert overridden_events(handler) == {"on_error"}
        composite = AsyncCompositeStreamingHandler([handler])
        empty = AsyncCompositeStreamingHandler([])
        assert composite.on_partial_response is empty.on_partial_response

    async def test_an_async_stream_drives_the_functions(self) -> None:
        """astream awaits async functions and runs plain ones, in stream order."""
        events: list[str] = []

        async def on_partial_thinking(partial: Any, context: Any) -> None:
            events.append(f"thinking:{partial.text}")

        handler = astreaming_callbacks(
            on_partial_thinking=on_partial_thinking,
            on_partial_response=lambda partial, context: events.append(partial.text),
            on_complete_response=lambda response: events.append("done"),
        )
        assert isinstance(handler, AsyncStreamingChatResponseHandler)
        model = ScriptedChatModel([ScriptedTurn(thinking="Hmm", text="Hi")])
        await model.astream(_request(), handler)
        assert events == ["thinking:Hmm", "Hi", "done"]

    async def test_the_async_factories_validate_like_the_sync_ones(self) -> None:
        """Unknown names and non-callables fail the async factories too."""
        with pytest.raises(TypeError, match="did you mean on_error"):
            astreaming_callbacks(on_eror=lambda error: None)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="must be a function"):
            achain_callbacks(on_run_start=None)  # type: ignore[arg-type]

    async def test_a_raising_function_propagates_unless_isolated(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A function's exception propagates; isolate logs it with its traceback."""

        def boom(chain: LLMChain) -> None:
            raise RuntimeError("boom")

        handler = achain_callbacks(on_run_start=boom)
        with pytest.raises(RuntimeError, match="boom"):
            await handler.on_run_start(_chain())
        with caplog.at_level(logging.ERROR, logger="langhooks"):
            await isolate(handler).on_run_start(_chain())
        assert "RuntimeError: boom" in caplog.text


def _delete(arguments: Any, context: Any) -> str:
    raise AssertionError("a denied call never runs")


class TestWithTheRuntime:
    def test_a_function_review_denies_a_call_in_a_run(self) -> None:
        """A run asks the function reviewer and honours its Deny."""
        failed: list[str] = []
        reviewer = chain_callbacks(
            on_tool_call_review=lambda chain, call, tool, review: Deny("read only"),
            on_tool_execution_failed=lambda chain, call, result: failed.append(
                result.text
            ),
        )
        call = ToolCall(call_id="c1", name="delete", arguments={})
        model = ScriptedChatModel(
            [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Not allowed.")]
        )
        chain = LLMChain(
            model, tools=[Tool("delete", _delete)], callbacks=[reviewer]
        ).add_message(Message.user("delete everything"))
        result = chain.run()
        assert result.status == "ok"
        assert len(failed) == 1
        assert "read only" in failed[0]

    async def test_async_functions_receive_an_async_run(self) -> None:
        """An async run awaits async functions and calls plain ones."""
        events: list[str] = []

        async def on_run_start(chain: LLMChain) -> None:
            events.append("start")

        handler = achain_callbacks(
            on_run_start=on_run_start,
            on_llm_new_delta=lambda chain, deltas: events.extend(
                d.text for d in deltas if d.text
            ),
            on_run_complete=lambda chain, result: events.append(result.status),
        )
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="Hi there")]), callbacks=[handler]
        ).add_message(Message.user("hi"))
        await chain.arun()
        assert events[0] == "start"
        assert "".join(events[1:-1]) == "Hi there"
        assert events[-1] == "ok"


GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide" / "functions.md"


class TestGuide:
    @pytest.mark.parametrize(
        "index", range(len(re.findall(r"```python\n", GUIDE.read_text())))
    )
    def test_each_python_example_of_the_guide_runs(
        self, index: int, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every python block of docs/guide/functions.md runs as written."""
        block = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)[index]
        exec(
            compile(block, f"{GUIDE.name} block {index}", "exec"), {"__name__": "guide"}
        )

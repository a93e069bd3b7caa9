"""The recording handlers in langhooks.testing record every event, in order."""

from __future__ import annotations

import threading

from langhooks import (
    ChainCallbackHandler,
    ChatResponse,
    CompleteToolCall,
    Deny,
    LangHooksError,
    Message,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
    current_invocation,
    invocation,
)
from langhooks._core._handler import overridden_events
from langhooks.chain import LLMChain
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler


class TestRecordingChainHandler:
    """RecordingChainHandler handles and records every chain event."""

    def test_overrides_every_event(self) -> None:
        """Every event of the interface is recorded, none is skipped."""
        assert overridden_events(RecordingChainHandler()) == frozenset(
            ChainCallbackHandler._langhooks_events
        )

    def test_records_names_args_threads_and_invocations(self) -> None:
        """Events, their arguments, threads and invocations are kept in order."""
        recorder = RecordingChainHandler()
        chain = LLMChain(ScriptedChatModel([ScriptedTurn(text="Hi")]))
        message = Message.user("x")
        with invocation("test") as current:
            recorder.on_message_processed(chain, message)
            recorder.on_message_processing_error(chain, message)
            recorder.on_error_message_created(chain, message)
        assert recorder.names == [
            "on_message_processed",
            "on_message_processing_error",
            "on_error_message_created",
        ]
        assert recorder.of("on_message_processed") == [(chain, message)]
        assert recorder.threads == [threading.get_ident()] * 3
        assert recorder.invocations == [current] * 3
        assert recorder.summary() == recorder.names
        recorder.clear()
        assert (recorder.events, recorder.threads, recorder.invocations) == ([], [], [])

    def test_review_function(self) -> None:
        """The review function decides; without one every call is allowed."""
        chain = LLMChain(ScriptedChatModel([]))
        call = ToolCall(call_id="c", name="t")
        from langhooks import ReviewContext, Tool

        tool = Tool("t", lambda a, c: "")
        review = ReviewContext()
        assert (
            RecordingChainHandler().on_tool_call_review(chain, call, tool, review)
            is None
        )
        denying = RecordingChainHandler(review=lambda c, t, r: Deny("no"))
        assert denying.on_tool_call_review(chain, call, tool, review) == Deny("no")
        assert denying.summary() == ["on_tool_call_review t"]
        assert current_invocation() is None


class TestRecordingStreamingHandler:
    """RecordingStreamingHandler records a stream's events."""

    def test_overrides_every_event(self) -> None:
        """Every streaming event is recorded."""
        assert overridden_events(RecordingStreamingHandler()) == frozenset(
            StreamingChatResponseHandler._langhooks_events
        )

    def test_records_a_stream(self) -> None:
        """Partials, tool calls, raw events and the terminal call are recorded."""
        recorder = RecordingStreamingHandler()
        handle = StreamingHandle()
        context = PartialToolCallContext(handle=handle)
        partial = PartialToolCall(index=0, id="c", name="t", partial_arguments="{}")
        complete = CompleteToolCall(index=0, tool_call=ToolCall(call_id="c", name="t"))
        response = ChatResponse(message=Message.assistant("a"))
        error = LangHooksError("timeout", "t")
        recorder.on_partial_tool_call(partial, context)
        recorder.on_complete_tool_call(complete)
        recorder.on_unmapped_raw_event({"type": "ping"})
        recorder.on_complete_response(response)
        recorder.on_error(error)
        assert recorder.events == [
            ("on_partial_tool_call", (partial, context)),
            ("on_complete_tool_call", (complete,)),
            ("on_unmapped_raw_event", ({"type": "ping"},)),
            ("on_complete_response", (response,)),
            ("on_error", (error,)),
        ]

    def test_text(self) -> None:
        """text joins the response partials (not the thinking)."""
        recorder = RecordingStreamingHandler()
        from langhooks.models import ChatRequest

        request = ChatRequest(messages=[Message.user("x")])
        ScriptedChatModel([ScriptedTurn(thinking="hm", text="a b")]).stream(
            request, recorder
        )
        assert recorder.text == "a b"
        assert isinstance(recorder.of("on_partial_thinking")[0][0], PartialThinking)
        assert isinstance(recorder.of("on_partial_response")[0][0], PartialResponse)

"""The run-time side of the typing gaps closed for issue 27 (``stubs/`` holds the
checkers' side): the two-interface base classes, the codec's expected class, and
the error an async handler gets from ``run()``."""

from __future__ import annotations

from typing import Any, overload

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncChainStreamingHandler,
    ChainCallbackHandler,
    ChainStreamingHandler,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    ToolCall,
)
from langhooks._core._handler import overridden_events
from langhooks.chain import LLMChain, RunResult
from langhooks.codec import decode, dumps, encode, loads
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

REQUEST = ChatRequest([Message.user("hi")])


class Both(ChainStreamingHandler):
    """Records text and failures of both kinds."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        self.seen.append(partial.text)

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult, /) -> None:
        self.seen.append("run complete")

    @overload
    def on_error(self, error: LangHooksError, /) -> None: ...
    @overload
    def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
    @override
    def on_error(self, *args: Any) -> None:
        self.seen.append(f"error with {len(args)} argument(s)")


class TextOnly(ChainStreamingHandler):
    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext, /
    ) -> None:
        pass


class TestChainStreamingHandler:
    """One class, both interfaces."""

    def test_is_both(self) -> None:
        """It is a chain handler and a streaming handler."""
        handler = Both()
        assert isinstance(handler, ChainCallbackHandler)
        assert isinstance(handler, StreamingChatResponseHandler)
        assert isinstance(AsyncChainStreamingHandler(), AsyncChainCallbackHandler)

    def test_in_a_chain_and_a_stream(self) -> None:
        """Its events arrive from a run and from a bare stream (a run streams
        deltas, not partials); on_error gets the stream's (error) and the run's
        (chain, error)."""
        handler = Both()
        model = ScriptedChatModel(
            [
                ScriptedTurn(text="one"),
                ScriptedTurn(text="two"),
                LangHooksError("authentication", "bad key"),
                LangHooksError("authentication", "bad key"),
            ]
        )
        LLMChain(model, callbacks=[handler]).add_message(Message.user("hi")).run()
        model.stream(REQUEST, handler)
        with pytest.raises(LangHooksError):
            model.stream(REQUEST, handler)
        LLMChain(model, callbacks=[handler]).add_message(Message.user("hi")).run()
        assert handler.seen == [
            "run complete",
            "two",
            "error with 1 argument(s)",
            "error with 2 argument(s)",
        ]

    def test_on_error_is_not_handled_unless_overridden(self) -> None:
        """The base adds no run-time on_error: an untouched one is never called."""
        assert "on_error" not in overridden_events(TextOnly())
        assert "on_partial_response" in overridden_events(TextOnly())
        assert "on_error" in overridden_events(Both())


class TestCodecExpectedType:
    """decode/loads with the class expected: typed, and checked at run time."""

    def test_the_expected_class(self) -> None:
        """The value comes back when it is of the class asked for."""
        message = Message.user("hi")
        assert loads(dumps(message), type=Message) == message
        assert decode(encode(message), Message) == message

    def test_another_class_is_a_type_error(self) -> None:
        """A value of another class is a TypeError naming both."""
        text = dumps(Message.user("hi"))
        with pytest.raises(TypeError, match="expected an encoded ToolCall, got an "):
            loads(text, type=ToolCall)
        with pytest.raises(TypeError, match="got an encoded Message"):
            decode(encode(Message.user("hi")), ToolCall)

    def test_type_must_be_a_class(self) -> None:
        """A class name instead of the class is a TypeError saying what to pass."""
        with pytest.raises(TypeError, match="type must be a class such as Message"):
            loads(dumps(Message.user("hi")), type="Message")  # type: ignore[call-overload]


class AsyncReviewer(AsyncChainCallbackHandler):
    @override
    async def on_run_start(self, chain: LLMChain, /) -> None:
        pass


class TestAsyncHandlerInRun:
    """The type checkers accept an async handler in run(); the error says why not."""

    def test_message_says_use_arun(self) -> None:
        """run() refuses before calling anything, naming arun()."""
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="x")]), callbacks=[AsyncReviewer()]
        ).add_message(Message.user("hi"))
        with pytest.raises(TypeError, match=r"use 'await chain\.arun\(\)' instead"):
            chain.run()

    async def test_arun_takes_it(self) -> None:
        """The same chain runs under arun()."""
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="x")]), callbacks=[AsyncReviewer()]
        ).add_message(Message.user("hi"))
        assert (await chain.arun()).status == "ok"

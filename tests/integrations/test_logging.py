"""``LoggingHandler`` logs one structured record per event through stdlib logging."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from typing_extensions import override

from langhooks import (
    ChatResponse,
    CompleteToolCall,
    Deny,
    LangHooksError,
    Message,
    ReviewContext,
    TokenUsage,
    ToolCall,
    ToolProgress,
    chain_callbacks,
)
from langhooks.chain import LLMChain, RetryPolicy, Tool
from langhooks.integrations.logging import LoggingHandler
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn


class Collect(logging.Handler):
    """A logging handler that keeps every record."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    @override
    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def events(self) -> list[str]:
        """The ``langhooks_event`` of each record, in order."""
        return [record.__dict__["langhooks_event"] for record in self.records]

    def of(self, event: str) -> list[logging.LogRecord]:
        """The records of one event."""
        return [r for r in self.records if r.__dict__["langhooks_event"] == event]


@pytest.fixture
def collect() -> Iterator[tuple[logging.Logger, Collect]]:
    """A fresh logger at DEBUG with a collecting handler."""
    logger = logging.getLogger("tests.langhooks.events")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    sink = Collect()
    logger.addHandler(sink)
    yield logger, sink
    logger.removeHandler(sink)


def lookup(arguments: Any, context: Any) -> str:
    """A tool that answers."""
    return "found"


def broken(arguments: Any, context: Any) -> str:
    """A tool that raises."""
    raise RuntimeError("service down")


LOOKUP = Tool("lookup", lookup)
BROKEN = Tool("broken", broken)
USAGE = TokenUsage(input_tokens=7, output_tokens=3)


def tool_turn(*names: str) -> ScriptedTurn:
    """A turn that calls each named tool once."""
    calls = [
        ToolCall(call_id=f"call-{name}", name=name, arguments={}) for name in names
    ]
    return ScriptedTurn(text="Let me see.", tool_calls=calls, usage=USAGE)


class TestChainRecords:
    """A run's events become records with the run's ids and the right levels."""

    def test_a_run_with_tools(self, collect: tuple[logging.Logger, Collect]) -> None:
        """Every event is one record; ids, tool and tokens are in the extras."""
        logger, sink = collect
        model = ScriptedChatModel([tool_turn("lookup"), ScriptedTurn(text="Done.")])
        chain = LLMChain(model, tools=[LOOKUP], callbacks=[LoggingHandler(logger)])
        result = chain.add_message(Message.user("go")).run()
        run_id = result.chain.invocation.id if result.chain.invocation else None
        assert run_id is not None
        assert sink.events()[0] == "on_run_start"
        assert sink.events()[-1] == "on_run_complete"
        assert all(r.__dict__["run_id"] == run_id for r in sink.records)
        (pre,) = sink.of("on_tool_pre_execution")
        assert pre.__dict__["invocation_id"] != run_id  # the tool's own invocation
        assert pre.__dict__["tool"] == "lookup"
        assert pre.__dict__["tool_call_id"] == "call-lookup"
        (completed,) = sink.of("on_tool_execution_completed")
        assert completed.levelno == logging.INFO
        assert completed.__dict__["invocation_id"] == run_id
        usage = sink.of("on_llm_token_usage")[0]
        assert (usage.__dict__["input_tokens"], usage.__dict__["output_tokens"]) == (
            7,
            3,
        )
        deltas = sink.of("on_llm_new_delta")
        assert {r.levelno for r in deltas} == {logging.DEBUG}
        assert [r.getMessage() for r in deltas[:2]] == [
            "on_llm_new_delta Let ",
            "on_llm_new_delta me ",
        ]
        assert "on_llm_new_delta lookup: {}" in [r.getMessage() for r in deltas]
        assert "on_llm_new_delta stream complete" in [r.getMessage() for r in deltas]
        assert sink.of("on_run_complete")[0].getMessage() == "on_run_complete status ok"
        starts = sink.of("on_llm_call_start")
        assert [r.getMessage() for r in starts] == [
            "on_llm_call_start ScriptedChatModel, 1 message(s)",
            "on_llm_call_start ScriptedChatModel, 3 message(s)",
        ]
        assert {r.levelno for r in starts} == {logging.DEBUG}
        completes = sink.of("on_llm_call_complete")
        assert [r.getMessage() for r in completes] == [
            "on_llm_call_complete scripted, finish tool_execution",
            "on_llm_call_complete scripted, finish stop",
        ]
        assert completes[0].levelno == logging.INFO
        assert completes[0].__dict__["input_tokens"] == 7

    def test_no_deltas_above_debug(
        self, collect: tuple[logging.Logger, Collect]
    ) -> None:
        """At INFO no delta record is made at all."""
        logger, sink = collect
        logger.setLevel(logging.INFO)
        model = ScriptedChatModel([ScriptedTurn(text="one two three", usage=USAGE)])
        chain = LLMChain(model, callbacks=[LoggingHandler(logger)])
        chain.add_message(Message.user("go")).run()
        assert "on_llm_new_delta" not in sink.events()
        assert "on_llm_token_usage" in sink.events()

    def test_a_raising_tool(self, collect: tuple[logging.Logger, Collect]) -> None:
        """A failed call is a WARNING; the exception an ERROR with its traceback."""
        logger, sink = collect
        model = ScriptedChatModel([tool_turn("broken"), ScriptedTurn(text="Sorry.")])
        chain = LLMChain(model, tools=[BROKEN], callbacks=[LoggingHandler(logger)])
        chain.add_message(Message.user("go")).run()
        (failed,) = sink.of("on_tool_execution_failed")
        assert failed.levelno == logging.WARNING
        assert failed.getMessage() == "on_tool_execution_failed broken failed"
        (raised,) = sink.of("on_tool_execution_exception")
        assert raised.levelno == logging.ERROR
        assert raised.exc_info is not None
        assert isinstance(raised.exc_info[1], RuntimeError)
        assert raised.exc_info[2] is not None

    def test_a_failed_run(self, collect: tuple[logging.Logger, Collect]) -> None:
        """Model errors are WARNINGs; the run's on_error is an ERROR with the error."""
        logger, sink = collect
        error = LangHooksError("authentication", "bad key")
        chain = LLMChain(ScriptedChatModel([error]), callbacks=[LoggingHandler(logger)])
        result = chain.add_message(Message.user("go")).run()
        assert result.status == "error"
        (llm_error,) = sink.of("on_llm_error")
        assert llm_error.levelno == logging.WARNING
        assert llm_error.__dict__["error_type"] == "authentication"
        (final,) = sink.of("on_error")
        assert final.levelno == logging.ERROR
        assert final.exc_info is not None
        assert final.exc_info[1] is error
        assert final.__dict__["error_type"] == "authentication"

    def test_a_retry(self, collect: tuple[logging.Logger, Collect]) -> None:
        """A retried model call logs on_llm_retry at the handler's level, between
        the failure's WARNING and the next attempt, with the wait in its extra."""
        logger, sink = collect
        error = LangHooksError("overloaded", "busy", retryable=True)
        chain = LLMChain(
            ScriptedChatModel([error, ScriptedTurn(text="Done.")]),
            callbacks=[LoggingHandler(logger)],
            retry=RetryPolicy(initial_delay=0.25, jitter=0.0, sleep=lambda s: None),
        )
        assert chain.add_message(Message.user("go")).run().status == "ok"
        events = sink.events()
        at = events.index("on_llm_retry")
        assert events[at - 1 : at + 2] == [
            "on_llm_error",
            "on_llm_retry",
            "on_llm_call_start",
        ]
        (retry,) = sink.of("on_llm_retry")
        assert retry.levelno == logging.INFO
        assert retry.getMessage() == "on_llm_retry retrying in 0.25 s after overloaded"
        assert retry.__dict__["error_type"] == "overloaded"
        assert retry.__dict__["retry_delay"] == 0.25
        assert retry.__dict__["run_id"] == sink.of("on_run_start")[0].__dict__["run_id"]

    def test_review_interrupt_and_denial(
        self, collect: tuple[logging.Logger, Collect]
    ) -> None:
        """Denied and interrupted calls are logged, and the review still decides."""
        from langhooks import Interrupt

        logger, sink = collect

        def review(
            chain: LLMChain, call: ToolCall, tool: Tool, context: ReviewContext
        ) -> Deny | Interrupt:
            if call.name == "broken":
                return Deny("not allowed")
            return Interrupt("ask first")

        model = ScriptedChatModel([tool_turn("broken", "lookup")])
        chain = LLMChain(
            model,
            tools=[BROKEN, LOOKUP],
            callbacks=[
                LoggingHandler(logger),
                chain_callbacks(on_tool_call_review=review),
            ],
        )
        result = chain.add_message(Message.user("go")).run()
        assert result.status == "interrupted"
        reviews = [r.getMessage() for r in sink.of("on_tool_call_review")]
        assert reviews == ["on_tool_call_review broken", "on_tool_call_review lookup"]
        (interrupted,) = sink.of("on_tool_interrupted")
        assert (
            interrupted.getMessage() == "on_tool_interrupted lookup wait(s) for a human"
        )
        (denied,) = sink.of("on_tool_execution_failed")
        assert denied.getMessage() == "on_tool_execution_failed broken failed"
        assert (
            sink.of("on_tool_response_created")[0].getMessage().endswith("2 result(s)")
        )

    def test_rarer_chain_events(self, collect: tuple[logging.Logger, Collect]) -> None:
        """Whole messages, rejections, headers, rate limits and retries each log."""
        logger, sink = collect
        handler = LoggingHandler(logger)
        chain = LLMChain(ScriptedChatModel([]))
        handler.on_llm_new_message(chain, Message.assistant("hi"))
        handler.on_message_processing_error(chain, Message.assistant("bad"))
        handler.on_error_message_created(chain, Message.user("again"))
        handler.on_llm_response_headers(chain, {"x-request-id": "r"})
        handler.on_llm_ratelimit_info(chain, {"remaining": 3})
        handler.on_retries_exceeded(chain)
        review = ReviewContext(human_decision="approve")
        call = ToolCall(call_id="c", name="lookup", arguments={})
        handler.on_tool_call_review(chain, call, LOOKUP, review)
        response = ChatResponse(message=Message.assistant("x"))
        handler.on_llm_call_complete(chain, response)
        handler.on_tool_progress(chain, call, ToolProgress(1, 4, "secret words"))
        handler.on_tool_progress(chain, call, ToolProgress(0.5))
        assert [(r.levelname, r.getMessage()) for r in sink.records] == [
            ("INFO", "on_llm_new_message 0 tool call(s)"),
            (
                "WARNING",
                "on_message_processing_error a message processor rejected the answer",
            ),
            (
                "INFO",
                "on_error_message_created the reply to a rejected answer was added",
            ),
            ("DEBUG", "on_llm_response_headers 1 header(s)"),
            ("DEBUG", "on_llm_ratelimit_info remaining=3"),
            ("WARNING", "on_retries_exceeded 0 failure(s)"),
            ("INFO", "on_tool_call_review lookup (human: approve)"),
            ("INFO", "on_llm_call_complete model"),
            ("INFO", "on_tool_progress lookup at 1 of 4"),
            ("INFO", "on_tool_progress lookup at 0.5"),
        ]
        assert all(r.__dict__["run_id"] is None for r in sink.records)

    async def test_arun(self, collect: tuple[logging.Logger, Collect]) -> None:
        """The same handler logs concurrent async runs, each with its own run id."""
        logger, sink = collect
        handler = LoggingHandler(logger)

        async def one(number: int) -> str:
            model = ScriptedChatModel([ScriptedTurn(text=f"answer {number}")])
            chain = LLMChain(model, callbacks=[handler])
            result = await chain.add_message(Message.user("go")).arun()
            assert result.chain.invocation is not None
            return result.chain.invocation.id

        run_ids = await asyncio.gather(*(one(n) for n in range(5)))
        starts = [r.__dict__["run_id"] for r in sink.of("on_run_start")]
        assert sorted(starts) == sorted(run_ids)


class TestStreamingRecords:
    """As a streaming handler it logs a bare model.stream()."""

    def test_a_stream(self, collect: tuple[logging.Logger, Collect]) -> None:
        """Partials at DEBUG, the complete call and response at INFO, no run id."""
        logger, sink = collect
        model = ScriptedChatModel(
            [
                ScriptedTurn(
                    thinking="hmm",
                    text="Hi",
                    tool_calls=[ToolCall(call_id="c", name="lookup", arguments={})],
                    usage=USAGE,
                )
            ]
        )
        model.stream(ChatRequest([Message.user("hi")]), LoggingHandler(logger))
        assert [(r.levelname, r.getMessage()) for r in sink.records] == [
            ("DEBUG", "on_partial_thinking hmm"),
            ("DEBUG", "on_partial_response Hi"),
            ("DEBUG", "on_partial_tool_call lookup: {}"),
            ("INFO", "on_complete_tool_call lookup"),
            ("INFO", "on_complete_response finish tool_execution"),
        ]
        assert sink.records[-1].__dict__["input_tokens"] == 7
        assert all(r.__dict__["run_id"] is None for r in sink.records)

    def test_stream_error(self, collect: tuple[logging.Logger, Collect]) -> None:
        """A failed stream logs on_error at ERROR with the exception."""
        logger, sink = collect
        error = LangHooksError("overloaded", "busy")
        with pytest.raises(LangHooksError):
            ScriptedChatModel([error]).stream(
                ChatRequest([Message.user("hi")]), LoggingHandler(logger)
            )
        (record,) = sink.records
        assert record.levelno == logging.ERROR
        assert record.__dict__["error_type"] == "overloaded"
        assert record.exc_info is not None
        assert record.exc_info[1] is error

    def test_direct_calls(self, collect: tuple[logging.Logger, Collect]) -> None:
        """Events a scripted stream does not make log too; a plain exception's type
        is its class name."""
        logger, sink = collect
        handler = LoggingHandler(logger)
        handler.on_unmapped_raw_event({"type": "ping"})
        handler.on_error(ValueError("bad"))
        call = ToolCall(call_id="c", name="lookup", arguments={})
        handler.on_complete_tool_call(CompleteToolCall(index=0, tool_call=call))
        assert [r.getMessage() for r in sink.records] == [
            "on_unmapped_raw_event dict",
            "on_error bad",
            "on_complete_tool_call lookup",
        ]
        assert sink.records[1].__dict__["error_type"] == "ValueError"

    def test_on_error_arity(self) -> None:
        """on_error with no or three arguments is a TypeError."""
        handler = LoggingHandler()
        with pytest.raises(TypeError, match=r"takes \(error\)"):
            handler.on_error()  # type: ignore[call-overload]


class TestConfiguration:
    """Defaults and validation."""

    def test_default_logger(self) -> None:
        """Without a logger, records go to 'langhooks.events'."""
        assert LoggingHandler().logger is logging.getLogger("langhooks.events")

    def test_level(self, collect: tuple[logging.Logger, Collect]) -> None:
        """level sets the level of ordinary events."""
        logger, sink = collect
        handler = LoggingHandler(logger, level=logging.DEBUG)
        handler.on_run_start(LLMChain(ScriptedChatModel([])))
        assert sink.records[0].levelno == logging.DEBUG

    def test_below_the_loggers_level(
        self, collect: tuple[logging.Logger, Collect]
    ) -> None:
        """An event below the logger's level makes no record."""
        logger, sink = collect
        logger.setLevel(logging.WARNING)
        handler = LoggingHandler(logger)
        chain = LLMChain(ScriptedChatModel([]))
        handler.on_run_start(chain)
        handler.on_retries_exceeded(chain)
        assert sink.events() == ["on_retries_exceeded"]

    def test_bad_logger(self) -> None:
        """A logger name instead of a Logger is a TypeError saying what to pass."""
        with pytest.raises(TypeError, match=r"logging.getLogger\(name\)"):
            LoggingHandler("langhooks")  # type: ignore[arg-type]

    def test_bad_level(self) -> None:
        """A level that is not an int is a TypeError."""
        with pytest.raises(TypeError, match="level must be a logging level"):
            LoggingHandler(level="INFO")  # type: ignore[arg-type]


class TestStructlog:
    """structlog's stdlib integration renders the records with their extras."""

    def test_json_lines(self) -> None:
        """ProcessorFormatter with ExtraAdder puts the extras in each JSON line."""
        out = io.StringIO()
        stream = logging.StreamHandler(out)
        stream.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=[
                    structlog.stdlib.add_log_level,
                    structlog.stdlib.ExtraAdder(),
                ],
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.JSONRenderer(),
                ],
            )
        )
        logger = logging.getLogger("tests.langhooks.structlog")
        logger.setLevel(logging.INFO)
        logger.propagate = False
        logger.addHandler(stream)
        try:
            model = ScriptedChatModel([tool_turn("lookup"), ScriptedTurn(text="ok")])
            chain = LLMChain(model, tools=[LOOKUP], callbacks=[LoggingHandler(logger)])
            chain.add_message(Message.user("go")).run()
        finally:
            logger.removeHandler(stream)
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        done = next(
            line
            for line in lines
            if line["langhooks_event"] == "on_tool_execution_completed"
        )
        assert done["event"] == "on_tool_execution_completed lookup"
        assert done["level"] == "info"
        assert done["tool"] == "lookup"
        assert done["tool_call_id"] == "call-lookup"
        assert len({line["run_id"] for line in lines}) == 1

"""The observers' output, byte for byte: ``ConsoleHandler`` (plain and coloured),
``LoggingHandler``'s records (level, message, extras, attached exception) and
``langhooks events`` of the same runs' recording, against a golden file.

The runs cover tools, a review that denies and interrupts, a tool that raises,
retries then a fallback model, a run that gives up, streamed deltas, a bare
stream, and every event delivered directly with text a terminal would obey. Ids
are numbered in order of appearance. ``LANGHOOKS_UPDATE_GOLDENS=1`` rewrites the
golden file (review its diff: any change is a change in what users see).
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    ChatResponse,
    CompleteToolCall,
    Deny,
    FinishReason,
    Interrupt,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    PartialToolCall,
    PartialToolCallContext,
    ReviewContext,
    StreamingHandle,
    TokenUsage,
    ToolCall,
    ToolProgress,
    ToolResult,
    chain_callbacks,
)
from langhooks.chain import LLMChain, RetryPolicy, Tool
from langhooks.cli import main
from langhooks.events import EventRecorder
from langhooks.integrations.console import ConsoleHandler
from langhooks.integrations.logging import LoggingHandler
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

GOLDEN = Path(__file__).parent / "goldens" / "observers.txt"

_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class Keep(logging.Handler):
    """Keeps every record."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    @override
    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Terminal(io.StringIO):
    @override
    def isatty(self) -> bool:
        return True


def lookup(arguments: Any, context: Any) -> str:
    return "found\x1b[31m red"


def broken(arguments: Any, context: Any) -> str:
    raise RuntimeError("service\ndown")


LOOKUP = Tool("lookup", lookup, display_text="Look it up")
BROKEN = Tool("broken", broken)
USAGE = TokenUsage(input_tokens=7, output_tokens=3)
NO_SLEEP = RetryPolicy(
    max_attempts=2, initial_delay=0.25, jitter=0.0, sleep=lambda s: None
)


def calls(*names: str) -> ScriptedTurn:
    return ScriptedTurn(
        thinking="Need it.",
        text="Let me see.",
        tool_calls=[
            ToolCall(call_id=f"call-{name}", name=name, arguments={"q": name})
            for name in names
        ],
        usage=USAGE,
    )


def review(
    chain: LLMChain, call: ToolCall, tool: Tool, context: ReviewContext
) -> Deny | Interrupt | None:
    if call.name == "broken" and call.arguments.get("q") == "deny":
        return Deny("not allowed")
    if call.name == "lookup" and call.arguments.get("q") == "ask":
        return Interrupt("ask first")
    return None


def scenario_runs(handlers: list[Any]) -> None:
    """Runs through a chain, with every observer on it."""
    reviewer = chain_callbacks(on_tool_call_review=review)

    def run(model: Any, **kwargs: Any) -> None:
        chain = LLMChain(
            model,
            tools=[LOOKUP, BROKEN],
            callbacks=[*handlers, reviewer],
            retry=NO_SLEEP,
            **kwargs,
        )
        chain.add_message(Message.user("go")).run()

    # tools, streamed thinking, text and calls; a tool that raises
    run(ScriptedChatModel([calls("lookup", "broken"), ScriptedTurn(text="Done.")]))
    # a review that denies one call and interrupts another
    denied = ToolCall(call_id="d", name="broken", arguments={"q": "deny"})
    asked = ToolCall(call_id="a", name="lookup", arguments={"q": "ask"})
    run(ScriptedChatModel([ScriptedTurn(tool_calls=[denied, asked])]))
    # retries, then a fallback model that answers
    busy = LangHooksError("overloaded", "busy", retryable=True)
    run(
        ScriptedChatModel([busy, busy]),
        fallbacks=[ScriptedChatModel([ScriptedTurn(text="Fine.", usage=USAGE)])],
    )
    # a run that gives up
    run(ScriptedChatModel([busy, busy]))
    # a fatal error
    run(ScriptedChatModel([LangHooksError("authentication", "bad\nkey")]))


CALL = ToolCall(call_id="c", name="get_\x1b[31mweather", arguments={"city": "Red"})
FAILED = ToolResult(
    tool_call_id="c", name="get_weather", content="\x1b[2Jdown", is_error=True
)


def every_event(handler: Any, chain: LLMChain) -> None:
    """Every chain event delivered directly, with variants."""
    c = chain
    error = LangHooksError("timeout", "too \x1b[31mslow")
    response = ChatResponse(
        message=Message.assistant("x"),
        finish_reason=FinishReason.STOP,
        token_usage=USAGE,
        model_name="m-1",
    )
    bare = ChatResponse(message=Message.assistant("y"))
    model = ScriptedChatModel([])
    tool = Tool("get_weather", lookup, display_text="Weather\nlookup")
    h = handler
    h.on_run_start(c)
    h.on_llm_call_start(c, model, ChatRequest(messages=[], tools=[tool]))
    h.on_llm_new_delta(c, [MessageDelta(thinking="hm"), MessageDelta(text="a")])
    h.on_llm_new_delta(c, [MessageDelta(text="\x1b[31m b")])
    partial = PartialToolCall(
        index=0, id=None, name="get_weather", partial_arguments='{"c'
    )
    h.on_llm_new_delta(c, [MessageDelta(tool_call=partial)])
    h.on_llm_new_delta(c, [MessageDelta(status="complete", usage=USAGE)])
    h.on_llm_new_delta(c, [MessageDelta(status="length")])
    h.on_llm_call_complete(c, response)
    h.on_llm_call_complete(c, bare)
    h.on_llm_new_message(c, Message.user("x"))
    h.on_llm_ratelimit_info(c, {"remaining": 3, "reset": "1s"})
    h.on_llm_response_headers(c, {"x-a": "1", "x-b": "2"})
    h.on_message_processed(c, Message.assistant("ok"))
    h.on_message_processed(c, Message.tool([FAILED]))
    h.on_message_processing_error(c, Message.assistant("bad"))
    h.on_error_message_created(c, Message.user("fix \x1b[31mit"))
    h.on_tool_call_identified(c, CALL, tool)
    h.on_tool_call_review(c, CALL, tool, ReviewContext())
    h.on_tool_call_review(c, CALL, tool, ReviewContext(human_decision="approve"))
    h.on_tool_execution_started(c, CALL, tool)
    h.on_tool_pre_execution(c, CALL, tool)
    h.on_tool_progress(c, CALL, ToolProgress(3, 4, "\x1b[31mthree"))
    h.on_tool_progress(c, CALL, ToolProgress(0.5))
    h.on_tool_execution_completed(
        c, CALL, ToolResult(tool_call_id="c", name="get_weather", content="sun\nny")
    )
    h.on_tool_execution_failed(c, CALL, FAILED)
    h.on_tool_execution_exception(c, CALL, ValueError("\x1b[31mboom"))
    h.on_tool_interrupted(c, [FAILED, FAILED])
    h.on_tool_response_created(c, Message.tool([FAILED]))
    h.on_llm_token_usage(c, TokenUsage(input_tokens=1, output_tokens=2))
    h.on_llm_error(c, error)
    h.on_llm_retry(c, error, 1.5)
    h.on_retries_exceeded(c)
    h.on_error(c, error)
    h.on_run_complete(c, c.add_message(Message.user("y")).run())


def every_stream_event(handler: Any) -> None:
    """Every streaming event delivered directly."""
    handle = StreamingHandle()
    h = handler
    text = PartialResponse(text="he\x1b[31my")
    h.on_partial_response(text, PartialResponseContext(handle=handle))
    thought = PartialThinking(text="hmm")
    h.on_partial_thinking(thought, PartialThinkingContext(handle=handle))
    partial = PartialToolCall(index=0, id="t", name="f", partial_arguments="{")
    h.on_partial_tool_call(partial, PartialToolCallContext(handle=handle))
    h.on_complete_tool_call(CompleteToolCall(index=0, tool_call=CALL))
    h.on_unmapped_raw_event({"raw": 1})
    h.on_complete_response(
        ChatResponse(
            message=Message.assistant("x"),
            finish_reason=FinishReason.STOP,
            token_usage=USAGE,
        )
    )
    h.on_complete_response(ChatResponse(message=Message.assistant("x")))
    h.on_error(ValueError("stream \x1b[31mbroke"))


def streamed(handler: Any) -> None:
    """A scripted model streamed to ``handler`` (a bare stream), ending in an error."""
    model = ScriptedChatModel(
        [
            ScriptedTurn(
                thinking="Think.",
                text="Some words.",
                tool_calls=[ToolCall(call_id="s", name="lookup", arguments={"q": 1})],
                error=LangHooksError("connection", "lost", retryable=True),
            )
        ]
    )
    request = ChatRequest(messages=[Message.user("go")], tools=[LOOKUP])
    with pytest.raises(LangHooksError):
        model.stream(request, handler)


def _record_line(record: logging.LogRecord) -> str:
    extras = {k: v for k, v in vars(record).items() if k not in _STANDARD}
    line = f"{record.levelname} {record.getMessage()!r} {extras!r}"
    if record.exc_info is not None and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        line += f" exc={type(exc).__name__}:{exc}"
    return line


def _numbered(text: str) -> str:
    """``text`` with each 32-hex id (and its 8-character prefix) numbered."""
    ids: dict[str, str] = {}
    for found in re.findall(r"[0-9a-f]{32}", text):
        ids.setdefault(found, f"<id{len(ids)}>")
    for full, name in ids.items():
        text = text.replace(full, name).replace(full[:8], name[:-1] + ":8>")
    return text


@pytest.fixture
def keep() -> Iterator[tuple[logging.Logger, Keep]]:
    logger = logging.getLogger("tests.langhooks.goldens")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    sink = Keep()
    logger.addHandler(sink)
    yield logger, sink
    logger.removeHandler(sink)


def observe(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    logger: logging.Logger,
    sink: Keep,
    drive: Callable[[list[Any]], None],
) -> str:
    plain, colour = io.StringIO(), Terminal()
    path = tmp_path / "run.jsonl"
    with EventRecorder(path) as recorder:
        drive(
            [
                ConsoleHandler(plain, color=False),
                ConsoleHandler(colour, color=True),
                LoggingHandler(logger),
                recorder,
            ]
        )
    capsys.readouterr()
    assert main(["events", str(path)]) == 0
    events = capsys.readouterr().out
    logs = "".join(_record_line(r) + "\n" for r in sink.records)
    sink.records.clear()
    return (
        f"--- console\n{plain.getvalue()}--- console colour\n{colour.getvalue()!r}\n"
        f"--- logging\n{logs}--- langhooks events\n{events}"
    )


def test_the_observers_output_is_unchanged(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    keep: tuple[logging.Logger, Keep],
) -> None:
    logger, sink = keep
    parts = [f"=== runs\n{observe(tmp_path, capsys, logger, sink, scenario_runs)}"]

    def direct(handlers: list[Any]) -> None:
        chain = LLMChain(ScriptedChatModel([ScriptedTurn(text="ok")]))
        chain.add_message(Message.user("hi"))
        for handler in handlers:
            every_event(handler, chain)

    parts.append(f"=== every event\n{observe(tmp_path, capsys, logger, sink, direct)}")

    def stream(handlers: list[Any]) -> None:
        for handler in handlers:
            if not isinstance(handler, ConsoleHandler):
                every_stream_event(handler)
                streamed(handler)

    parts.append(f"=== streams\n{observe(tmp_path, capsys, logger, sink, stream)}")
    text = _numbered("".join(parts))
    if os.environ.get("LANGHOOKS_UPDATE_GOLDENS"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")

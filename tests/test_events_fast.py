"""A file sink's fast path writes, byte for byte, the records of the reference path.

``EventRecorder`` with a file sink writes each record as JSON text directly
(``langhooks/_persist/_recordtext.py``); with a callable sink it builds an
``EventRecord`` the reference way. Every test here drives both with the same events
and checks each line equals ``langhooks.codec.dumps`` of the reference record (with
the line's time, the one field taken separately), so the two encoders cannot drift.
"""

from __future__ import annotations

import datetime
import io
import json
import re
from typing import Any, cast

import attrs
import pytest

from langhooks import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    FinishReason,
    Invocation,
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
    Tool,
    ToolCall,
    ToolProgress,
    ToolResult,
)
from langhooks._core._jsondata import json_text
from langhooks._persist._recordtext import _MAX_KEPT
from langhooks.chain import ErrorResult, LLMChain, OkResult, RetryPolicy
from langhooks.codec import dumps
from langhooks.events import EventRecord, EventRecorder, read_events, replay_events
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler


def every_event_calls() -> list[tuple[str, tuple[Any, ...]]]:
    """One call of every chain and streaming event, with arguments of every kind
    the recorder meets (non-ASCII text, caller data, schemas, errors, ...)."""
    invocation = Invocation(name="run", custom_context={"user": "ü"})
    chain = LLMChain(
        ScriptedChatModel([]), invocation=invocation, tools=tools()
    ).add_messages([Message.system("Be brief."), Message.user("Weather? ☂")])
    call = ToolCall(call_id="c1", name="weather", arguments={"city": "Zürich"})
    tool = tools()[0]
    result = ToolResult(
        tool_call_id="c1",
        name="weather",
        content=[ContentPart(type="text", content="sunny")],
        display_text="Weather",
        processed_content={"source": "test"},
    )
    answer = Message.assistant("Take an umbrella.", tool_calls=[call])
    response = ChatResponse(
        message=answer,
        id="resp-1",
        model_name="scripted",
        token_usage=TokenUsage(input_tokens=5, output_tokens=7, raw={"t": [1, 2]}),
        finish_reason=FinishReason.TOOL_EXECUTION,
        metadata={"k": 1.25},
    )
    later = chain.add_message(answer)
    failed = attrs.evolve(later, current_failure_count=1)
    error = LangHooksError("rate_limited", "slow down", retryable=True, retry_after=2.5)
    partial_call = PartialToolCall(
        index=0, id="c1", name="weather", partial_arguments='{"ci'
    )
    handle = StreamingHandle()
    interrupted = ToolResult(
        tool_call_id="c1",
        name="weather",
        is_interrupt=True,
        interrupt_data={"ask": "approve?"},
    )
    return [
        ("on_run_start", (chain,)),
        (
            "on_llm_call_start",
            (
                chain,
                ScriptedChatModel([]),
                ChatRequest(messages=chain.messages, tools=chain.tools),
            ),
        ),
        (
            "on_llm_call_start",
            (
                chain,
                ScriptedChatModel([]),
                ChatRequest(messages=[Message.user("other")], tools=[tool]),
            ),
        ),
        (
            "on_llm_new_delta",
            (
                chain,
                (
                    MessageDelta(text="Take "),
                    MessageDelta(thinking="hmm"),
                    MessageDelta(tool_call=partial_call),
                    MessageDelta(usage=TokenUsage(input_tokens=1), status="complete"),
                ),
            ),
        ),
        ("on_llm_new_message", (chain, answer)),
        ("on_llm_ratelimit_info", (chain, {"remaining": 3, "reset": "1s"})),
        ("on_llm_token_usage", (chain, TokenUsage(output_tokens=4))),
        ("on_llm_response_headers", (chain, {"x-request-id": "r1"})),
        ("on_llm_call_complete", (chain, response)),
        ("on_message_processed", (later, answer)),
        ("on_message_processing_error", (later, answer)),
        ("on_error_message_created", (later, Message.user("error: é"))),
        ("on_tool_call_identified", (later, call, tool)),
        (
            "on_tool_call_review",
            (
                later,
                call,
                tool,
                ReviewContext(human_decision="approve", custom_context={"a": [1]}),
            ),
        ),
        ("on_tool_execution_started", (later, call, tool)),
        ("on_tool_pre_execution", (later, call, tool)),
        ("on_tool_progress", (later, call, ToolProgress(1, 5, "1 of 5: é"))),
        ("on_tool_progress", (later, call, ToolProgress(0.5))),
        ("on_tool_execution_completed", (later, call, result)),
        (
            "on_tool_execution_completed",
            (later, call, attrs.evolve(result, processed_content=["a", 1])),
        ),
        (
            "on_tool_execution_failed",
            (later, call, attrs.evolve(result, is_error=True)),
        ),
        ("on_tool_execution_exception", (later, call, ValueError("bad city"))),
        ("on_tool_interrupted", (later, [interrupted])),
        ("on_tool_response_created", (later, Message.tool([result]))),
        ("on_llm_error", (failed, error)),
        ("on_llm_retry", (failed, error, 0.5)),
        ("on_retries_exceeded", (failed,)),
        ("on_error", (failed, error)),
        (
            "on_run_complete",
            (failed, ErrorResult(chain=failed, error=error)),
        ),
        (
            "on_partial_response",
            (PartialResponse(text="Hé"), PartialResponseContext(handle=handle)),
        ),
        (
            "on_partial_thinking",
            (PartialThinking(text="hmm"), PartialThinkingContext(handle=handle)),
        ),
        ("on_partial_tool_call", (partial_call, PartialToolCallContext(handle=handle))),
        ("on_complete_tool_call", (CompleteToolCall(index=0, tool_call=call),)),
        ("on_unmapped_raw_event", ({"type": "ping", "n": 1},)),
        ("on_unmapped_raw_event", (handle,)),
        ("on_complete_response", (response,)),
        ("on_error", (error,)),
    ]


class Pair:
    """Two recorders fed the same events: a text file (the fast path) and a
    callable (the reference path)."""

    def __init__(self) -> None:
        self.text = io.StringIO()
        self.records: list[EventRecord] = []
        self.fast = EventRecorder(self.text)
        self.reference = EventRecorder(self.records.append)

    @property
    def both(self) -> list[EventRecorder]:
        return [self.fast, self.reference]

    def call(self, name: str, *args: Any) -> None:
        for recorder in self.both:
            getattr(recorder, name)(*args)

    def lines(self) -> list[str]:
        return self.text.getvalue().splitlines()

    def assert_identical(self) -> None:
        """Each line is the reference record's JSON, byte for byte."""
        lines = self.lines()
        assert len(lines) == len(self.records)
        for line, record in zip(lines, self.records, strict=True):
            written = datetime.datetime.fromisoformat(json.loads(line)["time"])
            assert line == dumps(attrs.evolve(record, time=written)), record.event


def tools() -> list[Tool]:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "a city, é"}},
        "required": ["city"],
    }
    return [
        Tool("weather", lambda arguments, context: "sunny", parameters_schema=schema),
        Tool("clock", lambda arguments, context: "noon", display_text="Time"),
    ]


def script(turns: int) -> list[ScriptedTurn | LangHooksError]:
    out: list[ScriptedTurn | LangHooksError] = [LangHooksError("overloaded", "busy")]
    for turn in range(turns):
        out.append(
            ScriptedTurn(
                thinking="Let me think… ☂",
                text=f'Checking twice (turn {turn}) \u2014 "quoted"\n',
                tool_calls=[
                    ToolCall(
                        call_id=f"c{turn}-{name}",
                        name=name,
                        arguments={"city": "Zürich", "n": turn, "x": [1.5, None]},
                        index=position,
                    )
                    for position, name in enumerate(("weather", "clock"))
                ],
                usage=TokenUsage(input_tokens=10, output_tokens=3, raw={"a": 1}),
            )
        )
    out.append(ScriptedTurn(text="Done."))
    return out


class TestSameBytes:
    def test_every_event_of_both_interfaces(self) -> None:
        """Every chain and streaming event, with rich arguments, is written as the
        reference path writes it."""
        pair = Pair()
        names = set()
        for name, args in every_event_calls():
            pair.call(name, *args)
            names.add(name)
        pair.assert_identical()
        assert names == set(pair.fast._langhooks_overridden_events())

    def test_agent_runs(self) -> None:
        """Runs with retries, thinking, text, two tool calls a turn and a final
        answer, twice on one recorder, are written as the reference writes them."""
        pair = Pair()
        for _ in range(2):
            chain = LLMChain(
                ScriptedChatModel(script(3)),
                tools=tools(),
                callbacks=pair.both,
                retry=RetryPolicy(sleep=lambda _seconds: None, jitter=0),
            ).add_message(Message.user("Weather in Zürich?"))
            assert chain.run(max_runs=5).status == "ok"
        pair.assert_identical()

    def test_an_older_snapshot_after_a_newer_one(self) -> None:
        """A run's chain snapshot recorded again after a newer one (a concurrent
        tool's, say) carries where its messages differ, as the reference path
        writes it."""
        older = LLMChain(
            ScriptedChatModel([]), invocation=Invocation(name="run")
        ).add_message(Message.user("hi"))
        newer = older.add_message(Message.assistant("hello"))
        pair = Pair()
        for chain in (older, older, newer, older, older):
            pair.call("on_llm_token_usage", chain, TokenUsage(input_tokens=1))
        pair.assert_identical()
        counts = [json.loads(line)["payload"]["chain"] for line in pair.lines()]
        assert [chain.get("messages_from") for chain in counts] == [0, None, 1, 1, None]

    def test_stream(self) -> None:
        """A model's stream into the recorder is written as the reference writes
        it."""
        pair = Pair()
        request = ChatRequest(messages=[Message.user("hi")], tools=tools())
        for recorder in pair.both:
            ScriptedChatModel(script(1)[1:]).stream(request, recorder)
        pair.assert_identical()

    def test_fast_recording_replays(self, tmp_path: Any) -> None:
        """A recording written by the fast path replays the live events."""
        path = tmp_path / "run.jsonl"
        live = RecordingChainHandler()
        with EventRecorder(path) as recorder:
            LLMChain(
                ScriptedChatModel(script(2)[1:]),
                tools=tools(),
                callbacks=[recorder, live],
            ).add_message(Message.user("go")).run(max_runs=4)
        replayed = RecordingChainHandler()
        with path.open(encoding="utf-8") as lines:
            replay_events(read_events(lines), replayed)
        assert [name for name, _ in replayed.events] == [
            name for name, _ in live.events
        ]
        assert replayed.events[-2][1][0].messages == live.events[-2][1][0].messages


class TestFallback:
    def test_unencodable_argument_is_the_same_error(self) -> None:
        """Caller data that is not JSON raises the reference path's error, writes
        nothing, and the next record carries the messages the failed one would
        have (in a run's first record and in a later one)."""
        chain = LLMChain(
            ScriptedChatModel([]), invocation=Invocation(name="run")
        ).add_message(Message.user("hi"))
        bad = ToolCall(call_id="c", name="f", arguments={"when": object()})
        pair = Pair()

        def refused(chain: LLMChain) -> None:
            for recorder in pair.both:
                with pytest.raises(
                    TypeError,
                    match=r"cannot record on_tool_call_identified\(call=...\): "
                    r"cannot encode arguments\[\"when\"\]",
                ):
                    recorder.on_tool_call_identified(chain, bad, tools()[0])

        refused(chain)
        assert pair.text.getvalue() == ""
        pair.call("on_run_start", chain)
        later = chain.add_message(Message.assistant("ok"))
        refused(later)
        pair.call("on_message_processed", later, later.messages[-1])
        pair.assert_identical()
        first, second = (json.loads(line)["payload"]["chain"] for line in pair.lines())
        assert (first["messages_from"], second["messages_from"]) == (0, 1)

    def test_nan_in_a_field_is_the_same_error(self) -> None:
        """A NaN retry delay is refused by both paths alike."""
        chain = LLMChain(ScriptedChatModel([])).add_message(Message.user("hi"))
        error = LangHooksError("timeout", "slow")
        for recorder in Pair().both:
            with pytest.raises(ValueError, match=r"on_llm_retry\(delay=...\)"):
                recorder.on_llm_retry(chain, error, float("nan"))

    def test_a_chain_argument_of_another_type(self) -> None:
        """A chain of a subclass of LLMChain is refused by both paths alike."""

        @attrs.frozen(kw_only=True)
        class MyChain(LLMChain):
            pass

        chain = MyChain(model=ScriptedChatModel([]))
        for recorder in Pair().both:
            with pytest.raises(TypeError, match=r"on_run_start\(chain=...\)"):
                recorder.on_run_start(chain)

    def test_other_values_take_the_reference_encoding(self) -> None:
        """Subclasses, a field of a surprising type and lists of other values are
        written by the reference encoder, with the same bytes."""

        class MyTool(Tool):
            pass

        class Status(str):
            pass

        chain = LLMChain(
            ScriptedChatModel([]), invocation=Invocation(name="run")
        ).add_message(Message.user("hi"))
        call = ToolCall(call_id="c", name="f")
        odd = MessageDelta(text="x")
        object.__setattr__(odd, "status", Status("complete"))
        response = ChatResponse(message=Message.assistant("x"), id="r")
        object.__setattr__(response, "id", Status("r"))
        request = ChatRequest(messages=[], tools=[MyTool("f", lambda a, c: "")])
        pair = Pair()
        pair.call("on_tool_pre_execution", chain, call, MyTool("f", lambda a, c: ""))
        pair.call("on_llm_call_complete", chain, response)
        pair.call("on_llm_call_start", chain, ScriptedChatModel([]), request)
        pair.call("on_llm_new_delta", chain, [odd])
        pair.call("on_llm_new_delta", chain, [MessageDelta(text="y"), "plain"])
        pair.call("on_llm_new_delta", chain, ["plain"])
        for cumulative in (1, 0.5):  # not a bool, in a bool field
            usage = TokenUsage(input_tokens=1)
            object.__setattr__(usage, "cumulative", cumulative)
            pair.call("on_llm_token_usage", chain, usage)
        for concurrent in (True, 1):  # the tool's own bool field
            tool = Tool("g", lambda a, c: "")
            object.__setattr__(tool, "concurrent", concurrent)
            pair.call("on_tool_pre_execution", chain, call, tool)
        pair.assert_identical()

    def test_many_tools(self) -> None:
        """More tools than the recorder keeps the text of are written alike."""
        chain = LLMChain(ScriptedChatModel([])).add_message(Message.user("hi"))
        call = ToolCall(call_id="c", name="f")
        pair = Pair()
        every = [Tool(f"t{i}", lambda a, c: "") for i in range(_MAX_KEPT + 10)]
        for tool in [*every, every[0], every[0]]:
            pair.call("on_tool_execution_started", chain, call, tool)
        pair.assert_identical()

    def test_a_tool_schema_is_read_again_in_each_run(self) -> None:
        """A tool's text is kept for one run: a schema changed between two runs is
        recorded as changed, as the reference path records it."""
        enum: list[str] = ["Paris"]
        tool = Tool(
            "weather",
            lambda arguments, context: "sunny",
            parameters_schema={
                "type": "object",
                "properties": {"city": {"enum": enum}},
            },
        )
        pair = Pair()
        for city in ("Lyon", "Nice"):
            call = ToolCall(call_id=f"c-{city}", name="weather")
            LLMChain(
                ScriptedChatModel(
                    [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="ok")]
                ),
                tools=[tool],
                callbacks=pair.both,
            ).add_message(Message.user("hi")).run()
            enum.append(city)
        pair.assert_identical()
        identified = [
            json.loads(line)["payload"]["tool"]["parameters_schema"]
            for line in pair.lines()
            if '"event":"on_tool_call_identified"' in line
        ]
        assert [schema["properties"]["city"]["enum"] for schema in identified] == [
            ["Paris"],
            ["Paris", "Lyon"],
        ]

    def test_values_are_written_once_per_run(self) -> None:
        """A message, tool call or tool result handed to several events of a run
        is written from its first text: caller data changed in place inside it
        (which the frozen values do not expect) shows in the next run, not in the
        same one; the reference path reads it again each time."""
        arguments: dict[str, Any] = {"city": "Paris"}
        call = ToolCall(call_id="c", name="weather", arguments=arguments)
        chain = LLMChain(
            ScriptedChatModel([]), invocation=Invocation(name="run")
        ).add_message(Message.assistant("", tool_calls=[call]))
        out = io.StringIO()
        recorder = EventRecorder(out)
        recorder.on_tool_execution_started(chain, call, tools()[0])
        cast("dict[str, Any]", call.arguments)["city"] = "Lyon"  # in place
        recorder.on_tool_execution_started(chain, call, tools()[0])
        recorder.on_run_complete(chain, OkResult(chain=chain))
        recorder.on_tool_execution_started(chain, call, tools()[0])
        cities = [
            json.loads(line)["payload"]["call"]["arguments"]["city"]
            for line in out.getvalue().splitlines()
            if '"event":"on_tool_execution_started"' in line
        ]
        assert cities == ["Paris", "Paris", "Lyon"]


class TestJsonText:
    @pytest.mark.parametrize(
        "value",
        ["a\u00e9\ud800\n", 1, -0.0, 1e300, None, True, {"a": [1, 2.5, None]}, {1: 2}],
    )
    def test_same_text_as_json(self, value: Any) -> None:
        """json_text writes what json's compact ASCII encoder writes."""
        reference = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        assert json_text(value) == reference(value)

    @pytest.mark.parametrize(
        ("value", "error"),
        [(float("nan"), ValueError), (object(), TypeError), ({"k": {1j}}, TypeError)],
    )
    def test_same_errors_as_json(self, value: Any, error: type[Exception]) -> None:
        """json_text refuses what json refuses, with json's message."""
        reference = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
        with pytest.raises(error) as expected:
            reference(value)
        with pytest.raises(error, match=re.escape(str(expected.value))):
            json_text(value)


class TestTime:
    @pytest.mark.parametrize(
        "micro",
        [
            1_700_000_000_000_000,
            1_700_000_000_000_001,
            1_700_000_000_123_456,
            1_700_000_001_000_000,
        ],
    )
    def test_iso_text(self, micro: int) -> None:
        """A time is written as datetime.isoformat writes it (no fraction on a
        whole second), also across a change of second."""
        from langhooks._persist._events import _Encoder
        from langhooks._persist._recordtext import RecordText

        text = RecordText(_Encoder())
        text.time(micro - 1_000_000)  # another second first
        second, fraction = divmod(micro, 1_000_000)
        expected = (
            datetime.datetime.fromtimestamp(second, datetime.UTC)
            .replace(microsecond=fraction)
            .isoformat()
        )
        assert text.time(micro) == expected
        assert text.time(micro) == expected

    def test_now(self) -> None:
        """Each record says when it was made, in UTC, in the current second and
        in the next ones alike."""
        out = io.StringIO()
        recorder = EventRecorder(out)
        before = datetime.datetime.now(datetime.UTC)
        for _ in range(3):
            recorder.on_partial_response(
                PartialResponse(text="x"),
                PartialResponseContext(handle=StreamingHandle()),
            )
        after = datetime.datetime.now(datetime.UTC)
        times = [
            datetime.datetime.fromisoformat(json.loads(line)["time"])
            for line in out.getvalue().splitlines()
        ]
        assert before - datetime.timedelta(microseconds=1) <= times[0]
        assert times == sorted(times)
        assert times[-1] <= after
        assert {time.tzinfo for time in times} == {datetime.UTC}

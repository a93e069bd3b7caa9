"""langhooks.events: recording every handler event as data, reading and replaying it."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    ChainCallbackHandler,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
)
from langhooks.chain import Decision, LLMChain, RetryPolicy, RunResult
from langhooks.cli.demo import (
    QUESTION,
    SYSTEM,
    WEATHER_TOOL,
    ApprovalGate,
    scripted_model,
)
from langhooks.codec import encode
from langhooks.events import (
    EventRecord,
    EventRecorder,
    areplay_events,
    read_events,
    replay_events,
)
from langhooks.models import ChatModel, ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler, RecordingStreamingHandler


def demo_run(*handlers: ChainCallbackHandler) -> RunResult:
    """The demo's story: a run interrupted for approval, resumed, continued."""
    chain = LLMChain(
        scripted_model(0.0),
        tools=[WEATHER_TOOL],
        callbacks=[*handlers, ApprovalGate()],
    ).add_messages([Message.system(SYSTEM), Message.user(QUESTION)])
    result = chain.run()
    assert result.status == "interrupted"
    waiting = result.chain.pending_tool_calls
    result = result.chain.execute_tool_calls_with_decisions(
        waiting, [Decision.approve() for _ in waiting]
    )
    assert result.status == "ok"
    result = result.chain.run()
    assert result.status == "ok"
    return result


def comparable(value: Any) -> Any:
    """What replay keeps of an argument: code is rebuilt as stand-ins, errors by
    their fields, chains by their messages and run id."""
    if isinstance(value, LLMChain):
        run_id = None if value.invocation is None else value.invocation.id
        return ("chain", value.messages, run_id, value.current_failure_count)
    if isinstance(value, RunResult):
        return (
            "result",
            value.status,
            comparable(value.chain),
            value.interrupt_data,
            comparable(value.error),
        )
    if isinstance(value, Tool):
        return ("tool", value.name, value.description, value.parameters_schema)
    if isinstance(value, ChatModel):
        recorded = getattr(value, "recorded_class", None)
        return ("model", recorded or type(value).__qualname__)
    if isinstance(value, ChatRequest):
        return ("request", value.messages, comparable(value.tools))
    if isinstance(value, LangHooksError):
        return ("error", value.type, value.message, value.retryable)
    if isinstance(value, tuple | list):
        return tuple(comparable(item) for item in value)
    return value


def assert_same_events(
    live: list[tuple[str, tuple[Any, ...]]], replayed: list[tuple[str, tuple[Any, ...]]]
) -> None:
    assert [name for name, _ in replayed] == [name for name, _ in live]
    for (name, args), (_, again) in zip(live, replayed, strict=True):
        assert comparable(again) == comparable(args), name


class TestRecorder:
    def test_path_sink_json_lines(self, tmp_path: Path) -> None:
        """A path sink gets one codec-encoded EventRecord per line, written by the
        time the run returns."""
        path = tmp_path / "run.jsonl"
        recorder = EventRecorder(path)
        demo_run(recorder)
        lines = path.read_text().splitlines()
        assert len(lines) == recorder.count > 40
        first = json.loads(lines[0])
        assert first["type"] == "EventRecord"
        assert first["event"] == "on_run_start"
        recorder.close()

    def test_path_sink_appends(self, tmp_path: Path) -> None:
        """A path sink appends to what the file holds."""
        path = tmp_path / "run.jsonl"
        path.write_text("")
        with EventRecorder(path) as first:
            demo_run(first)
        with EventRecorder(path) as second:
            demo_run(second)
        assert len(path.read_text().splitlines()) == first.count + second.count

    def test_text_file_sink(self) -> None:
        """A writable text file gets the same lines."""
        out = io.StringIO()
        recorder = EventRecorder(out)
        demo_run(recorder)
        records = list(read_events(out.getvalue().splitlines()))
        assert [r.seq for r in records] == list(range(recorder.count))

    def test_callable_sink_gets_records(self, tmp_path: Path) -> None:
        """A callable sink gets EventRecords equal to what a file sink writes."""
        got: list[EventRecord] = []
        path = tmp_path / "run.jsonl"
        with EventRecorder(path) as to_file:
            demo_run(EventRecorder(got.append), to_file)
        written = list(read_events(path))
        assert [r.event for r in got] == [r.event for r in written]
        assert [dict(r.payload) for r in got] == [dict(r.payload) for r in written]
        assert all(isinstance(r, EventRecord) for r in got)

    def test_bad_sink(self) -> None:
        """A sink that is neither a path, a file nor a callable is a TypeError."""
        with pytest.raises(TypeError, match="sink must be a path"):
            EventRecorder(42)  # type: ignore[arg-type]

    def test_seq_gap_free(self) -> None:
        """seq counts from 0 without gaps, in the order records reach the sink."""
        got: list[EventRecord] = []
        demo_run(EventRecorder(got.append))
        assert [r.seq for r in got] == list(range(len(got)))

    def test_run_id_on_every_record(self) -> None:
        """Every record of a chain run carries the run's invocation id."""
        got: list[EventRecord] = []
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="hello there")]),
            callbacks=[EventRecorder(got.append)],
        ).add_message(Message.user("hi"))
        result = chain.run()
        assert result.chain.invocation is not None
        assert {r.run_id for r in got} == {result.chain.invocation.id}

    def test_records_every_event_of_both_interfaces(self) -> None:
        """The recorder handles every chain and streaming event (made from the
        interfaces' lists)."""
        recorder = EventRecorder(lambda _record: None)
        events = {
            *ChainCallbackHandler._langhooks_own_events,
            *StreamingChatResponseHandler._langhooks_own_events,
        }
        assert recorder._langhooks_overridden_events() == events

    def test_wrong_argument_count(self) -> None:
        """A recording method called with the wrong arguments is a TypeError."""
        recorder = EventRecorder(lambda _record: None)
        with pytest.raises(TypeError, match="takes 1 or 2 arguments, got 3"):
            recorder.on_error(1, 2, 3)  # type: ignore[call-overload]

    def test_stream_events(self) -> None:
        """A stream's events are recorded when the recorder is the stream's
        handler."""
        got: list[EventRecord] = []
        model = ScriptedChatModel(
            [
                ScriptedTurn(
                    thinking="think",
                    text="two words",
                    tool_calls=[ToolCall(call_id="c", name="f", arguments={"a": 1})],
                    usage=TokenUsage(input_tokens=1, output_tokens=2),
                )
            ]
        )
        model.stream(
            ChatRequest(messages=[Message.user("hi")]), EventRecorder(got.append)
        )
        events = [r.event for r in got]
        assert events[0] == "on_partial_thinking"
        assert "on_partial_response" in events
        assert "on_partial_tool_call" in events
        assert "on_complete_tool_call" in events
        assert events[-1] == "on_complete_response"
        assert all(r.run_id is None for r in got)

    async def test_async_run_and_stream(self) -> None:
        """The recorder records in arun and astream too."""
        got: list[EventRecord] = []
        recorder = EventRecorder(got.append)
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="hello")]), callbacks=[recorder]
        ).add_message(Message.user("hi"))
        await chain.arun()
        await ScriptedChatModel([ScriptedTurn(text="again")]).astream(
            ChatRequest(messages=[Message.user("hi")]), recorder
        )
        events = [r.event for r in got]
        assert events[0] == "on_run_start"
        assert "on_run_complete" in events
        assert events[-1] == "on_complete_response"

    async def test_in_async_composites(self) -> None:
        """Async composites of both kinds call the recorder inline."""
        got: list[EventRecord] = []
        recorder = EventRecorder(got.append)
        streaming = AsyncCompositeStreamingHandler([recorder])
        chains = AsyncCompositeChainHandler([recorder])
        await streaming.on_partial_response(
            PartialResponse(text="x"), PartialResponseContext(handle=StreamingHandle())
        )
        await chains.on_run_start(fresh_chain())
        assert [r.event for r in got] == ["on_partial_response", "on_run_start"]

    def test_stream_error_recorded(self) -> None:
        """A stream's on_error is recorded with the error alone (no chain)."""
        got: list[EventRecord] = []
        model = ScriptedChatModel([LangHooksError("timeout", "too slow")])
        with pytest.raises(LangHooksError):
            model.stream(
                ChatRequest(messages=[Message.user("hi")]), EventRecorder(got.append)
            )
        assert [r.event for r in got] == ["on_error"]
        assert set(got[-1].payload) == {"error"}


class TestConcurrency:
    def test_threads(self) -> None:
        """seq is gap-free and matches the order of the sink, from many threads."""
        out = io.StringIO()
        recorder = EventRecorder(out)
        context = PartialResponseContext(handle=StreamingHandle())

        def work(n: int) -> None:
            for i in range(200):
                recorder.on_partial_response(PartialResponse(text=f"{n}:{i}"), context)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        records = list(read_events(out.getvalue().splitlines()))
        assert [r.seq for r in records] == list(range(1600))
        texts = [r.payload["partial"]["text"] for r in records]
        for n in range(8):
            mine = [t for t in texts if t.startswith(f"{n}:")]
            assert mine == [f"{n}:{i}" for i in range(200)]

    def test_concurrent_tools(self) -> None:
        """Concurrent tools record from their worker threads; seq stays gap-free
        and each call's pre-execution record names the tool's invocation."""
        got: list[EventRecord] = []
        barrier = threading.Barrier(4, timeout=10)

        def slow(arguments: Mapping[str, Any], context: ToolContext) -> str:
            barrier.wait()  # all four run at once
            return "done"

        tool = Tool("slow", slow, concurrent=True)
        calls = [
            ToolCall(call_id=f"c{i}", name="slow", arguments={}, index=i)
            for i in range(4)
        ]
        chain = LLMChain(
            ScriptedChatModel(
                [ScriptedTurn(tool_calls=calls), ScriptedTurn(text="ok")]
            ),
            tools=[tool],
            callbacks=[EventRecorder(got.append)],
        ).add_message(Message.user("go"))
        assert chain.run().status == "ok"
        assert [r.seq for r in got] == list(range(len(got)))
        pre = [r for r in got if r.event == "on_tool_pre_execution"]
        assert len(pre) == 4
        assert len({r.invocation_id for r in pre}) == 4
        assert {r.parent_id for r in pre} == {got[0].run_id}

    async def test_tasks(self) -> None:
        """seq is gap-free across concurrent async runs sharing one recorder."""
        got: list[EventRecord] = []
        recorder = EventRecorder(got.append)

        async def one(n: int) -> None:
            chain = LLMChain(
                ScriptedChatModel([ScriptedTurn(text=f"answer {n} " * 5)], delay=0.001),
                callbacks=[recorder],
            ).add_message(Message.user("hi"))
            await chain.arun()

        await asyncio.gather(*(one(n) for n in range(6)))
        assert [r.seq for r in got] == list(range(len(got)))
        assert len({r.run_id for r in got}) == 6


class TestReplay:
    def test_demo_replays_equal(self, tmp_path: Path) -> None:
        """Replaying a recording of the demo gives the same methods, order and
        arguments as the live run."""
        live = RecordingChainHandler()
        path = tmp_path / "demo.jsonl"
        with EventRecorder(path) as recorder:
            demo_run(live, recorder)
        replayed = RecordingChainHandler()
        replay_events(read_events(path), replayed)
        assert_same_events(live.events, replayed.events)

    @pytest.mark.parametrize(
        "turns",
        [
            [LangHooksError("overloaded", "busy"), ScriptedTurn(text="fine")],
            [LangHooksError("authentication", "bad key")],
        ],
        ids=["retried", "failed"],
    )
    def test_retries_and_errors_replay_equal(self, turns: list[Any]) -> None:
        """A retried model call and a failed run replay with equal arguments
        (errors by their fields, the retry's delay as recorded)."""
        live = RecordingChainHandler()
        got: list[EventRecord] = []
        policy = RetryPolicy(sleep=lambda _seconds: None, jitter=0)
        chain = LLMChain(
            ScriptedChatModel(turns),
            callbacks=[live, EventRecorder(got.append)],
            retry=policy,
        ).add_message(Message.user("hi"))
        chain.run()
        replayed = RecordingChainHandler()
        replay_events(got, replayed)
        assert_same_events(live.events, replayed.events)
        assert {"on_llm_error"} <= set(live.names)

    def test_stream_replays_equal(self) -> None:
        """Replaying a recorded stream gives the same partials and response."""
        live = RecordingStreamingHandler()
        got: list[EventRecord] = []
        turn = ScriptedTurn(
            thinking="t",
            text="a b c",
            tool_calls=[ToolCall(call_id="c", name="f", arguments={"a": [1]})],
        )
        request = ChatRequest(messages=[Message.user("hi")])
        ScriptedChatModel([turn]).stream(request, live)
        ScriptedChatModel([turn]).stream(request, EventRecorder(got.append))
        replayed = RecordingStreamingHandler()
        replay_events(got, replayed)
        assert replayed.names == live.names
        for (name, args), (_, again) in zip(live.events, replayed.events, strict=True):
            # A partial's context carries a fresh cancel handle on replay.
            assert again[0] == args[0], name

    def test_chain_handler_skips_stream_events(self) -> None:
        """A chain handler gets a mixed recording's chain events only."""
        got: list[EventRecord] = []
        recorder = EventRecorder(got.append)
        ScriptedChatModel([ScriptedTurn(text="x")]).stream(
            ChatRequest(messages=[Message.user("hi")]), recorder
        )
        chain_handler = RecordingChainHandler()
        replay_events(got, chain_handler)
        assert chain_handler.names == []

    def test_not_a_handler(self) -> None:
        """replay_events needs a sync handler."""
        with pytest.raises(TypeError, match="replay_events drives"):
            replay_events([], object())  # type: ignore[arg-type]

    def test_an_async_handler_is_sent_to_the_async_twin(self) -> None:
        """replay_events refuses an async handler and names areplay_events."""
        with pytest.raises(TypeError, match=r"async twin \(areplay_events\)"):
            replay_events([], AsyncChainRecorder())  # type: ignore[arg-type]


class AsyncChainRecorder(AsyncChainCallbackHandler):
    """Records, through awaited methods, the events a chain run's replay needs."""

    def __init__(self) -> None:
        self.events: list[tuple[str, tuple[Any, ...]]] = []

    @override
    async def on_run_start(self, chain: LLMChain) -> None:
        await asyncio.sleep(0)
        self.events.append(("on_run_start", (chain,)))

    @override
    async def on_tool_execution_completed(
        self, chain: LLMChain, call: ToolCall, result: ToolResult
    ) -> None:
        await asyncio.sleep(0)
        self.events.append(("on_tool_execution_completed", (chain, call, result)))

    @override
    async def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        await asyncio.sleep(0)
        self.events.append(("on_run_complete", (chain, result)))


class TestAsyncReplay:
    """areplay_events drives any handler, awaiting an async one's methods."""

    async def test_an_async_handler_gets_the_live_events(self, tmp_path: Path) -> None:
        """An async chain handler receives the demo's events as a live one would."""
        live = RecordingChainHandler()
        path = tmp_path / "demo.jsonl"
        with EventRecorder(path) as recorder:
            demo_run(live, recorder)
        replayed = AsyncChainRecorder()
        await areplay_events(read_events(path), replayed)
        wanted = {"on_run_start", "on_tool_execution_completed", "on_run_complete"}
        assert_same_events(
            [event for event in live.events if event[0] in wanted], replayed.events
        )
        assert [name for name, _ in replayed.events].count("on_run_start") == 3

    async def test_a_sync_handler_is_called_inline(self, tmp_path: Path) -> None:
        """A sync handler replays through areplay_events exactly as through
        replay_events."""
        got: list[EventRecord] = []
        demo_run(EventRecorder(got.append))
        inline = RecordingChainHandler()
        await areplay_events(got, inline)
        again = RecordingChainHandler()
        replay_events(got, again)
        assert_same_events(again.events, inline.events)

    async def test_not_a_handler(self) -> None:
        """areplay_events needs a langhooks handler."""
        with pytest.raises(TypeError, match="areplay_events drives a langhooks"):
            await areplay_events([], object())  # type: ignore[arg-type]


class TestReadEvents:
    def lines(self) -> list[str]:
        out = io.StringIO()
        demo_run(EventRecorder(out))
        return out.getvalue().splitlines(keepends=True)

    def test_truncated_last_line_reported(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A crashed writer's half line at the end is logged and skipped; every
        record before it is read."""
        lines = self.lines()
        path = tmp_path / "crashed.jsonl"
        path.write_text("".join(lines) + lines[3][:25])
        with caplog.at_level(logging.WARNING, logger="langhooks"):
            records = list(read_events(path))
        assert len(records) == len(lines)
        assert f"line {len(lines) + 1}, the last line, is incomplete" in caplog.text

    def test_bad_middle_line(self) -> None:
        """A broken line that is not the last is a ValueError with its number."""
        lines = self.lines()
        lines[2] = lines[2][:10] + "\n"
        with pytest.raises(ValueError, match="line 3 is not JSON"):
            list(read_events(lines))

    def test_blank_lines_skipped(self) -> None:
        """Blank lines are skipped."""
        lines = self.lines()
        assert len(list(read_events(["\n", *lines, "\n", "  "]))) == len(lines)

    def test_bytes_lines(self) -> None:
        """Lines may be bytes."""
        lines = [line.encode() for line in self.lines()]
        assert len(list(read_events(lines))) == len(lines)

    def test_empty(self) -> None:
        """An empty source has no records."""
        assert list(read_events([])) == []

    def test_not_a_record(self) -> None:
        """A line holding another value type is a ValueError."""
        line = json.dumps(encode(Message.user("x")))
        with pytest.raises(ValueError, match="line 1 holds a Message"):
            list(read_events([line]))

    def test_invalid_record(self) -> None:
        """A line that is JSON but not a valid record is a ValueError."""
        with pytest.raises(ValueError, match="line 1: unknown type tag"):
            list(read_events(['{"type": "Nope", "version": 1}']))

    def test_lazy(self) -> None:
        """read_events reads lines only as records are asked for."""
        lines = self.lines()
        seen: list[str] = []

        def source() -> Any:
            for line in lines:
                seen.append(line)
                yield line

        records = read_events(source())
        next(records)
        assert len(seen) == 2  # one record and the line after it


def fresh_chain() -> LLMChain:
    """A chain that never ran (no invocation)."""
    return LLMChain(ScriptedChatModel([])).add_message(Message.user("hi"))


class CustomError(Exception):
    """An exception class outside builtins."""


class TestPayloads:
    def record(self, call: Any) -> tuple[EventRecord, list[tuple[str, Any]]]:
        """Record one event made by ``call(recorder)``; replay it."""
        got: list[EventRecord] = []
        call(EventRecorder(got.append))
        replayed = RecordingChainHandler()
        streamed = RecordingStreamingHandler()
        replay_events(got, replayed)
        replay_events(got, streamed)
        return got[-1], [*replayed.events, *streamed.events]

    def test_chain_outside_a_run(self) -> None:
        """A chain with no invocation is recorded with no run id."""
        record, replayed = self.record(lambda r: r.on_run_start(fresh_chain()))
        assert record.run_id is None
        assert record.invocation_id is None
        assert replayed[0][1][0].invocation is None
        assert replayed[0][1][0].messages == fresh_chain().messages

    def test_mappings(self) -> None:
        """Mapping arguments (headers, rate limits) are tagged data, even with a
        "type" key of their own."""
        headers = {"type": "Message", "x-request-id": "r1"}
        record, replayed = self.record(
            lambda r: r.on_llm_response_headers(fresh_chain(), headers)
        )
        assert record.payload["headers"] == {"type": "Mapping", "value": headers}
        assert replayed[0][1][1] == headers

    def test_unencodable_argument(self) -> None:
        """An argument that cannot be recorded is a TypeError naming the event."""
        recorder = EventRecorder(lambda _record: None)
        with pytest.raises(
            TypeError, match=r"cannot record on_llm_ratelimit_info\(info=...\)"
        ):
            recorder.on_llm_ratelimit_info(fresh_chain(), {"reset": object()})

    @pytest.mark.parametrize(
        ("error", "expected"),
        [
            (ValueError("bad city"), ValueError("bad city")),
            (CustomError("boom"), Exception("tests.test_events.CustomError: boom")),
            (SystemExit("bye"), Exception("builtins.SystemExit: bye")),
        ],
    )
    def test_exceptions(self, error: BaseException, expected: Exception) -> None:
        """A tool's exception is recorded by class and message; a builtin
        Exception class comes back as itself, another as an Exception naming it."""
        call = ToolCall(call_id="c", name="f")
        _, replayed = self.record(
            lambda r: r.on_tool_execution_exception(fresh_chain(), call, error)
        )
        again = replayed[0][1][2]
        assert type(again) is type(expected)
        assert str(again) == str(expected)

    def test_raw_events(self) -> None:
        """A JSON raw event is recorded as data; any other as its marked repr."""

        class SdkEvent:
            @override
            def __repr__(self) -> str:
                return "SdkEvent(kind='ping')"

        _, json_event = self.record(lambda r: r.on_unmapped_raw_event({"type": "ping"}))
        _, text_event = self.record(lambda r: r.on_unmapped_raw_event("ping"))
        record, other = self.record(lambda r: r.on_unmapped_raw_event(SdkEvent()))
        _, nan = self.record(lambda r: r.on_unmapped_raw_event({"x": float("nan")}))
        assert nan[0][1] == ("{'x': nan}",)
        assert json_event[0][1] == ({"type": "ping"},)
        assert text_event[0][1] == ("ping",)
        assert record.payload["raw_event"]["type"] == "Repr"
        assert other[0][1] == ("SdkEvent(kind='ping')",)

    def test_unknown_argument_type(self) -> None:
        """An argument of a type the recorder does not know is a TypeError naming
        the event, never its str()."""
        recorder = EventRecorder(lambda _record: None)
        with pytest.raises(TypeError, match=r"on_tool_pre_execution\(tool=...\)"):
            recorder.on_tool_pre_execution(
                fresh_chain(),
                ToolCall(call_id="c", name="f"),
                object(),  # type: ignore[arg-type]
            )

    def test_request_with_other_messages(self) -> None:
        """A request whose messages are not the chain's is recorded in full."""
        request = ChatRequest(messages=[Message.user("other")], tools=[WEATHER_TOOL])
        model = ScriptedChatModel([])
        record, replayed = self.record(
            lambda r: r.on_llm_call_start(fresh_chain(), model, request)
        )
        assert "messages" in record.payload["request"]
        again = replayed[0][1][2]
        assert again.messages == request.messages
        assert [tool.name for tool in again.tools] == ["get_weather"]

    def test_recorded_code_cannot_run(self) -> None:
        """A replayed model and tool are stand-ins that refuse to run."""
        model = ScriptedChatModel([])
        _, replayed = self.record(
            lambda r: r.on_llm_call_start(
                fresh_chain(), model, ChatRequest(messages=[], tools=[WEATHER_TOOL])
            )
        )
        stand_in, request = replayed[0][1][1], replayed[0][1][2]
        assert stand_in.recorded_class == "ScriptedChatModel"
        assert "recorded ScriptedChatModel" in repr(stand_in)
        with pytest.raises(LangHooksError, match="is a recording"):
            stand_in.stream(request, RecordingStreamingHandler())
        with pytest.raises(RuntimeError, match="stands in for the real one"):
            request.tools[0].function({}, None)

    async def test_recorded_model_async(self) -> None:
        """The stand-in model refuses astream too."""
        _, replayed = self.record(
            lambda r: r.on_llm_call_start(
                fresh_chain(), ScriptedChatModel([]), ChatRequest(messages=[])
            )
        )
        with pytest.raises(LangHooksError, match="is a recording"):
            await replayed[0][1][1].astream(
                ChatRequest(messages=[]), RecordingStreamingHandler()
            )

    def test_flush_and_repr(self) -> None:
        """flush() writes a file sink's buffer; repr names the sink."""
        out = io.StringIO()
        recorder = EventRecorder(out)
        recorder.on_run_start(fresh_chain())
        recorder.flush()
        EventRecorder(lambda _record: None).flush()
        assert "EventRecorder(<_io.StringIO" in repr(recorder)
        assert len(out.getvalue().splitlines()) == 1

    def test_close_keeps_a_given_file_open(self) -> None:
        """close() flushes a given file and leaves it open (the caller owns it)."""
        out = io.StringIO()
        EventRecorder(out).close()
        EventRecorder(lambda _record: None).close()
        assert not out.closed


class TestReplayErrors:
    def record(self, **changes: Any) -> EventRecord:
        got: list[EventRecord] = []
        EventRecorder(got.append).on_run_start(fresh_chain())
        return attrs.evolve(got[0], **changes)

    def test_unknown_event(self) -> None:
        """A record of an event no interface has is a ValueError."""
        with pytest.raises(ValueError, match="'on_nothing', which is not an event"):
            replay_events([self.record(event="on_nothing")], RecordingChainHandler())

    def test_missing_argument(self) -> None:
        """A record without one of the event's arguments is a ValueError."""
        with pytest.raises(ValueError, match="has no 'chain' in its payload"):
            replay_events([self.record(payload={})], RecordingChainHandler())

    def test_messages_not_carried(self) -> None:
        """A record referring to messages no earlier record carried (a recording
        read from its middle) is a ValueError."""
        payload = {
            "chain": {
                "type": "LLMChain",
                "message_count": 3,
                "current_failure_count": 0,
            }
        }
        with pytest.raises(ValueError, match="replay a recording from its start"):
            replay_events([self.record(payload=payload)], RecordingChainHandler())

    def test_failure_count_change(self) -> None:
        """A later record with the same messages but another failure count gets a
        chain with that count."""
        got: list[EventRecord] = []
        recorder = EventRecorder(got.append)
        chain = fresh_chain()
        recorder.on_run_start(chain)
        recorder.on_retries_exceeded(attrs.evolve(chain, current_failure_count=2))
        recorder.on_retries_exceeded(attrs.evolve(chain, current_failure_count=2))
        replayed = RecordingChainHandler()
        replay_events(got, replayed)
        counts = [args[0].current_failure_count for _, args in replayed.events]
        assert counts == [0, 2, 2]

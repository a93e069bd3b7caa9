"""Run state: an interrupted run saved in one process and resumed in another."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest

import langhooks as lh
from langhooks import (
    Interrupt,
    Message,
    ReviewContext,
    StreamingChatResponseHandler,
    Tool,
    ToolCall,
    ToolContext,
)
from langhooks._persist._codec import decode_state as _decode_state
from langhooks.chain import Decision, LLMChain, RunResult
from langhooks.codec import SCHEMA_VERSION, dumps, loads
from langhooks.events import EventRecord, EventRecorder, read_events
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler
from tests._services import need_postgres

ROOT = Path(__file__).resolve().parent.parent.parent


def book(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that needs a human's approval: books a table."""
    return f"booked {arguments['table']} for {context.custom_context['guest']}"


def menu(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that runs without approval."""
    return "soup, fish"


def tools() -> list[Tool]:
    """The tools, built the same way in every process."""
    return [
        Tool("book_table", book, description="Book a table."),
        Tool("get_menu", menu, description="Today's menu."),
    ]


def gate(call: ToolCall, tool: Tool, review: ReviewContext) -> Interrupt | None:
    """Interrupts bookings that no human approved yet."""
    if tool.name == "book_table" and review.human_decision is None:
        return Interrupt("book?", {"table": call.arguments["table"]})
    return None


FIRST = ScriptedTurn(
    text="Let me look.",
    tool_calls=[
        ToolCall(call_id="c1", name="get_menu", arguments={}),
        ToolCall(call_id="c2", name="book_table", arguments={"table": 4}, index=1),
    ],
)
SECOND = ScriptedTurn(text="Booked table 4; there is soup and fish.")


def interrupted() -> tuple[RunResult, RecordingChainHandler]:
    """The first process: a run that stops for the booking's approval."""
    handler = RecordingChainHandler(review=gate)
    chain = LLMChain(
        ScriptedChatModel([FIRST, SECOND]),
        tools=tools(),
        callbacks=[handler],
        custom_context={"guest": "Ada"},
        max_retry_count=5,
    ).add_message(Message.user("Book table 4 and tell me the menu."))
    result = chain.run()
    assert result.status == "interrupted"
    return result, handler


def resume(chain: LLMChain, events: Path) -> LLMChain:
    """Approve what waits, then continue to the answer, recording the events."""
    with EventRecorder(events) as recorder:
        chain = chain.add_callback(recorder)
        waiting = chain.pending_tool_calls
        resumed = chain.execute_tool_calls_with_decisions(
            waiting, [Decision.approve() for _ in waiting]
        )
        assert resumed.status == "ok"
        done = resumed.chain.run()
        assert done.status == "ok"
    return done.chain


def model_after_first_turn() -> ScriptedChatModel:
    """The scripted model as the first process left it: its first turn served (a
    scripted model numbers its responses)."""
    model = ScriptedChatModel([FIRST, SECOND])
    model.stream(
        ChatRequest(messages=[Message.user("-")]), StreamingChatResponseHandler()
    )
    return model


def resume_from_file(state_path: str, out: str) -> None:
    """The second process: load the saved state, resume, write what happened."""
    state = json.loads(Path(state_path).read_text())
    chain = LLMChain.from_state(
        state,
        model_after_first_turn(),
        tools=tools(),
        callbacks=[RecordingChainHandler(review=gate)],
    )
    final = resume(chain, Path(out) / "events.jsonl")
    (Path(out) / "messages.json").write_text(
        json.dumps([dumps(message) for message in final.messages])
    )


def comparable(records: list[EventRecord]) -> list[tuple[str, Any]]:
    """What two resumes must share: each event and its arguments."""
    return [(r.event, dict(r.payload)) for r in records]


class TestCrossProcessResume:
    def test_resume_in_another_process(self, tmp_path: Path) -> None:
        """An interrupted run saved to JSON, resumed in a separate Python process,
        gives the same events and final messages as a resume in this process."""
        result, _ = interrupted()
        state_path = tmp_path / "state.json"
        state_path.write_text(json.dumps(result.chain.to_state()))
        out = tmp_path / "elsewhere"
        out.mkdir()
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from tests.chain.test_state import resume_from_file; "
                "resume_from_file(sys.argv[1], sys.argv[2])",
                str(state_path),
                str(out),
            ],
            cwd=ROOT,
            check=True,
            timeout=120,
        )
        here = resume(result.chain, tmp_path / "here.jsonl")
        there = [
            loads(text) for text in json.loads((out / "messages.json").read_text())
        ]
        assert there == list(here.messages)
        records_there = list(read_events(out / "events.jsonl"))
        records_here = list(read_events(tmp_path / "here.jsonl"))
        assert comparable(records_there) == comparable(records_here)
        assert result.chain.invocation is not None
        run_id = result.chain.invocation.id
        assert {r.run_id for r in records_there} == {run_id}
        assert {r.run_id for r in records_here} == {run_id}


class TestToState:
    def test_json_round_trip(self) -> None:
        """to_state is JSON; from_state gives back the messages, context, counters
        and the run's invocation."""
        result, _ = interrupted()
        chain = result.chain
        state = json.loads(json.dumps(chain.to_state()))
        loaded = LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())
        assert loaded.messages == chain.messages
        assert loaded.custom_context == chain.custom_context
        assert loaded.max_retry_count == 5
        assert loaded.current_failure_count == chain.current_failure_count
        assert loaded.invocation == chain.invocation
        assert loaded.pending_tool_calls == chain.pending_tool_calls

    def test_state_fields(self) -> None:
        """The state is tagged and versioned and lists tools and waiting calls."""
        result, _ = interrupted()
        state = result.chain.to_state()
        assert state["type"] == "LLMChainState"
        assert state["version"] == SCHEMA_VERSION
        assert state["tools"] == ["book_table", "get_menu"]
        assert [c["call_id"] for c in state["pending_tool_calls"]] == ["c2"]

    def test_max_retry_count_given(self) -> None:
        """max_retry_count given to from_state replaces the saved one."""
        result, _ = interrupted()
        state = result.chain.to_state()
        loaded = LLMChain.from_state(
            state, ScriptedChatModel([]), tools=tools(), max_retry_count=9
        )
        assert loaded.max_retry_count == 9

    def test_unencodable_custom_context(self) -> None:
        """A non-JSON custom_context is a TypeError naming its path."""
        chain = LLMChain(ScriptedChatModel([]), custom_context={"db": object()})
        with pytest.raises(TypeError, match=r'custom_context\["db"\]'):
            chain.to_state()

    def test_unencodable_arguments(self) -> None:
        """A non-JSON tool argument is a TypeError naming the message and call."""
        call = ToolCall(call_id="c", name="f", arguments={"when": {1, 2}})
        chain = LLMChain(ScriptedChatModel([])).add_messages(
            [Message.user("hi"), Message.assistant("", tool_calls=[call])]
        )
        with pytest.raises(
            TypeError, match=r'messages\[1\]\.tool_calls\[0\]\.arguments\["when"\]'
        ):
            chain.to_state()

    def test_fresh_chain(self) -> None:
        """A chain that never ran saves without an invocation."""
        state = LLMChain(ScriptedChatModel([])).to_state()
        assert state["invocation"] is None
        assert LLMChain.from_state(state, ScriptedChatModel([])).invocation is None


class TestFromStateErrors:
    def state(self) -> dict[str, Any]:
        result, _ = interrupted()
        return result.chain.to_state()

    def test_missing_tool(self) -> None:
        """A saved tool that is not given is a ValueError naming it."""
        with pytest.raises(ValueError, match=r"not given: \['book_table'\]"):
            LLMChain.from_state(self.state(), ScriptedChatModel([]), tools=tools()[1:])

    def test_decision_for_a_call_not_waiting(self) -> None:
        """A decision for a call that does not wait is a ValueError naming it."""
        chain = LLMChain.from_state(self.state(), ScriptedChatModel([]), tools=tools())
        other = ToolCall(call_id="c9", name="book_table", arguments={"table": 4})
        with pytest.raises(ValueError, match=r"'c9' is not waiting.*waiting: \['c2'\]"):
            chain.execute_tool_calls_with_decisions([other], [Decision.approve()])

    def test_not_a_state(self) -> None:
        """Something other than a saved chain is a ValueError."""
        with pytest.raises(ValueError, match="not a saved chain"):
            LLMChain.from_state(
                json.loads(dumps(Message.user("x"))), ScriptedChatModel([])
            )

    def test_not_a_mapping(self) -> None:
        """from_state takes a mapping."""
        with pytest.raises(TypeError, match="got str"):
            LLMChain.from_state("{}", ScriptedChatModel([]))  # type: ignore[arg-type]

    def test_newer_version(self) -> None:
        """A state from a newer schema is a ValueError saying so."""
        state = self.state()
        state["version"] = SCHEMA_VERSION + 1
        with pytest.raises(ValueError, match="newer than this langhooks reads"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())

    def test_missing_field(self) -> None:
        """A state without a field is a ValueError naming it."""
        state = self.state()
        del state["custom_context"]
        with pytest.raises(ValueError, match="'custom_context' is missing"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())

    def test_bad_invocation(self) -> None:
        """A state whose invocation is malformed is a ValueError."""
        state = self.state()
        state["invocation"]["started_at"] = 3
        with pytest.raises(ValueError, match="started_at must be an ISO 8601 str"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())

    def test_bad_message(self) -> None:
        """A malformed message is a ValueError naming its position."""
        state = self.state()
        state["messages"][1]["role"] = "robot"
        with pytest.raises(ValueError, match=r"messages\[1\]: role must be"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())

    def test_message_missing_field(self) -> None:
        """A message without a field is a ValueError naming both."""
        state = self.state()
        del state["messages"][0]["status"]
        with pytest.raises(ValueError, match=r"messages\[0\] has no 'status'"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())

    def test_messages_not_a_list(self) -> None:
        """messages must be a list."""
        state = self.state()
        state["messages"] = {}
        with pytest.raises(ValueError, match="messages must be a list"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())

    def test_changed_pending_calls(self) -> None:
        """Pending calls that do not match the messages are a ValueError."""
        state = self.state()
        state["pending_tool_calls"] = []
        with pytest.raises(ValueError, match="pending tool calls do not match"):
            LLMChain.from_state(state, ScriptedChatModel([]), tools=tools())


class TestRunId:
    def test_kept_across_resume(self) -> None:
        """The interrupted run, its resume and the run() after it share one id."""
        got: list[EventRecord] = []
        result, _ = interrupted()
        chain = result.chain.add_callback(EventRecorder(got.append))
        assert chain.invocation is not None
        waiting = chain.pending_tool_calls
        resumed = chain.execute_tool_calls_with_decisions(waiting, [Decision.approve()])
        resumed.chain.run()
        assert {r.run_id for r in got} == {chain.invocation.id}

    def test_tools_run_under_the_kept_id(self) -> None:
        """The resumed tool's invocation is a child of the kept run."""
        got: list[EventRecord] = []
        result, _ = interrupted()
        chain = result.chain.add_callback(EventRecorder(got.append))
        chain.execute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.approve()]
        )
        pre = [r for r in got if r.event == "on_tool_pre_execution"]
        assert chain.invocation is not None
        assert [r.parent_id for r in pre] == [chain.invocation.id]
        assert pre[0].invocation_id != chain.invocation.id

    def test_new_question_new_id(self) -> None:
        """A run after a finished answer is a new run with a new id."""
        chain = LLMChain(
            ScriptedChatModel([ScriptedTurn(text="a"), ScriptedTurn(text="b")])
        ).add_message(Message.user("1"))
        first = chain.run().chain
        second = first.add_message(Message.user("2")).run().chain
        assert first.invocation is not None
        assert second.invocation is not None
        assert first.invocation.id != second.invocation.id

    async def test_kept_in_async_resume(self) -> None:
        """The async resume and arun keep the run id too."""
        got: list[EventRecord] = []
        result, _ = interrupted()
        chain = result.chain.add_callback(EventRecorder(got.append))
        resumed = await chain.aexecute_tool_calls_with_decisions(
            chain.pending_tool_calls, [Decision.approve()]
        )
        await resumed.chain.arun()
        assert chain.invocation is not None
        assert {r.run_id for r in got} == {chain.invocation.id}


GUIDE = ROOT / "docs" / "guide" / "persistence.md"


class TestGuide:
    def test_examples_run(self) -> None:
        """docs/guide/persistence.md's examples run as written, in order, but for
        the inbox's PostgreSQL: the test's server (``LANGHOOKS_TEST_POSTGRES_URL``)
        and a schema of the test's own, dropped afterwards, for "inbox" (a schema
        another checkout's tests left at another version must not matter)."""
        url = need_postgres()
        schema = f"langhooks_test_{uuid.uuid4().hex}"
        text = GUIDE.read_text()
        assert _GUIDE_STORE in text
        text = text.replace(
            _GUIDE_STORE, f"PostgresRunStore({url!r}, schema={schema!r})"
        )
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        assert len(blocks) >= 5
        namespace: dict[str, Any] = {"__name__": "persistence_guide"}
        try:
            for index, block in enumerate(blocks):
                exec(
                    compile(block, f"persistence.md example {index}", "exec"), namespace
                )
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


#: The store the persistence guide's inbox example makes, as the guide writes it.
_GUIDE_STORE = (
    'PostgresRunStore("postgresql://postgres@127.0.0.1:5432/test", schema="inbox")'
)


class TestStateCodec:
    def test_the_runtime_loads_the_codec_on_first_use(self) -> None:
        """Importing the runtime does not load the state codec; the first
        to_state() does, by a plain import (which the layer test sees)."""
        code = (
            "import sys\n"
            "from langhooks.chain import LLMChain\n"
            "from langhooks.models import ScriptedChatModel\n"
            "assert 'langhooks.chain._state_codec' not in sys.modules\n"
            "state = LLMChain(ScriptedChatModel([])).to_state()\n"
            "assert state['type'] == 'LLMChainState'\n"
            "assert 'langhooks.chain._state_codec' in sys.modules\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr

    def test_the_codec_and_the_runtime_agree(self) -> None:
        """langhooks.codec's state functions are the runtime's own."""
        chain = LLMChain(ScriptedChatModel([]), messages=[Message.user("hi")])
        state = chain.to_state()
        assert _decode_state(state)["messages"] == list(chain.messages)
        assert LLMChain.from_state(state, chain.model).messages == chain.messages


class TestStateSince:
    """chain.state_since: what changed since an earlier chain, or a count."""

    def _chain(self) -> LLMChain:
        model = ScriptedChatModel([ScriptedTurn(text="Hi.")])
        return LLMChain(model).add_message(lh.Message.user("hello")).run().chain

    def test_appended_edited_and_counted(self) -> None:
        earlier = self._chain()
        later = earlier.add_messages([lh.Message.user("more")])
        changes = later.state_since(earlier)
        assert changes["since"] == 2
        assert len(changes["messages"]) == 1
        whole = {
            **changes,
            "messages": earlier.to_state()["messages"] + changes["messages"],
        }
        assert LLMChain.from_state(whole, later.model).messages == later.messages
        edited = attrs.evolve(
            later, messages=(lh.Message.user("hi"), *later.messages[1:])
        )
        assert edited.state_since(earlier)["since"] == 0
        assert later.state_since(1)["messages"] == later.to_state()["messages"][1:]

    def test_bad_earlier(self) -> None:
        chain = self._chain()
        with pytest.raises(ValueError, match="between 0"):
            chain.state_since(3)
        with pytest.raises(TypeError, match="LLMChain or a number"):
            chain.state_since(True)

    def test_the_path_names_the_position_in_the_conversation(self) -> None:
        """A message that cannot be encoded is named by its position in the
        whole conversation, not among the changes."""
        odd = lh.Message(role="user", content="odd", metadata={"when": object()})
        chain = self._chain().add_messages([odd])
        with pytest.raises(TypeError, match=r"messages\[2\]"):
            chain.state_since(1)

"""``agui_events`` and ``ui_message_chunks``: recorded runs as frontend protocols."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pydantic
import pytest
from ag_ui import core as agui

from langhooks.chain import Decision
from langhooks.events import EventRecord, EventRecorder, read_events
from langhooks.integrations.agui import agui_events
from langhooks.integrations.ui_messages import ui_message_chunks

from ._frontend_agent import ANSWER, FIRST_TEXT, FORECAST, THINKING, WeatherAgent
from ._frontend_runs import (
    QUESTION,
    cancelled_run,
    denied_run,
    error_run,
    flaky_run,
    progress_run,
    recorded,
    resumed,
    two_calls_run,
    weather_run,
    whole_run,
)

EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(agui.Event)


def events(records: Iterable[EventRecord]) -> list[dict[str, Any]]:
    """The AG-UI events of ``records``, each checked against the protocol's
    own models."""
    out = list(agui_events(records, thread_id="thread", run_id="run"))
    for event in out:
        EVENT.validate_python(event)
    return out


def kinds(items: Sequence[dict[str, Any]]) -> list[str]:
    """The ``type`` of each item, runs of one type collapsed to one."""
    return [kind for kind, _ in itertools.groupby(item["type"] for item in items)]


def of(items: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The items of one ``type``."""
    return [item for item in items if item["type"] == kind]


def joined(items: Sequence[dict[str, Any]], kind: str, key: str = "delta") -> str:
    """The ``key`` of every item of ``kind``, joined."""
    return "".join(item[key] for item in of(items, kind))


class TestAguiEvents:
    """Records of a run in, AG-UI core 1.0 events out."""

    def test_an_interrupted_run(self) -> None:
        """Thinking, text and the streamed call, then a snapshot and an interrupt."""
        _, _, records = weather_run()
        out = events(records)
        assert kinds(out) == [
            "RUN_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "MESSAGES_SNAPSHOT",
            "RUN_FINISHED",
        ]
        assert out[0] == {"type": "RUN_STARTED", "threadId": "thread", "runId": "run"}
        assert joined(out, "REASONING_MESSAGE_CONTENT") == THINKING
        assert joined(out, "TEXT_MESSAGE_CONTENT") == FIRST_TEXT
        (start,) = of(out, "TOOL_CALL_START")
        text_id = of(out, "TEXT_MESSAGE_START")[0]["messageId"]
        assert start == {
            "type": "TOOL_CALL_START",
            "toolCallId": "call_1",
            "toolCallName": "get_weather",
            "parentMessageId": text_id,
        }
        assert json.loads(joined(out, "TOOL_CALL_ARGS")) == {"city": "Paris"}
        finished = out[-1]
        (interrupt,) = finished["outcome"]["interrupts"]
        run_id = records[0].run_id
        assert finished["outcome"]["type"] == "interrupt"
        assert interrupt == {
            "id": f"{run_id}/call_1",
            "reason": "tool_approval",
            "message": "get_weather calls an external service: approve?",
            "toolCallId": "call_1",
        }

    def test_the_snapshot_holds_the_conversation_without_the_waiting_result(
        self,
    ) -> None:
        """The snapshot has the question, the thinking and the answer with its
        call, and no result for the call that waits (nor the system message)."""
        _, _, records = weather_run()
        (snapshot,) = of(events(records), "MESSAGES_SNAPSHOT")
        messages = snapshot["messages"]
        assert [m["role"] for m in messages] == ["user", "reasoning", "assistant"]
        assert messages[0]["content"] == QUESTION
        assert messages[1]["content"] == THINKING
        (call,) = messages[2]["toolCalls"]
        assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}

    def test_an_approved_resume(self) -> None:
        """The resumed part: the tool's result, then the final answer."""
        agent, result, _ = weather_run()
        out = events(resumed(agent, result, Decision.approve()))
        assert kinds(out) == [
            "RUN_STARTED",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
        (result_event,) = of(out, "TOOL_CALL_RESULT")
        assert result_event["toolCallId"] == "call_1"
        assert result_event["content"] == FORECAST
        assert result_event["metadata"] == {"langhooks.tool_outcome": "output"}
        assert joined(out, "TEXT_MESSAGE_CONTENT") == ANSWER
        assert "outcome" not in out[-1]
        assert agent.runs == [{"city": "Paris"}]

    def test_a_rejected_resume(self) -> None:
        """A rejection answers the call with its reason, marked as denied in
        the event's metadata (a client tells it from a completed call); the
        tool never runs."""
        agent, result, _ = weather_run()
        out = events(resumed(agent, result, Decision.reject("Not now.")))
        (denial,) = of(out, "TOOL_CALL_RESULT")
        assert denial["content"] == "Not now."
        assert denial["metadata"] == {"langhooks.tool_outcome": "denied"}
        assert agent.runs == []

    def test_a_denial(self) -> None:
        """A review's denial is the call's result; the run goes on to answer."""
        out = events(denied_run())
        (result,) = of(out, "TOOL_CALL_RESULT")
        assert result["content"].endswith("Weather lookups are switched off.")
        assert result["metadata"] == {"langhooks.tool_outcome": "denied"}
        assert out[-1]["type"] == "RUN_FINISHED"

    def test_several_calls_in_one_answer(self) -> None:
        """Each call starts under the same answer, ends, and gets its result."""
        out = events(two_calls_run())
        starts = of(out, "TOOL_CALL_START")
        assert [s["toolCallId"] for s in starts] == ["a", "b"]
        assert {s["parentMessageId"] for s in starts} == {
            of(out, "TEXT_MESSAGE_START")[0]["messageId"]
        }
        assert [e["toolCallId"] for e in of(out, "TOOL_CALL_END")] == ["a", "b"]
        assert [r["toolCallId"] for r in of(out, "TOOL_CALL_RESULT")] == ["a", "b"]
        args = {
            call: json.loads(
                "".join(
                    e["delta"]
                    for e in of(out, "TOOL_CALL_ARGS")
                    if e["toolCallId"] == call
                )
            )
            for call in "ab"
        }
        assert args == {"a": {"city": "Paris"}, "b": {"city": "Lyon"}}

    def test_tool_progress(self) -> None:
        """Each progress report is a CUSTOM "langhooks.tool_progress" event, in
        order, before the call's result."""
        out = events(progress_run())
        custom = of(out, "CUSTOM")
        assert [(e["name"], e["value"]) for e in custom] == [
            (
                "langhooks.tool_progress",
                {
                    "toolCallId": "a",
                    "toolName": "get_weather",
                    "progress": 1.0,
                    "total": 2.0,
                    "message": "fetching",
                },
            ),
            (
                "langhooks.tool_progress",
                {
                    "toolCallId": "a",
                    "toolName": "get_weather",
                    "progress": 2.0,
                    "total": 2.0,
                    "message": None,
                },
            ),
        ]
        assert kinds(out).index("CUSTOM") < kinds(out).index("TOOL_CALL_RESULT")

    def test_a_failing_tool(self) -> None:
        """A tool that raised has its error as the result the model reads."""
        out = events(two_calls_run(failing=True))
        results = of(out, "TOOL_CALL_RESULT")
        assert all("the weather service is down" in r["content"] for r in results)
        assert {r["metadata"]["langhooks.tool_outcome"] for r in results} == {"error"}

    def test_an_error(self) -> None:
        """A run that gives up ends with RUN_ERROR carrying the error's type."""
        out = events(error_run())
        assert out[-1] == {
            "type": "RUN_ERROR",
            "message": "the key is wrong",
            "code": "authentication",
        }

    def test_a_cancelled_answer(self) -> None:
        """A cancelled answer finishes the run with the "cancelled" outcome."""
        out = events(cancelled_run())
        assert joined(out, "TEXT_MESSAGE_CONTENT") == "Sun"
        assert out[-1]["outcome"] == {"type": "cancelled"}

    def test_answers_that_were_not_streamed(self) -> None:
        """An answer that arrives whole is sent as if it had streamed."""
        out = events(whole_run())
        assert joined(out, "REASONING_MESSAGE_CONTENT") == "Look it up."
        assert of(out, "TEXT_MESSAGE_CONTENT")[0]["delta"] == "One moment."
        args = [e["delta"] for e in of(out, "TOOL_CALL_ARGS")]
        assert [json.loads(a) for a in args] == [{"city": "Oslo"}, {"city": "Bergen"}]
        assert [r["toolCallId"] for r in of(out, "TOOL_CALL_RESULT")] == ["w", "v"]

    def test_a_retried_model_call(self) -> None:
        """A failed attempt's message and call are ended; the retry answers as a
        new message, and a call streamed without an id starts once it is known."""
        out = events(flaky_run())
        first, second = (e["messageId"] for e in of(out, "TEXT_MESSAGE_START"))
        assert second == f"{first}.2"
        assert [e["toolCallId"] for e in of(out, "TOOL_CALL_END")] == ["x", "y"]
        late = [e["delta"] for e in of(out, "TOOL_CALL_ARGS") if e["toolCallId"] == "y"]
        assert late == ['{"city":"Rome"}']

    def test_a_recording_translates_as_the_live_records(self, tmp_path: Path) -> None:
        """Records read back from a JSON Lines file give the same events."""
        agent = WeatherAgent()
        path = tmp_path / "run.jsonl"
        with path.open("w", encoding="utf-8") as file:
            _, live = recorded(agent([]).add_callback(EventRecorder(file)))
        assert events(read_events(path)) == events(live)

    def test_a_recording_that_goes_on_after_the_interrupt(self) -> None:
        """The resumed part of one recording starts again with RUN_STARTED."""
        agent, result, first = weather_run()
        out = events([*first, *resumed(agent, result, Decision.approve())])
        assert [e["type"] for e in out].count("RUN_STARTED") == 2
        assert [e["type"] for e in out].count("RUN_FINISHED") == 2


class TestUiMessageChunks:
    """Records of a run in, AI SDK UI message stream chunks out."""

    def test_an_interrupted_run(self) -> None:
        """One message: a step with reasoning, text and the streamed call, the
        approval request, and "tool-calls" as the finish reason."""
        _, _, records = weather_run()
        out = list(ui_message_chunks(records))
        assert kinds(out) == [
            "start",
            "start-step",
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-end",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
            "tool-approval-request",
            "finish-step",
            "finish",
        ]
        run_id = records[0].run_id
        assert out[0] == {"type": "start", "messageId": run_id}
        assert joined(out, "reasoning-delta") == THINKING
        assert joined(out, "text-delta") == FIRST_TEXT
        assert of(out, "tool-input-start") == [
            {
                "type": "tool-input-start",
                "toolCallId": "call_1",
                "toolName": "get_weather",
            }
        ]
        assert json.loads(joined(out, "tool-input-delta", "inputTextDelta")) == {
            "city": "Paris"
        }
        assert of(out, "tool-input-available")[0]["input"] == {"city": "Paris"}
        assert of(out, "tool-approval-request") == [
            {
                "type": "tool-approval-request",
                "approvalId": f"{run_id}/call_1",
                "toolCallId": "call_1",
            }
        ]
        assert out[-1] == {"type": "finish", "finishReason": "tool-calls"}

    def test_an_approved_resume(self) -> None:
        """The continuation: the same message id, the output, a step with the
        answer, and "stop"."""
        agent, result, first = weather_run()
        out = list(ui_message_chunks(resumed(agent, result, Decision.approve())))
        assert kinds(out) == [
            "start",
            "tool-output-available",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ]
        assert out[0]["messageId"] == first[0].run_id
        assert of(out, "tool-output-available")[0]["output"] == FORECAST
        assert joined(out, "text-delta") == ANSWER
        assert out[-1] == {"type": "finish", "finishReason": "stop"}

    def test_a_rejected_resume(self) -> None:
        """A human rejection is tool-output-denied."""
        agent, result, _ = weather_run()
        out = list(ui_message_chunks(resumed(agent, result, Decision.reject())))
        assert of(out, "tool-output-denied") == [
            {"type": "tool-output-denied", "toolCallId": "call_1"}
        ]

    def test_a_denial(self) -> None:
        """A review's denial is tool-output-denied too."""
        out = list(ui_message_chunks(denied_run()))
        assert [c["toolCallId"] for c in of(out, "tool-output-denied")] == ["call_1"]

    def test_several_calls_and_a_failing_tool(self) -> None:
        """Two calls in one step, each with its input; a raising tool is
        tool-output-error with the error text."""
        out = list(ui_message_chunks(two_calls_run(failing=True)))
        available = of(out, "tool-input-available")
        assert [(c["toolCallId"], c["input"]) for c in available] == [
            ("a", {"city": "Paris"}),
            ("b", {"city": "Lyon"}),
        ]
        errors = of(out, "tool-output-error")
        assert [c["toolCallId"] for c in errors] == ["a", "b"]
        assert "the weather service is down" in errors[0]["errorText"]
        assert [e["type"] for e in out].count("start-step") == 2

    def test_tool_progress(self) -> None:
        """Each progress report is a data-tool-progress part with the call's id
        (a later one replaces the earlier), before the call's output."""
        out = list(ui_message_chunks(progress_run()))
        parts = of(out, "data-tool-progress")
        assert [
            (p["id"], p["data"]["progress"], p["data"]["message"]) for p in parts
        ] == [
            ("a", 1.0, "fetching"),
            ("a", 2.0, None),
        ]
        assert parts[0]["data"]["total"] == 2.0
        assert kinds(out).index("data-tool-progress") < kinds(out).index(
            "tool-output-available"
        )

    def test_tool_outputs(self) -> None:
        """Tools that ran are tool-output-available, in call order."""
        out = list(ui_message_chunks(two_calls_run()))
        assert [c["toolCallId"] for c in of(out, "tool-output-available")] == ["a", "b"]

    def test_an_error(self) -> None:
        """A run that gives up ends with an error chunk."""
        out = list(ui_message_chunks(error_run()))
        assert out[-1] == {
            "type": "error",
            "errorText": "authentication: the key is wrong",
        }

    def test_a_cancelled_answer(self) -> None:
        """A cancelled answer ends the step and aborts the message."""
        out = list(ui_message_chunks(cancelled_run()))
        assert kinds(out)[-2:] == ["finish-step", "abort"]

    def test_answers_that_were_not_streamed(self) -> None:
        """An answer that arrives whole is sent as parts all the same."""
        out = list(ui_message_chunks(whole_run()))
        assert joined(out, "reasoning-delta") == "Look it up."
        assert of(out, "text-delta")[0]["delta"] == "One moment."
        assert of(out, "tool-input-available")[0]["input"] == {"city": "Oslo"}

    def test_a_retried_model_call(self) -> None:
        """A failed attempt's half-streamed call is tool-input-error; the retry
        is a new step with its own part ids."""
        out = list(ui_message_chunks(flaky_run()))
        (abandoned,) = of(out, "tool-input-error")
        assert abandoned["toolCallId"] == "x"
        ids = [c["id"] for c in of(out, "text-start")]
        assert len(set(ids)) == 2
        assert [e["type"] for e in out].count("start-step") == 2


@pytest.mark.parametrize("translate", ["agui", "ui"])
def test_records_outside_a_run_are_skipped(translate: str) -> None:
    """Records before a run starts (a bare stream's) give nothing."""
    record = EventRecord(seq=0, event="on_partial_response", payload={})
    if translate == "agui":
        assert list(agui_events([record], thread_id="t", run_id="r")) == []
    else:
        assert list(ui_message_chunks([record])) == []

"""The official JavaScript clients against the frontend apps, served by uvicorn on
127.0.0.1 and driven by Node: ``@ag-ui/client``'s ``HttpAgent`` and AI SDK 6's
stream readers and chat (``tests/js``, pinned in ``package.json`` and its lock
file)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from langhooks.integrations._auth import TokenAuth
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app

from .._services import need_command, unavailable
from ._frontend_agent import (
    ANSWER,
    FIRST_TEXT,
    FORECAST,
    QUESTION,
    THINKING,
    WeatherAgent,
)
from ._web_harness import serving
from .test_client_tools import ANSWER as CLIENT_ANSWER
from .test_client_tools import ClientAgent, Review

JS = Path(__file__).parents[1] / "js"
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGI = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]
_DATA = re.compile(rb"^data: ", re.MULTILINE)


def node() -> str:
    """Node, with the pinned clients installed (skip, or fail under CI, without)."""
    path = need_command("node", "install Node.js 20 or later")
    for package in ("@ag-ui/client", "ai"):
        if not (JS / "node_modules" / package / "package.json").is_file():
            unavailable(
                f"the JavaScript client {package} is not installed: run "
                f"`npm ci --prefix tests/js`",
                "the JavaScript clients (npm ci --prefix tests/js)",
            )
    return path


class Counting:
    """An ASGI wrapper counting the ``data:`` lines each answer sends."""

    def __init__(self, app: ASGI) -> None:
        self.app = app
        self.sent: list[int] = []

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        lines = 0

        async def counted(message: Message) -> None:
            nonlocal lines
            if message["type"] == "http.response.body":
                lines += len(_DATA.findall(message.get("body", b"")))
            await send(message)

        await self.app(scope, receive, counted)
        if scope["type"] == "http":
            self.sent.append(lines)


def drive(script: str, app: Any, token: str | None = None) -> dict[str, Any]:
    """Run ``tests/js/<script>`` against ``app`` (sending ``token`` as a bearer
    token with every request); its JSON summary."""
    program = node()
    with serving(app) as url:
        done = subprocess.run(
            [program, str(JS / script), url, QUESTION, *([token] if token else [])],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


def text_of(events: list[dict[str, Any]], kind: str) -> str:
    """The deltas of every event of ``kind``, joined."""
    return "".join(e["delta"] for e in events if e["type"] == kind)


class TestAguiClient:
    """``HttpAgent.runAgent`` through an interrupt and its resume."""

    @pytest.mark.parametrize("token", [None, "js-token"])
    def test_interrupt_then_resume(self, token: str | None) -> None:
        """The client sees thinking, text, the call with its arguments, the
        interrupt, then the result and the answer; a repeated resume is a
        conflict; a refused resume reaches the client's error as a RUN_ERROR
        event; the tool ran once; every event sent was received. Behind a
        token, sent with the client's headers option, alike."""
        agent = WeatherAgent()
        authorize = None if token is None else TokenAuth(token)
        app = Counting(create_agui_app(agent=agent, authorize=authorize))
        summary = drive("agui_roundtrip.mjs", app, token)
        first, second, repeated = (summary[k] for k in ("first", "second", "repeated"))
        assert first["error"] is None
        events = first["events"]
        assert text_of(events, "REASONING_MESSAGE_CONTENT") == THINKING
        assert text_of(events, "TEXT_MESSAGE_CONTENT") == FIRST_TEXT
        (start,) = (e for e in events if e["type"] == "TOOL_CALL_START")
        assert (start["toolCallId"], start["toolCallName"]) == ("call_1", "get_weather")
        assert json.loads(text_of(events, "TOOL_CALL_ARGS")) == {"city": "Paris"}
        assert first["types"][-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert first["finished"]["outcome"] == "interrupt"
        (interrupt,) = summary["interrupts"]
        assert interrupt["reason"] == "tool_approval"
        assert interrupt["toolCallId"] == "call_1"

        assert second["error"] is None
        assert second["finished"]["outcome"] == "success"
        (result,) = (e for e in second["events"] if e["type"] == "TOOL_CALL_RESULT")
        assert result["content"] == FORECAST
        assert text_of(second["events"], "TEXT_MESSAGE_CONTENT") == ANSWER
        assert second["pendingInterrupts"] == []
        conversation = [
            (m["role"], m.get("content"), [c["id"] for c in m.get("toolCalls", [])])
            for m in second["messages"]
        ]
        assert conversation == [
            ("user", QUESTION, []),
            ("reasoning", THINKING, []),
            ("assistant", FIRST_TEXT, ["call_1"]),
            ("tool", FORECAST, []),
            ("assistant", ANSWER, []),
        ]

        (outcome,) = (m for m in second["messages"] if m["role"] == "tool")
        assert outcome["metadata"] == {"langhooks.tool_outcome": "output"}

        assert repeated["types"] == ["RUN_STARTED", "RUN_ERROR"]
        assert repeated["events"][-1]["code"] == "conflict"
        assert agent.runs == [{"city": "Paris"}]
        refusal = summary["refused"]["refusal"]
        assert refusal["status"] == 400
        assert refusal["payload"]["type"] == "RUN_ERROR"
        assert refusal["payload"]["code"] == "bad_request"
        assert "payload must be" in refusal["payload"]["message"]
        received = [len(part["events"]) for part in (first, second, repeated)]
        assert [*received, 0] == app.sent


class TestAiSdkClient:
    """AI SDK 6's ``parseJsonEventStream`` + ``readUIMessageStream`` through an
    approval and its answer."""

    @pytest.mark.parametrize("token", [None, "js-token"])
    def test_approval_round_trip(self, token: str | None) -> None:
        """The client builds one assistant message: thinking, text, the call with
        its input waiting for approval, then, continued, its output and the
        answer; a repeated approval runs nothing; the tool ran once; every chunk
        sent was parsed. Behind a token sent as a header, alike."""
        agent = WeatherAgent()
        authorize = None if token is None else TokenAuth(token)
        app = Counting(create_ui_message_app(agent=agent, authorize=authorize))
        summary = drive("ui_message_roundtrip.mjs", app, token)
        first, second, repeated = (summary[k] for k in ("first", "second", "repeated"))
        for answer in (first, second):
            assert (answer["status"], answer["header"], answer["errors"]) == (
                200,
                "v1",
                [],
            )
        kinds = {chunk["type"] for chunk in first["chunks"]}
        assert {
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
        } == kinds
        step, reasoning, text, tool = first["message"]["parts"]
        assert step == {"type": "step-start"}
        assert reasoning["text"] == THINKING
        assert text["text"] == FIRST_TEXT
        assert tool["type"] == "tool-get_weather"
        assert tool["state"] == "approval-requested"
        assert tool["input"] == {"city": "Paris"}

        message = second["message"]
        assert message["id"] == first["message"]["id"]
        tool = message["parts"][3]
        assert tool["state"] == "output-available"
        assert tool["output"] == FORECAST
        assert tool["approval"]["approved"] is True
        assert message["parts"][-1]["text"] == ANSWER

        assert repeated["status"] == 409
        # useChat's error is the reason itself, not a JSON object.
        assert repeated["shown"].startswith("these approvals were answered already")
        assert agent.runs == [{"city": "Paris"}]
        # Each stream also sends its closing `data: [DONE]`, which is no chunk.
        parsed = [len(first["chunks"]) + 1, len(second["chunks"]) + 1, 0]
        assert parsed == app.sent


PICKED = {"color": "#a0c4ff", "mood": "calm"}


class TestAguiClientTool:
    """``HttpAgent`` with a frontend tool passed in ``runAgent({tools})``: the run
    finishes with the call pending, the script runs it and runs the agent
    again with its result."""

    @pytest.mark.parametrize("review", [False, True])
    def test_the_client_runs_the_tool_once_and_the_model_reads_it(
        self, review: bool
    ) -> None:
        """The client sees ``pendingToolCallIds``, runs the tool once, and its
        result is what the model reads before the answer; a stale tab posting
        the same result gets a "conflict" RUN_ERROR. With a review asking
        first, the interrupt comes before the call reaches the client, and
        the resume's RUN_FINISHED names it pending."""
        reviewer = Review(["pick_color"]) if review else None
        agent = ClientAgent(declare=False, review=reviewer)
        summary = drive("agui_client_tool.mjs", create_agui_app(agent=agent))
        assert summary["ran"] == [{"mood": "calm"}]
        runs = summary["runs"]
        assert all(r["error"] is None for r in runs)
        outcomes = [r["finished"]["outcome"] for r in runs]
        waiting = runs[-2]["finished"]
        assert waiting["pendingToolCallIds"] == ["call_1"]
        assert "TOOL_CALL_RESULT" not in runs[-2]["types"]
        if review:
            assert outcomes == ["interrupt", "success", "success"]
            assert summary["approvals"] == ["call_1"]
            assert "TOOL_CALL_END" in runs[0]["types"]
            assert reviewer is not None
            assert reviewer.seen == [None, "approve", "edit"]
        else:
            assert outcomes == ["success", "success"]
            assert summary["approvals"] == []
        assert runs[-1]["finished"]["pendingToolCallIds"] == []
        assert summary["answer"] == CLIENT_ANSWER
        ((call_id, content, is_error),) = agent.tool_results_read()
        assert (call_id, json.loads(content), is_error) == ("call_1", PICKED, False)
        repeated = summary["repeated"]
        assert repeated["types"] == ["RUN_STARTED", "RUN_ERROR"]
        assert repeated["code"] == "conflict"
        assert agent.model.remaining == 0


class TestAiSdkClientTool:
    """AI SDK 6's ``AbstractChat`` (what ``useChat`` wraps) with a client-side
    tool: ``onToolCall`` runs it, ``addToolOutput`` answers, and
    ``sendAutomaticallyWhen`` posts again."""

    @pytest.mark.parametrize("review", [False, True])
    def test_on_tool_call_runs_the_tool_once_and_the_model_reads_it(
        self, review: bool
    ) -> None:
        """``onToolCall`` fires once; the automatic re-send resumes the run
        with the output, which the model reads; the answer continues the same
        assistant message; the same output posted again is refused (409). With
        a review asking first, ``onToolCall`` fires only after the approval."""
        reviewer = Review(["pick_color"]) if review else None
        agent = ClientAgent(review=reviewer)
        summary = drive(
            "ui_message_client_tool.mjs", create_ui_message_app(agent=agent)
        )
        assert summary["ran"] == [{"mood": "calm"}]
        assert (summary["errors"], summary["status"]) == ([], "ready")
        if review:
            assert summary["approvals"] == ["call_1"]
            assert summary["requests"] == [200, 200, 200]
            assert reviewer is not None
            assert reviewer.seen == [None, "approve", "edit"]
        else:
            assert summary["approvals"] == []
            assert summary["requests"] == [200, 200]
        user, assistant = summary["messages"]
        assert user["role"] == "user"
        (tool,) = [p for p in assistant["parts"] if p["type"] == "tool-pick_color"]
        assert (tool["toolCallId"], tool["state"]) == ("call_1", "output-available")
        assert summary["answer"] == CLIENT_ANSWER
        ((call_id, content, is_error),) = agent.tool_results_read()
        assert (call_id, json.loads(content), is_error) == ("call_1", PICKED, False)
        assert summary["repeated"]["status"] == 409
        assert "pick_color ('call_1')" in summary["repeated"]["shown"]
        assert agent.model.remaining == 0

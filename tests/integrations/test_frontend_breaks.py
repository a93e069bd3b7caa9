"""What the third adversarial pass broke in the AG-UI and UI-message apps, pinned
(issue 37): conversations langhooks refuses are 400s, a PostgreSQL store keeps a
thread id with a NUL, and a new message while approvals wait names them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
from typing_extensions import override

from langhooks import (
    ChainCallbackHandler,
    Interrupt,
    Message,
    ReviewContext,
    ReviewDecision,
    ToolCall,
    ToolContext,
)
from langhooks.chain import LLMChain, Tool
from langhooks.integrations._frontends._records import tool_result_text
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.postgres import PostgresRunStore
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.integrations.web import create_app
from langhooks.models import ScriptedChatModel, ScriptedTurn

from ._frontend_agent import WeatherAgent
from ._web_harness import serving
from .test_agui_app import answers, approve, run_input
from .test_run_stores import postgres_schema
from .test_ui_message_app import USER, assistant_of, chat, chunks


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served apps."""
    with httpx.Client(timeout=30) as http:
        yield http


def _refused(response: httpx.Response, status: int, words: str) -> None:
    """A refusal in its protocol's shape: AG-UI a ``RUN_ERROR`` event, the UI
    message app plain text (the AI SDK shows the body as the error)."""
    assert response.status_code == status, response.text
    assert words in _reason(response)


def _reason(response: httpx.Response) -> str:
    if response.headers["content-type"].startswith("text/plain"):
        return response.text
    event = response.json()
    assert event["type"] == "RUN_ERROR"
    return str(event["message"])


def _agui_call(call_id: str, name: str) -> list[dict[str, Any]]:
    return [
        {"id": "u", "role": "user", "content": "Weather?"},
        {
            "id": "a",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": "{}"},
                }
            ],
        },
    ]


def _ui_call(kind: str, call_id: str) -> list[dict[str, Any]]:
    part = {
        "type": kind,
        "toolCallId": call_id,
        "state": "output-available",
        "input": {},
        "output": "sunny",
    }
    if kind == "dynamic-tool":
        part["toolName"] = ""
    return [USER, {"id": "a", "role": "assistant", "parts": [part]}]


class TestEmptyToolIds:
    """A tool call with an empty id or name is a 400, never a 500 (issue 37, 5)."""

    @pytest.mark.parametrize(
        ("call_id", "name", "words"),
        [("", "get_weather", "call_id"), ("call_1", "", "name")],
    )
    def test_agui(
        self, client: httpx.Client, call_id: str, name: str, words: str
    ) -> None:
        """AG-UI: an assistant message's tool call with "" as id or name."""
        with serving(create_agui_app(agent=WeatherAgent())) as url:
            body = run_input(_agui_call(call_id, name))
            _refused(client.post(url, json=body), 400, words)

    @pytest.mark.parametrize(
        ("kind", "call_id", "words"),
        [
            ("tool-get_weather", "", "call_id"),
            ("tool-", "call_1", "name"),
            ("dynamic-tool", "call_1", "name"),
        ],
    )
    def test_ui_messages(
        self, client: httpx.Client, kind: str, call_id: str, words: str
    ) -> None:
        """UI messages: a tool part with "" as id, or a type "tool-" naming no
        tool."""
        with serving(create_ui_message_app(agent=WeatherAgent())) as url:
            body = chat(_ui_call(kind, call_id))
            _refused(client.post(url, json=body), 400, words)


class TestAPostgresStoreInTheAguiApp:
    """A thread id with a NUL is kept, not a 500 (issue 37, 3)."""

    def test_a_thread_id_with_a_nul(self, client: httpx.Client) -> None:
        """The interrupt is saved under the thread, a new run on it is told it
        waits, and the resume runs the tool once."""
        with postgres_schema() as (url, schema):
            store = PostgresRunStore(url, schema=schema)
            store.setup()
            agent = WeatherAgent()
            thread = "thread\x00one"
            try:
                with serving(create_agui_app(agent=agent, store=store)) as app:
                    first = answers(client.post(app, json=run_input(thread=thread)))
                    finished = first[-1]
                    assert finished["outcome"]["type"] == "interrupt"
                    snapshot = first[-2]["messages"]
                    body = run_input(snapshot, thread=thread, run="r2")
                    _refused(client.post(app, json=body), 409, "waits for answers")
                    resume = approve(finished)
                    body = run_input(thread=thread, run="r3", resume=resume)
                    done = answers(client.post(app, json=body))
                assert done[-1]["type"] == "RUN_FINISHED"
                assert len(agent.runs) == 1
            finally:
                store.close()

    def test_an_interrupt_id_with_a_nul(self, client: httpx.Client) -> None:
        """An interrupt id with a NUL is one no run waits for: "conflict"."""
        with postgres_schema() as (url, schema):
            store = PostgresRunStore(url, schema=schema)
            store.setup()
            try:
                with serving(create_agui_app(agent=WeatherAgent(), store=store)) as app:
                    resume = [{"interruptId": "run\x00x/call_1", "status": "cancelled"}]
                    out = answers(client.post(app, json=run_input(resume=resume)))
                assert out[-1]["code"] == "conflict"
            finally:
                store.close()

    def test_a_run_id_with_a_nul(self, client: httpx.Client) -> None:
        """A runId with a NUL (which PostgreSQL's JSONB cannot hold) names a
        run that waits there and is resumed like any other."""
        agent = WeatherAgent()
        with postgres_schema() as (url, schema):
            store = PostgresRunStore(url, schema=schema)
            store.setup()
            try:
                with serving(create_agui_app(agent=agent, store=store)) as app:
                    first = answers(client.post(app, json=run_input(run="r\x001")))
                    (interrupt,) = first[-1]["outcome"]["interrupts"]
                    resume = [
                        {
                            "interruptId": interrupt["id"],
                            "status": "resolved",
                            "payload": {"approved": True},
                        }
                    ]
                    body = run_input(run="r2", resume=resume)
                    done = answers(client.post(app, json=body))
                assert done[-1]["type"] == "RUN_FINISHED"
                assert len(agent.runs) == 1
            finally:
                store.close()


def _interrupted_chain(ran: list[str]) -> LLMChain:
    """A chain that stopped at ``get_weather`` (``call_1``) for a human."""

    def weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
        ran.append(context.call.call_id)
        return "sunny"

    call = ToolCall(call_id="call_1", name="get_weather", arguments={})
    model = ScriptedChatModel(
        [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Hi")]
    )
    chain = LLMChain(model, tools=[Tool("get_weather", weather)], callbacks=[Gate()])
    result = chain.add_message(Message.user("Weather?")).run()
    assert result.status == "interrupted"
    return result.chain


class Gate(ChainCallbackHandler):
    """Every call waits for a human."""

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        return Interrupt("May I?") if review.human_decision is None else None


class TestANewMessageWhileCallsWait:
    """A conversation posted back without answering the waiting calls, and no
    new message, is refused naming them and the ways on (issue 37, 7); a new
    message rejects them instead (issue 41, 1: test_frontend_moves_on)."""

    def test_agui_thread_in_the_store(self, client: httpx.Client) -> None:
        """The AG-UI app's 409 names the waiting call and how to answer it."""
        with serving(create_agui_app(agent=WeatherAgent())) as url:
            first = answers(client.post(url, json=run_input()))
            posted_back = run_input(first[-2]["messages"], run="r2")
            again = client.post(url, json=posted_back)
        _refused(again, 409, "get_weather ('call_1')")
        assert '"cancelled" to abandon it' in _reason(again)
        assert "send a new user message (it rejects them)" in _reason(again)

    def test_ui_chat_in_the_store(self, client: httpx.Client) -> None:
        """The UI-message app's 409 names the waiting call and how to answer it."""
        with serving(create_ui_message_app(agent=WeatherAgent())) as url:
            out = chunks(client.post(url, json=chat([USER])))
            refused = client.post(url, json=chat([USER, assistant_of(out)]))
        _refused(refused, 409, "get_weather ('call_1')")
        assert "send a new message (it rejects them)" in _reason(refused)

    @pytest.mark.parametrize("run_async", [None, True])
    @pytest.mark.parametrize("app", ["agui", "ui"])
    def test_an_agents_chain_with_waiting_calls(
        self, client: httpx.Client, app: str, run_async: bool | None
    ) -> None:
        """An agent whose chain still has waiting calls under the new message
        has them rejected: the tool does not run and the model answers (in a
        thread, and on the loop)."""
        ran: list[str] = []
        interrupted = _interrupted_chain(ran)

        def agent(messages: Sequence[Message]) -> LLMChain:
            return interrupted.add_message(Message.user("Something else?"))

        if app == "agui":
            with serving(create_agui_app(agent=agent, run_async=run_async)) as url:
                events = answers(client.post(url, json=run_input()))
            assert events[-1]["type"] == "RUN_FINISHED"
        else:
            app_ = create_ui_message_app(agent=agent, run_async=run_async)
            with serving(app_) as url:
                out = chunks(client.post(url, json=chat([USER])))
            assert out[-1] == {"type": "finish", "finishReason": "stop"}
        assert ran == []
        assert isinstance(interrupted.model, ScriptedChatModel)
        assert interrupted.model.remaining == 0
        told = interrupted.model.requests[-1].messages
        assert [m.role for m in told[-3:]] == ["assistant", "tool", "user"]
        assert "moved on" in tool_result_text(told[-2].tool_results[0])

    def test_the_serve_app(self) -> None:
        """The web app of ``langhooks serve`` does as the frontend apps: a
        prompt whose chain has waiting calls rejects them (the tool does not
        run, the model reads why) and is answered."""
        ran: list[str] = []
        interrupted = _interrupted_chain(ran)

        def agent(prompt: str) -> LLMChain:
            return interrupted.add_message(Message.user(prompt))

        with serving(create_app(agent=agent)) as base:
            answer = httpx.post(f"{base}runs", json={"prompt": "Something else?"})
            assert answer.status_code == 201, answer.text
            run_id = answer.json()["run_id"]
            # The stream ends with the run's last record.
            events = httpx.get(f"{base}runs/{run_id}/events", timeout=30).text
        assert "event: on_run_complete" in events
        assert ran == []
        assert isinstance(interrupted.model, ScriptedChatModel)
        told = interrupted.model.requests[-1].messages
        assert [m.role for m in told[-3:]] == ["assistant", "tool", "user"]
        assert "moved on" in tool_result_text(told[-2].tool_results[0])

    def test_the_serve_app_when_a_handler_fails(self) -> None:
        """A handler that fails on the rejection: 500 naming only the error's
        type, nothing run."""
        ran: list[str] = []
        interrupted = _interrupted_chain(ran).add_callback(_FailsOnRejection())

        def agent(prompt: str) -> LLMChain:
            return interrupted.add_message(Message.user(prompt))

        with serving(create_app(agent=agent)) as base:
            answer = httpx.post(f"{base}runs", json={"prompt": "Something else?"})
        assert answer.status_code == 500, answer.text
        assert "handler_error" in answer.json()["error"]
        assert "db-7" not in answer.text
        assert ran == []


class _FailsOnRejection(ChainCallbackHandler):
    """A handler that raises when a call is rejected."""

    @override
    def on_tool_execution_failed(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("internal detail: db-7")


@pytest.mark.parametrize("run_async", [None, True])
@pytest.mark.parametrize("app", ["agui", "ui"])
def test_a_handler_that_fails_on_the_rejection(
    client: httpx.Client, app: str, run_async: bool | None
) -> None:
    """A new message whose rejection a handler fails on ends with the error's
    code ("handler_error"), the details kept on the server; nothing runs (in a
    thread, and on the loop)."""
    ran: list[str] = []
    interrupted = _interrupted_chain(ran).add_callback(_FailsOnRejection())

    def agent(messages: Sequence[Message]) -> LLMChain:
        return interrupted.add_message(Message.user("Something else?"))

    if app == "agui":
        with serving(create_agui_app(agent=agent, run_async=run_async)) as url:
            events = answers(client.post(url, json=run_input()))
        assert events[-1]["code"] == "handler_error"
        assert "db-7" not in events[-1]["message"]
    else:
        with serving(create_ui_message_app(agent=agent, run_async=run_async)) as url:
            out = chunks(client.post(url, json=chat([USER])))
        assert out[-1]["errorText"].startswith("handler_error: the run failed")
    assert ran == []

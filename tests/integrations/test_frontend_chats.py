"""The frontend apps through a chat's life (issue 41): a second message while an
approval waits, a failing model, a reload that reads the thread back."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from langhooks import LangHooksError, Message, Tool, ToolCall, ToolContext, ToolResult
from langhooks.chain import Decision, LLMChain
from langhooks.chain._chain import ABANDONED
from langhooks.integrations._frontend_app import Answers
from langhooks.integrations._frontend_records import tool_result_text
from langhooks.integrations._ui_message_chunks import chat_messages
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore

from ._frontend_agent import ANSWER, QUESTION, StalePendingStore, WeatherAgent
from ._web_harness import serving
from .test_agui_app import THREAD, answers, approve, run_input
from .test_ui_message_app import USER, answered, assistant_of, chat, chunks

USER_MESSAGE = Message.user(QUESTION)
SECRET = "<chat_agent.ByConversation object at 0x7f00> raised RuntimeError: db-7 down"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served apps."""
    with httpx.Client(timeout=30) as http:
        yield http


def _told(agent: WeatherAgent) -> str:
    """What the model was last told of the weather call."""
    messages = agent.model.requests[-1].messages
    tool = next(m for m in reversed(messages) if m.role == "tool")
    return tool_result_text(tool.tool_results[0])


class TestASecondMessageWhileAnApprovalWaits:
    """A new message rejects the waiting calls with ``ABANDONED``, the reason
    ``LLMChain.abandon_tool_calls`` gives, and the chat goes on."""

    def test_ui_messages(self, client: httpx.Client) -> None:
        """useChat: the new message is answered, the tool never runs, the model
        reads the rejection, the stored run no longer waits and its approval
        posted late runs nothing (409)."""
        agent, store = WeatherAgent(), MemoryRunStore()
        with serving(create_ui_message_app(agent=agent, store=store)) as url:
            message = assistant_of(chunks(client.post(url, json=chat([USER]))))
            second = {**USER, "id": "user-2"}
            out = chunks(client.post(url, json=chat([USER, message, second])))
            late = client.post(url, json=chat([USER, answered(message)]))
        assert out[0]["messageId"] != message["id"]  # a new assistant message
        text = "".join(c["delta"] for c in out if c["type"] == "text-delta")
        assert text == ANSWER
        assert out[-1] == {"type": "finish", "finishReason": "stop"}
        assert agent.runs == []
        assert _told(agent) == ABANDONED
        assert store.pending() == []
        assert late.status_code == 409, late.text
        assert agent.runs == []

    def test_agui(self, client: httpx.Client) -> None:
        """AG-UI: a new user message on a thread with open interrupts runs; a
        resume of those interrupts afterwards is a "conflict"."""
        agent, store = WeatherAgent(), MemoryRunStore()
        with serving(create_agui_app(agent=agent, store=store)) as url:
            first = answers(client.post(url, json=run_input()))
            snapshot = first[-2]["messages"]
            second = {"id": "user-2", "role": "user", "content": QUESTION}
            out = answers(client.post(url, json=run_input([*snapshot, second])))
            resume = run_input(snapshot, run="r3", resume=approve(first[-1]))
            late = answers(client.post(url, json=resume))
        text = "".join(e["delta"] for e in out if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == ANSWER
        assert out[-1]["type"] == "RUN_FINISHED"
        assert _told(agent) == ABANDONED
        assert store.pending() == []
        assert late[-1]["type"] == "RUN_ERROR"
        assert late[-1]["code"] == "conflict"
        assert agent.runs == []

    def test_the_same_as_llm_chain(self) -> None:
        """What the apps tell the model is what ``abandon_tool_calls`` tells it."""
        agent = WeatherAgent()
        result = agent([]).add_message(USER_MESSAGE).run()
        assert result.status == "interrupted"
        settled = result.chain.abandon_tool_calls()
        assert isinstance(settled.chain, LLMChain)
        assert tool_result_text(settled.chain.messages[-1].tool_results[0]) == ABANDONED


def _failing(messages: Sequence[Message]) -> LLMChain:
    """An agent whose model fails with a message full of server internals."""
    model = ScriptedChatModel([LangHooksError("protocol_error", SECRET)])
    return LLMChain(model).add_messages(messages)


class TestAFailingModel:
    """The client is told the error's code and the run id; the server log has
    the details under that run id; ``expose_errors=True`` shows them."""

    def test_ui_messages(
        self, client: httpx.Client, caplog: pytest.LogCaptureFixture
    ) -> None:
        """useChat's error says the code and the run id, not the details."""
        with serving(create_ui_message_app(agent=_failing)) as url:
            out = chunks(client.post(url, json=chat([USER])))
        text = out[-1]["errorText"]
        assert out[-1]["type"] == "error"
        assert text.startswith("protocol_error: the run failed (protocol_error)")
        assert "db-7" not in json.dumps(out)
        run_id = out[0]["messageId"]
        assert run_id in text
        assert _logged(caplog, run_id)

    def test_agui(self, client: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
        """RUN_ERROR has the code and a message naming the run id only."""
        with serving(create_agui_app(agent=_failing)) as url:
            out = answers(client.post(url, json=run_input()))
        assert out[-1]["type"] == "RUN_ERROR"
        assert out[-1]["code"] == "protocol_error"
        assert "db-7" not in json.dumps(out)
        run_id = out[-1]["message"].rsplit("'", 2)[-2]
        assert _logged(caplog, run_id)

    def test_exposed(self, client: httpx.Client) -> None:
        """``expose_errors=True``: the error's own message, in both apps."""
        with serving(create_ui_message_app(agent=_failing, expose_errors=True)) as url:
            out = chunks(client.post(url, json=chat([USER])))
        assert out[-1]["errorText"] == f"protocol_error: {SECRET}"
        with serving(create_agui_app(agent=_failing, expose_errors=True)) as url:
            events = answers(client.post(url, json=run_input()))
        assert events[-1]["message"] == SECRET

    @pytest.mark.parametrize("create", [create_agui_app, create_ui_message_app])
    def test_not_a_bool(self, create: Callable[..., Starlette]) -> None:
        """``expose_errors`` must be a bool."""
        with pytest.raises(TypeError, match="expose_errors must be a bool"):
            create(agent=_failing, expose_errors="yes")


def _logged(caplog: pytest.LogCaptureFixture, run_id: str) -> bool:
    """Whether the frontends' log has the details under ``run_id``."""
    return any(
        record.name == "langhooks.integrations.frontends"
        and run_id in record.getMessage()
        and "db-7" in record.getMessage()
        for record in caplog.records
    )


class TestAReloadWithOnlyTheChatId:
    """``GET /{id}/messages`` gives a page the waiting run back, in the
    protocol's shape; answering from it finishes the run, the tool run once."""

    def test_ui_messages(self, client: httpx.Client) -> None:
        """UI messages whose last one asks for the approval; posting it answered
        continues the same assistant message."""
        agent = WeatherAgent()
        with serving(create_ui_message_app(agent=agent)) as url:
            first = chunks(client.post(url, json=chat([USER])))
            read = client.get(f"{url}chat-1/messages")
            assert read.status_code == 200, read.text
            messages = read.json()["messages"]
            out = chunks(
                client.post(url, json=chat([*messages[:-1], answered(messages[-1])]))
            )
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[0]["parts"] == [{"type": "text", "text": QUESTION}]
        assistant = messages[-1]
        assert assistant["id"] == first[0]["messageId"]
        waiting = assistant["parts"][-1]
        assert waiting["state"] == "approval-requested"
        assert waiting["approval"]["id"].endswith("/call_1")
        assert out[0] == {"type": "start", "messageId": assistant["id"]}
        text = "".join(c["delta"] for c in out if c["type"] == "text-delta")
        assert text == ANSWER
        assert agent.runs == [{"city": "Paris"}]

    def test_agui(self, client: httpx.Client) -> None:
        """A MESSAGES_SNAPSHOT with the interrupts a resume answers."""
        agent = WeatherAgent()
        with serving(create_agui_app(agent=agent)) as url:
            first = answers(client.post(url, json=run_input()))
            read = client.get(f"{url}thread-1/messages")
            assert read.status_code == 200, read.text
            snapshot = read.json()
            resume = run_input(
                snapshot["messages"],
                run="r2",
                resume=approve({"outcome": {"interrupts": snapshot["interrupts"]}}),
            )
            out = answers(client.post(url, json=resume))
        assert snapshot["type"] == "MESSAGES_SNAPSHOT"
        assert snapshot["messages"] == first[-2]["messages"]
        assert snapshot["interrupts"] == first[-1]["outcome"]["interrupts"]
        assert out[-1]["type"] == "RUN_FINISHED"
        assert agent.runs == [{"city": "Paris"}]

    @pytest.mark.parametrize("create", [create_agui_app, create_ui_message_app])
    def test_nothing_waits(
        self, client: httpx.Client, create: Callable[..., Starlette]
    ) -> None:
        """A thread with no waiting run is a 404 saying why."""
        with serving(create(agent=WeatherAgent())) as url:
            read = client.get(f"{url}nobody/messages")
        assert read.status_code == 404
        assert "only while its tool calls wait" in read.json()["error"]

    @pytest.mark.parametrize("create", [create_agui_app, create_ui_message_app])
    def test_authorised_as_read(
        self, client: httpx.Client, create: Callable[..., Starlette]
    ) -> None:
        """``authorize`` is asked "read" of the thread (no run id, as for
        "start"); a refusal is its answer."""
        asked: list[tuple[str, str | None]] = []

        def authorize(request: Request, action: str, run_id: str | None) -> bool:
            asked.append((action, run_id))
            return action != "read"

        agent = WeatherAgent()
        with serving(create(agent=agent, authorize=authorize)) as url:
            if create is create_agui_app:
                client.post(url, json=run_input(thread="chat-1"))
            else:
                client.post(url, json=chat([USER]))
            read = client.get(f"{url}chat-1/messages")
        assert read.status_code == 403
        assert asked[-1] == ("read", None)


class TestChatMessages:
    """``chat_messages``: a stored conversation in ``useChat``'s shape."""

    def test_earlier_answers_and_the_waiting_call(self) -> None:
        """Earlier answers keep their outputs and errors, a call with no result
        is "input-available", the waiting one "approval-requested"; the answer
        since the last user message has the run's id."""
        call = ToolCall(call_id="a", name="t", arguments={"x": 1})
        failed = ToolCall(call_id="b", name="t", arguments={})
        lost = ToolCall(call_id="c", name="t", arguments={})
        waiting = ToolCall(call_id="d", name="t", arguments={})
        messages = [
            Message.system("rules"),
            Message.user("one"),
            Message.assistant("", tool_calls=[call, failed, lost]),
            Message.tool(
                [
                    ToolResult(tool_call_id="a", name="t", content="ok"),
                    ToolResult(tool_call_id="b", name="t", content="no", is_error=True),
                ]
            ),
            Message.assistant("Done."),
            Message.user("two"),
            Message.assistant("Checking.", tool_calls=[waiting]),
            Message.tool(
                [ToolResult(tool_call_id="d", name="t", content="", is_interrupt=True)]
            ),
        ]
        out = chat_messages(messages, "run9")
        assert [(m["id"], m["role"]) for m in out] == [
            ("run9:1", "user"),
            ("run9:2", "assistant"),
            ("run9:5", "user"),
            ("run9", "assistant"),
        ]
        states = [p.get("state") for p in out[1]["parts"]]
        assert states == [
            None,
            "output-available",
            "output-error",
            "input-available",
            None,
            "done",
        ]
        assert out[1]["parts"][1]["output"] == "ok"
        assert out[1]["parts"][2]["errorText"] == "no"
        assert out[3]["parts"][1] == {
            "type": "text",
            "text": "Checking.",
            "state": "done",
        }
        assert out[3]["parts"][2]["approval"] == {"id": "run9/d"}


class TestAStoredRunAnsweredMeanwhile:
    """A new message whose waiting run another request answers first."""

    @pytest.mark.parametrize("app", ["agui", "ui"])
    def test_conflict(self, client: httpx.Client, app: str) -> None:
        """The store's claim refuses the second answer: "conflict", nothing runs."""
        agent, store = WeatherAgent(), StalePendingStore()
        create = create_agui_app if app == "agui" else create_ui_message_app
        with serving(create(agent=agent, store=store)) as url:
            if app == "agui":
                client.post(url, json=run_input())
            else:
                client.post(url, json=chat([USER]))
            store.frozen = store.pending()
            row = store.frozen[0]
            store.inner.resume(
                row.run_id,
                {c.call_id: Decision.reject("no") for c in row.calls},
                agent.model,
                tools=[agent.tool],
                continue_run=False,
            )
            if app == "agui":
                second = {"id": "user-2", "role": "user", "content": QUESTION}
                events = answers(client.post(url, json=run_input([second])))
                assert events[-1]["code"] == "conflict"
            else:
                response = client.post(url, json=chat([USER, {**USER, "id": "u2"}]))
                assert response.status_code == 409
        assert agent.runs == []


class _HeldTool:
    """A weather tool that answers only once the test lets it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.runs = 0
        self.model = ScriptedChatModel(
            [
                ScriptedTurn(
                    text="Looking.",
                    tool_calls=[ToolCall(call_id="c1", name="weather", arguments={})],
                ),
                ScriptedTurn(text=ANSWER),
            ]
        )

    def weather(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.runs += 1
        assert self.release.wait(30)
        return "rain"

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        chain = LLMChain(self.model, tools=[Tool("weather", self.weather)])
        return chain.add_messages(messages)


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data: {"):
            yield json.loads(line.removeprefix("data: "))


class TestAReloadMidAnswer:
    """``GET /{chat_id}/stream`` (the AI SDK's ``resume: true``) gives a client
    that came back the whole answer: what was sent, then the rest."""

    def test_the_whole_answer(self, client: httpx.Client) -> None:
        """The first client leaves mid-answer; the run goes on; the reconnecting
        one gets every chunk from ``start`` to ``finish``, the tool run once."""
        agent = _HeldTool()
        with serving(create_ui_message_app(agent=agent)) as url:
            with client.stream("POST", url, json=chat([USER])) as first:
                for event in _events(first.iter_lines()):
                    if event["type"] == "tool-input-available":
                        break  # the page reloads
            with client.stream("GET", f"{url}chat-1/stream") as again:
                assert again.status_code == 200
                assert again.headers["x-vercel-ai-ui-message-stream"] == "v1"
                lines = again.iter_lines()
                out = []
                for event in _events(lines):
                    out.append(event)
                    if event["type"] == "tool-input-available":
                        agent.release.set()
                rest = list(lines)
        assert out[0]["type"] == "start"
        text = "".join(c["delta"] for c in out if c["type"] == "text-delta")
        assert text == "Looking." + ANSWER
        assert out[-1] == {"type": "finish", "finishReason": "stop"}
        assert rest == [] or rest[-1] == ""
        assert agent.runs == 1

    def test_agui(self, client: httpx.Client) -> None:
        """AG-UI: ``GET /{thread_id}/stream`` (what a page's ``connect()``
        fetches) replays the run from RUN_STARTED and follows it to its end."""
        agent = _HeldTool()
        with serving(create_agui_app(agent=agent)) as url:
            with client.stream("POST", url, json=run_input()) as first:
                for event in _events(first.iter_lines()):
                    if event["type"] == "TOOL_CALL_END":
                        break  # the page reloads
            with client.stream("GET", f"{url}{THREAD}/stream") as again:
                assert again.status_code == 200
                out = []
                for event in _events(again.iter_lines()):
                    out.append(event)
                    if event["type"] == "TOOL_CALL_END":
                        agent.release.set()
        assert out[0]["type"] == "RUN_STARTED"
        text = "".join(e["delta"] for e in out if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "Looking." + ANSWER
        assert out[-1]["type"] == "RUN_FINISHED"
        assert agent.runs == 1

    @pytest.mark.parametrize("create", [create_agui_app, create_ui_message_app])
    def test_nothing_to_resume(
        self, client: httpx.Client, create: Callable[..., Starlette]
    ) -> None:
        """A chat this process has no answer of: 204, as the AI SDK expects."""
        with serving(create(agent=WeatherAgent())) as url:
            assert client.get(f"{url}nobody/stream").status_code == 204


def test_the_oldest_chats_answer_is_forgotten() -> None:
    """``Answers`` keeps the latest answers of at most ``limit`` chats."""

    async def nothing() -> AsyncIterator[dict[str, Any] | None]:
        for event in ({"type": "start"}, None):
            yield event

    async def main() -> tuple[bool, list[dict[str, Any]]]:
        answers = Answers(limit=1)
        answers.start("a", nothing())
        b = answers.start("b", nothing())
        events = [e async for e in b.follow(1.0) if e is not None]
        return answers.get("a") is None, events

    assert asyncio.run(main()) == (True, [{"type": "start"}])

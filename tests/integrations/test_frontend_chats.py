"""The frontend apps through a chat's life (issue 41): a second message while an
approval waits, a failing model, a reload that reads the thread back."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from langhooks import Message
from langhooks.chain import LLMChain
from langhooks.chain._chain import ABANDONED
from langhooks.integrations._frontend_records import tool_result_text
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.stores import MemoryRunStore

from ._frontend_agent import ANSWER, QUESTION, WeatherAgent
from ._web_harness import serving
from .test_agui_app import answers, approve, run_input
from .test_ui_message_app import USER, answered, assistant_of, chat, chunks


USER_MESSAGE = Message.user(QUESTION)


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

"""What the third adversarial pass broke in the AG-UI and UI-message apps, pinned
(issue 37): conversations langhooks refuses are 400s, a PostgreSQL store keeps a
thread id with a NUL, and a new message while approvals wait names them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.postgres import PostgresRunStore
from langhooks.integrations.ui_messages import create_ui_message_app

from ._frontend_agent import WeatherAgent
from ._web_harness import serving
from .test_agui_app import answers, approve, run_input
from .test_run_stores import postgres_schema
from .test_ui_message_app import USER, chat


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served apps."""
    with httpx.Client(timeout=30) as http:
        yield http


def _refused(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert words in response.json()["error"]


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
                    again = client.post(app, json=run_input(thread=thread, run="r2"))
                    _refused(again, 409, "waits for answers")
                    resume = approve(finished)
                    body = run_input(thread=thread, run="r3", resume=resume)
                    done = answers(client.post(app, json=body))
                assert done[-1]["type"] == "RUN_FINISHED"
                assert len(agent.runs) == 1
            finally:
                store.close()

    def test_an_interrupt_id_with_a_nul(self, client: httpx.Client) -> None:
        """An interrupt naming a run id with a NUL is a run no store holds (404)."""
        with postgres_schema() as (url, schema):
            store = PostgresRunStore(url, schema=schema)
            store.setup()
            try:
                with serving(create_agui_app(agent=WeatherAgent(), store=store)) as app:
                    resume = [{"interruptId": "run\x00x/call_1", "status": "cancelled"}]
                    response = client.post(app, json=run_input(resume=resume))
                assert response.status_code == 404, response.text
            finally:
                store.close()

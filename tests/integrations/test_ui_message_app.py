"""``create_ui_message_app``: the AI SDK UI message stream over HTTP, served by
uvicorn on 127.0.0.1."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from typing_extensions import override

from langhooks import AsyncChainCallbackHandler, Message, ToolCall
from langhooks.chain import LLMChain
from langhooks.integrations._frontends import _ui_message_app
from langhooks.integrations._frontends._ui_message_app import conversation
from langhooks.integrations._web._limits import BadRequest
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore

from ._frontend_agent import (
    ANSWER,
    FORECAST,
    QUESTION,
    StalePendingStore,
    UnsavingStore,
    WeatherAgent,
)
from ._web_harness import serving

USER = {"id": "user-1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}


def chat(messages: Sequence[Any], chat_id: str = "chat-1") -> dict[str, Any]:
    """The body ``useChat``'s transport posts."""
    return {"id": chat_id, "messages": list(messages), "trigger": "submit-message"}


def chunks(response: httpx.Response) -> list[dict[str, Any]]:
    """The chunks of a UI message stream answer, which must end ``[DONE]``."""
    assert response.status_code == 200, response.text
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    data = [
        line.removeprefix("data: ")
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    assert data[-1] == "[DONE]"
    return [json.loads(item) for item in data[:-1]]


def assistant_of(out: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The assistant UI message a client builds from an interrupted run's
    chunks (what readUIMessageStream gives; the Node test checks the real one)."""
    calls: dict[str, dict[str, Any]] = {}
    for chunk in out:
        if chunk["type"] == "tool-input-available":
            calls[chunk["toolCallId"]] = {
                "type": f"tool-{chunk['toolName']}",
                "toolCallId": chunk["toolCallId"],
                "state": "input-available",
                "input": chunk["input"],
            }
        elif chunk["type"] == "tool-approval-request":
            calls[chunk["toolCallId"]]["state"] = "approval-requested"
            calls[chunk["toolCallId"]]["approval"] = {"id": chunk["approvalId"]}
    text = "".join(c["delta"] for c in out if c["type"] == "text-delta")
    return {
        "id": out[0]["messageId"],
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": text, "state": "done"},
            *calls.values(),
        ],
    }


def answered(
    message: dict[str, Any], approved: bool = True, **extra: Any
) -> dict[str, Any]:
    """``message`` with every approval request answered (addToolApprovalResponse)."""
    message = copy.deepcopy(message)
    for part in message["parts"]:
        if part.get("state") == "approval-requested":
            part["state"] = "approval-responded"
            part["approval"] = {"id": part["approval"]["id"], "approved": approved}
            part["approval"].update(extra)
    return message


@pytest.fixture
def agent() -> WeatherAgent:
    """The weather agent, counting its tool runs."""
    return WeatherAgent()


@pytest.fixture
def url(agent: WeatherAgent) -> Iterator[str]:
    """The app for ``agent``, served on 127.0.0.1."""
    with serving(create_ui_message_app(agent=agent)) as base:
        yield base


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served app."""
    with httpx.Client(timeout=30) as http:
        yield http


def requested(client: httpx.Client, url: str) -> dict[str, Any]:
    """The assistant message of a first request, waiting for approval."""
    out = chunks(client.post(url, json=chat([USER])))
    assert out[-1] == {"type": "finish", "finishReason": "tool-calls"}
    return assistant_of(out)


class TestRoundTrip:
    """An approval request, then the conversation posted again with the answer."""

    def test_approval_then_continuation(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """The approval resumes the run: the tool runs once and the same message
        continues with its output and the answer."""
        message = requested(client, url)
        assert agent.runs == []
        out = chunks(client.post(url, json=chat([USER, answered(message)])))
        assert out[0] == {"type": "start", "messageId": message["id"]}
        assert out[1] == {
            "type": "tool-output-available",
            "toolCallId": "call_1",
            "output": FORECAST,
        }
        assert "".join(c["delta"] for c in out if c["type"] == "text-delta") == ANSWER
        assert out[-1] == {"type": "finish", "finishReason": "stop"}
        assert agent.runs == [{"city": "Paris"}]

    def test_a_denied_approval(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """A denied approval is tool-output-denied; the tool never runs."""
        message = requested(client, url)
        denied = answered(message, approved=False, reason="Not today.")
        out = chunks(client.post(url, json=chat([USER, denied])))
        assert {"type": "tool-output-denied", "toolCallId": "call_1"} in out
        assert agent.runs == []

    def test_a_repeated_approval_runs_nothing(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """Posting an answered approval again is refused (409)."""
        message = requested(client, url)
        body = chat([USER, answered(message)])
        chunks(client.post(url, json=body))
        again = client.post(url, json=body)
        assert again.status_code == 409
        assert "answered already" in again.text
        assert agent.runs == [{"city": "Paris"}]

    def test_concurrent_approvals_run_the_tool_once(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """Of approvals posted at once, one runs; the others are refused."""
        body = chat([USER, answered(requested(client, url))])
        statuses: list[int] = []
        barrier = threading.Barrier(4)

        def send() -> None:
            with httpx.Client(timeout=30) as own:
                barrier.wait()
                response = own.post(url, json=body)
                if response.status_code == 200:
                    chunks(response)
                statuses.append(response.status_code)

        threads = [threading.Thread(target=send) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200, 409, 409, 409]
        assert agent.runs == [{"city": "Paris"}]

    def test_a_resume_the_store_refuses(self, client: httpx.Client) -> None:
        """An approval that still looked open here but was taken by another
        worker is refused by the store itself (409) and runs nothing."""
        store = StalePendingStore()
        agent = WeatherAgent()
        with serving(create_ui_message_app(agent=agent, store=store)) as url:
            body = chat([USER, answered(requested(client, url))])
            store.frozen = store.pending()
            chunks(client.post(url, json=body))
            again = client.post(url, json=body)
        assert again.status_code == 409
        assert "nothing was run" in again.text
        assert agent.runs == [{"city": "Paris"}]

    def test_a_shared_store(self, client: httpx.Client) -> None:
        """An approval request of one app is answered through another."""
        store = MemoryRunStore()
        agent = WeatherAgent()
        with serving(create_ui_message_app(agent=agent, store=store)) as one:
            message = requested(client, one)
        assert [p.metadata for p in store.pending()] == [{"ui_chat": "chat-1"}]
        with serving(create_ui_message_app(agent=agent, store=store)) as two:
            chunks(client.post(two, json=chat([USER, answered(message)])))
        assert agent.runs == [{"city": "Paris"}]


class TestRefusals:
    """Bad input gets a 4xx answer whose plain-text body is the reason (what
    the AI SDK's transport shows as the error), never a 500."""

    def refused(self, response: httpx.Response, status: int, words: str) -> None:
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("text/plain")
        assert words in response.text

    @pytest.mark.parametrize(
        ("body", "words"),
        [
            ([], "the body must be"),
            ({"messages": [USER]}, "chat id"),
            ({"id": "c", "messages": []}, "non-empty list"),
            ({"id": "c", "messages": [{"role": "tool", "parts": []}]}, "role"),
            ({"id": "c", "messages": [{"role": "user", "parts": "hi"}]}, "parts"),
            (
                {
                    "id": "c",
                    "messages": [{"role": "user", "parts": [{"type": "text"}]}],
                },
                "text must be a string",
            ),
            (
                {
                    "id": "c",
                    "messages": [
                        {
                            "role": "user",
                            "parts": [{"type": "file", "url": "x", "mediaType": "a/b"}],
                        }
                    ],
                },
                "only text",
            ),
        ],
    )
    def test_malformed_chats(
        self, client: httpx.Client, url: str, body: Any, words: str
    ) -> None:
        """Bodies that are not a chat."""
        self.refused(client.post(url, json=body), 400, words)

    def test_too_large(self, client: httpx.Client, url: str) -> None:
        """A body over the limit."""
        text = {"type": "text", "text": "x" * 600_000}
        body = chat([{"id": "u", "role": "user", "parts": [text]}])
        self.refused(client.post(url, json=body), 413, "larger than")

    def test_an_unanswered_request_posted_back(
        self, client: httpx.Client, url: str
    ) -> None:
        """A conversation ending in the unanswered request is no answer (409)."""
        message = requested(client, url)
        self.refused(client.post(url, json=chat([USER, message])), 409, "waits")

    def test_approvals_that_do_not_match(self, client: httpx.Client, url: str) -> None:
        """Approvals this app never asked for, or for a call that does not wait."""
        message = answered(requested(client, url))
        part = message["parts"][-1]
        run_id = part["approval"]["id"].split("/")[0]
        made_up = copy.deepcopy(message)
        made_up["parts"][-1]["approval"]["id"] = "made-up"
        self.refused(client.post(url, json=chat([USER, made_up])), 400, "made-up")
        unknown = copy.deepcopy(message)
        unknown["parts"][-1]["approval"]["id"] = "nope/call_1"
        self.refused(client.post(url, json=chat([USER, unknown])), 404, "chat-1")
        other = copy.deepcopy(message)
        other["parts"][-1]["toolCallId"] = "other"
        other["parts"][-1]["approval"]["id"] = f"{run_id}/other"
        self.refused(client.post(url, json=chat([USER, other])), 422, "other")
        shapeless = copy.deepcopy(message)
        shapeless["parts"][-1]["approval"] = {"id": "x"}
        self.refused(client.post(url, json=chat([USER, shapeless])), 400, "approved")
        two_runs = copy.deepcopy(message)
        extra = copy.deepcopy(part)
        extra["toolCallId"] = "y"
        extra["approval"]["id"] = "x/y"
        two_runs["parts"].append(extra)
        self.refused(client.post(url, json=chat([USER, two_runs])), 400, "one run")

    def test_every_approval_is_answered(self, client: httpx.Client) -> None:
        """Answering one of two approval requests runs nothing (422)."""
        turns = [
            ScriptedTurn(
                tool_calls=[
                    ToolCall(call_id="a", name="get_weather", arguments={"city": "A"}),
                    ToolCall(
                        call_id="b",
                        name="get_weather",
                        arguments={"city": "B"},
                        index=1,
                    ),
                ]
            )
        ]
        agent = WeatherAgent(turns)
        with serving(create_ui_message_app(agent=agent)) as url:
            message = assistant_of(chunks(client.post(url, json=chat([USER]))))
            half = answered(message)
            half["parts"][-1]["state"] = "approval-requested"
            response = client.post(url, json=chat([USER, half]))
        self.refused(response, 422, "every approval request")
        assert agent.runs == []

    def test_bad_options(self) -> None:
        """An agent that is not callable is refused when the app is made."""
        with pytest.raises(TypeError, match="agent"):
            create_ui_message_app(agent="no")  # type: ignore[arg-type]


class TestRuns:
    """How the app runs agents."""

    def test_a_store_that_fails_to_save(self, client: httpx.Client) -> None:
        """An interrupted run that cannot be saved ends with an error chunk, not
        an approval request nobody could answer."""

        with serving(
            create_ui_message_app(
                agent=WeatherAgent(), store=UnsavingStore(), expose_errors=True
            )
        ) as url:
            out = chunks(client.post(url, json=chat([USER])))
        assert out[-1] == {
            "type": "error",
            "errorText": "connection: the store is down",
        }
        assert not any(c["type"] == "tool-approval-request" for c in out)

    def test_a_run_that_raises_before_it_records(self, client: httpx.Client) -> None:
        """A run that raises before its first event ends with an error chunk (an
        async handler in a chain told to ``run()``)."""

        class Async(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: LLMChain) -> None:
                pass

        def agent(messages: Sequence[Message]) -> LLMChain:
            model = ScriptedChatModel([ScriptedTurn(text="Hi.")])
            return LLMChain(model, callbacks=[Async()]).add_messages(messages)

        with serving(create_ui_message_app(agent=agent, run_async=False)) as url:
            out = chunks(client.post(url, json=chat([USER])))
        assert out == [
            {
                "type": "error",
                "errorText": "internal_error: the run failed (internal_error); "
                "the server's log has the details",
            }
        ]


def test_a_quiet_run_sends_heartbeats(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a run is quiet, comment lines keep the connection open."""
    monkeypatch.setattr(_ui_message_app, "_HEARTBEAT", 0.05)
    agent = WeatherAgent(gate=False)
    agent.model = ScriptedChatModel([ScriptedTurn(text="Slowly.")], delay=0.2)
    with serving(create_ui_message_app(agent=agent)) as url:
        response = client.post(url, json=chat([USER]))
    assert ": heartbeat" in response.text
    assert chunks(response)[-1] == {"type": "finish", "finishReason": "stop"}


class TestConversation:
    """UI messages become langhooks messages."""

    def test_steps_calls_and_outcomes(self) -> None:
        """Each step is an assistant message and a tool message with the calls'
        outputs, errors and denials; reasoning and unfinished calls are left out."""

        def tool(call: str, state: str, **more: Any) -> dict[str, Any]:
            return {
                "type": "tool-get_weather",
                "toolCallId": call,
                "state": state,
                "input": {"city": call},
                **more,
            }

        messages: list[dict[str, Any]] = [
            {"role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
            {
                "role": "user",
                "parts": [
                    {"type": "text", "text": "Hi"},
                    {"type": "data-weather", "data": {}},
                ],
            },
            {
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": "hmm"},
                    {"type": "text", "text": "Looking."},
                    tool("a", "output-available", output="sunny"),
                    tool("b", "output-available", output={"t": 3}),
                    tool("c", "output-error", errorText="down"),
                    tool("d", "output-denied", approval={"id": "x", "approved": False}),
                    tool(
                        "e",
                        "output-denied",
                        approval={"id": "y", "approved": False, "reason": "No."},
                    ),
                    {
                        "type": "dynamic-tool",
                        "toolName": "lookup",
                        "toolCallId": "f",
                        "state": "input-available",
                        "input": {},
                    },
                    tool("g", "input-streaming"),
                    {"type": "step-start"},
                    {"type": "text", "text": "Done."},
                ],
            },
        ]
        system, user, answer, results, final = conversation(messages)
        assert (system.role, system.text, user.text) == ("system", "Be brief.", "Hi")
        assert answer.text == "Looking."
        assert answer.thinking == ""
        assert [c.call_id for c in answer.tool_calls] == list("abcdef")
        assert answer.tool_calls[5].name == "lookup"
        outcomes = [
            (r.tool_call_id, r.content[0].content, r.is_error)
            for r in results.tool_results
        ]
        assert outcomes == [
            ("a", "sunny", False),
            ("b", '{"t": 3}', False),
            ("c", "down", True),
            ("d", "The user rejected this tool call.", False),
            ("e", "No.", False),
        ]
        assert final.text == "Done."

    def test_a_call_without_an_object_input(self) -> None:
        """A tool part's input must be an object."""
        part = {
            "type": "tool-x",
            "toolCallId": "a",
            "state": "input-available",
            "input": [1],
        }
        with pytest.raises(BadRequest, match="input must be an object"):
            conversation([{"role": "assistant", "parts": [part]}])

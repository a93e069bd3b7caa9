"""``create_agui_app``: AG-UI over HTTP, served by uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from http import HTTPStatus
from typing import Any

import httpx
import pytest
from ag_ui import core as agui
from typing_extensions import override

from langhooks import AsyncChainCallbackHandler, Message, ToolCall
from langhooks.chain import LLMChain
from langhooks.events import EventRecorder
from langhooks.integrations._frontends._agui_events import AguiTranslator
from langhooks.integrations._frontends._app import LiveRun, build_chain, stream_events
from langhooks.integrations._frontends._runner import Work
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.web import owner_only
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore

from ._frontend_agent import (
    ANSWER,
    FORECAST,
    QUESTION,
    UnsavingStore,
    WeatherAgent,
    weather_turns,
)
from ._web_harness import serving

THREAD = "thread-1"


def run_input(
    messages: Sequence[Mapping[str, Any]] | None = None,
    *,
    thread: str = THREAD,
    run: str = "run-1",
    resume: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ``RunAgentInput`` as the AG-UI client posts it."""
    body: dict[str, Any] = {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": "user-1", "role": "user", "content": QUESTION}]
        if messages is None
        else list(messages),
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if resume is not None:
        body["resume"] = list(resume)
    return body


def answers(response: httpx.Response) -> list[dict[str, Any]]:
    """The events of an event-stream answer."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def approve(finished: Mapping[str, Any], **payload: Any) -> list[dict[str, Any]]:
    """A resume answering every interrupt of a RUN_FINISHED event."""
    return [
        {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {"approved": True, **payload},
        }
        for interrupt in finished["outcome"]["interrupts"]
    ]


@pytest.fixture
def agent() -> WeatherAgent:
    """The weather agent, counting its tool runs."""
    return WeatherAgent()


@pytest.fixture
def url(agent: WeatherAgent) -> Iterator[str]:
    """The app for ``agent``, served on 127.0.0.1."""
    with serving(create_agui_app(agent=agent)) as base:
        yield base


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served app."""
    with httpx.Client(timeout=30) as http:
        yield http


def interrupted(client: httpx.Client, url: str) -> list[dict[str, Any]]:
    """The events of a first request, which stops at the review."""
    out = answers(client.post(url, json=run_input()))
    assert out[-1]["outcome"]["type"] == "interrupt"
    return out


class TestRoundTrip:
    """An interrupt, then a resume on the same thread."""

    def test_interrupt_then_resume(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """The first request stops at the review; the resume runs the tool once
        and streams the answer, under the resume's runId."""
        first = interrupted(client, url)
        assert agent.runs == []
        second = answers(
            client.post(url, json=run_input(run="run-2", resume=approve(first[-1])))
        )
        assert second[0] == {
            "type": "RUN_STARTED",
            "threadId": THREAD,
            "runId": "run-2",
        }
        result = next(e for e in second if e["type"] == "TOOL_CALL_RESULT")
        assert result["content"] == FORECAST
        text = "".join(
            e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"
        )
        assert text == ANSWER
        assert second[-1]["type"] == "RUN_FINISHED"
        assert agent.runs == [{"city": "Paris"}]

    def test_the_snapshot_keeps_the_clients_ids(
        self, client: httpx.Client, url: str
    ) -> None:
        """The client's own message keeps its id in MESSAGES_SNAPSHOT."""
        first = interrupted(client, url)
        snapshot = next(e for e in first if e["type"] == "MESSAGES_SNAPSHOT")
        assert snapshot["messages"][0] == {
            "id": "user-1",
            "role": "user",
            "content": QUESTION,
        }

    def test_ids_are_made_of_the_clients_run_id(
        self, client: httpx.Client, url: str
    ) -> None:
        """The answers' message ids and the interrupts' ids are made of the
        runId the client sent; a resume (another runId) keeps them, so the
        thread's messages keep their ids, and the read route says the same."""
        first = interrupted(client, url)
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        assert interrupt["id"] == "run-1/call_1"
        snapshot = next(e for e in first if e["type"] == "MESSAGES_SNAPSHOT")
        made = [m["id"] for m in snapshot["messages"][1:]]
        assert made
        assert all(i.startswith("run-1:") for i in made)
        read = client.get(f"{url}{THREAD}/messages").json()
        assert read["interrupts"][0]["id"] == "run-1/call_1"
        assert [m["id"] for m in read["messages"]] == [
            m["id"] for m in snapshot["messages"]
        ]
        second = answers(
            client.post(url, json=run_input(run="run-2", resume=approve(first[-1])))
        )
        ids = {e["messageId"] for e in second if "messageId" in e}
        assert ids
        assert all(i.startswith("run-1:") for i in ids)

    def test_edited_arguments(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """An approval with arguments runs the tool with them."""
        first = interrupted(client, url)
        resume = approve(first[-1], arguments={"city": "Nice"})
        answers(client.post(url, json=run_input(run="run-2", resume=resume)))
        assert agent.runs == [{"city": "Nice"}]

    @pytest.mark.parametrize(
        "answer",
        [
            {"status": "resolved", "payload": {"approved": False, "reason": "No."}},
            {"status": "cancelled"},
        ],
    )
    def test_rejections(
        self,
        agent: WeatherAgent,
        client: httpx.Client,
        url: str,
        answer: dict[str, Any],
    ) -> None:
        """A rejected or cancelled interrupt runs nothing; the model is told."""
        first = interrupted(client, url)
        resume = [
            {"interruptId": first[-1]["outcome"]["interrupts"][0]["id"], **answer}
        ]
        second = answers(client.post(url, json=run_input(run="run-2", resume=resume)))
        assert second[-1]["type"] == "RUN_FINISHED"
        assert agent.runs == []

    def test_a_repeated_resume_is_a_conflict(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """Resuming again answers RUN_ERROR "conflict" and runs nothing."""
        first = interrupted(client, url)
        body = run_input(run="run-2", resume=approve(first[-1]))
        answers(client.post(url, json=body))
        again = answers(client.post(url, json=dict(body, runId="run-3")))
        assert [e["type"] for e in again] == ["RUN_STARTED", "RUN_ERROR"]
        assert again[-1]["code"] == "conflict"
        assert agent.runs == [{"city": "Paris"}]

    def test_concurrent_resumes_run_the_tool_once(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """Of resumes sent at once, one runs; the others are conflicts."""
        first = interrupted(client, url)
        resume = approve(first[-1])
        outcomes: list[str] = []
        barrier = threading.Barrier(4)

        def send(number: int) -> None:
            with httpx.Client(timeout=30) as own:
                barrier.wait()
                body = run_input(run=f"run-{number}", resume=resume)
                outcomes.append(answers(own.post(url, json=body))[-1]["type"])

        threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["RUN_ERROR"] * 3 + ["RUN_FINISHED"]
        assert agent.runs == [{"city": "Paris"}]

    def test_a_later_turn_on_the_thread(
        self, agent: WeatherAgent, client: httpx.Client, url: str
    ) -> None:
        """The conversation the client sends back (tool calls and results
        included) reaches the agent as langhooks messages, and a snapshot of it
        keeps the client's ids."""
        agent.model = ScriptedChatModel(weather_turns("call_2"))
        calls = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
            for call_id in ("call_0", "call_1")
        ]
        history: list[dict[str, Any]] = [
            {"id": "u1", "role": "user", "content": QUESTION},
            {"id": "s1", "role": "developer", "content": "Be brief."},
            {"id": "r1", "role": "reasoning", "content": "Look it up."},
            {"id": "a1", "role": "assistant", "toolCalls": calls},
            {"id": "t0", "role": "tool", "toolCallId": "call_0", "content": FORECAST},
            {
                "id": "t1",
                "role": "tool",
                "toolCallId": "call_1",
                "content": "down",
                "error": "down",
            },
            {"id": "a2", "role": "assistant", "content": ANSWER},
            {
                "id": "u2",
                "role": "user",
                "content": [{"type": "text", "text": "Again?"}],
            },
        ]
        out = answers(client.post(url, json=run_input(history, run="r3")))
        conversation = agent.conversations[-1]
        assert [m.role for m in conversation] == [
            "user",
            "system",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
        assert [c.call_id for c in conversation[2].tool_calls] == ["call_0", "call_1"]
        results = conversation[3].tool_results
        assert [(r.name, r.is_error) for r in results] == [
            ("get_weather", False),
            ("get_weather", True),
        ]
        assert conversation[5].text == "Again?"
        snapshot = next(e for e in out if e["type"] == "MESSAGES_SNAPSHOT")
        ids = [m["id"] for m in snapshot["messages"]]
        assert ids[:5] == ["u1", "a1", "t0", "t1", "a2"]
        assert snapshot["messages"][3]["error"] == "down"


class TestRefusals:
    """Bad input gets a 4xx answer whose body is a ``RUN_ERROR`` event (the
    protocol's error shape, its code naming the status), never a 500."""

    def refused(self, response: httpx.Response, status: int, words: str) -> None:
        assert response.status_code == status, response.text
        refusal = agui.RunErrorEvent.model_validate(response.json())
        assert words in refusal.message
        assert refusal.code == HTTPStatus(status).phrase.lower().replace(" ", "_")

    def test_not_json(self, client: httpx.Client, url: str) -> None:
        """A body that is not JSON."""
        response = client.post(
            url, content=b"{", headers={"content-type": "application/json"}
        )
        self.refused(response, 400, "not valid JSON")

    def test_not_json_content(self, client: httpx.Client, url: str) -> None:
        """A body not sent as JSON."""
        self.refused(client.post(url, content=b"{}"), 415, "application/json")

    def test_too_large(self, client: httpx.Client, url: str) -> None:
        """A body over the limit."""
        huge = run_input([{"id": "u", "role": "user", "content": "x" * 600_000}])
        self.refused(client.post(url, json=huge), 413, "larger than")

    def test_too_large_without_a_length(self, client: httpx.Client, url: str) -> None:
        """A body over the limit sent in chunks, with no Content-Length."""

        def pieces() -> Iterator[bytes]:
            yield b'{"threadId": "'
            for _ in range(600):
                yield b"x" * 1000
            yield b'"}'

        response = client.post(
            url, content=pieces(), headers={"content-type": "application/json"}
        )
        self.refused(response, 413, "larger than")

    def test_too_deep(self, client: httpx.Client, url: str) -> None:
        """JSON nested deeper than any real input."""
        deep: Any = 1
        for _ in range(70):
            deep = [deep]
        body = dict(run_input(), forwardedProps={"deep": deep})
        self.refused(client.post(url, json=body), 400, "nested deeper")

    def test_too_deep_to_parse(self, client: httpx.Client, url: str) -> None:
        """JSON nested past what the parser takes."""
        body = b'{"threadId": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        response = client.post(
            url, content=body, headers={"content-type": "application/json"}
        )
        self.refused(response, 400, "nested deeper")

    def test_text_that_is_not_unicode(self, client: httpx.Client, url: str) -> None:
        """A lone surrogate, which JSON escapes allow, in a key or a value."""
        for body in (b'{"threadId": "\\ud800"}', b'{"\\udc00": 1}'):
            response = client.post(
                url,
                content=body.replace(b"\\\\", b"\\"),
                headers={"content-type": "application/json"},
            )
            self.refused(response, 400, "not valid Unicode")

    def test_not_a_run_agent_input(self, client: httpx.Client, url: str) -> None:
        """A JSON body that is not a RunAgentInput."""
        self.refused(client.post(url, json={"threadId": 1}), 400, "RunAgentInput")

    @pytest.mark.parametrize(
        ("message", "words"),
        [
            (
                {
                    "id": "u",
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "url", "value": "https://x/y.png"},
                        }
                    ],
                },
                "only text",
            ),
            (
                {
                    "id": "a",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "[1]"},
                        }
                    ],
                },
                "JSON object",
            ),
            (
                {
                    "id": "a",
                    "role": "assistant",
                    "toolCalls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{"},
                        }
                    ],
                },
                "JSON object",
            ),
            (
                {"id": "t", "role": "tool", "toolCallId": "nobody", "content": "x"},
                "no assistant message made",
            ),
        ],
    )
    def test_bad_messages(
        self, client: httpx.Client, url: str, message: dict[str, Any], words: str
    ) -> None:
        """Messages that cannot become langhooks messages."""
        self.refused(client.post(url, json=run_input([message])), 400, words)

    def test_a_new_run_while_the_thread_waits(
        self, client: httpx.Client, url: str
    ) -> None:
        """A thread with open interrupts posted back unanswered, with no new
        message, takes only their answers."""
        snapshot = interrupted(client, url)[-2]["messages"]
        self.refused(
            client.post(url, json=run_input(snapshot, run="r2")), 409, "resume"
        )

    def test_an_unknown_interrupt(self, client: httpx.Client, url: str) -> None:
        """An interrupt no run on the thread waits for (never made, or
        answered already) is a "conflict" and runs nothing."""
        for made_up in ("made-up", "nope/call_1"):
            resume = [{"interruptId": made_up, "status": "cancelled"}]
            out = answers(client.post(url, json=run_input(resume=resume)))
            assert [e["type"] for e in out] == ["RUN_STARTED", "RUN_ERROR"]
            assert out[-1]["code"] == "conflict"
            assert "never made" in out[-1]["message"]

    def test_an_empty_run_id(self, client: httpx.Client, url: str) -> None:
        """A runId must name the run: the ids of its messages are made of it."""
        self.refused(client.post(url, json=run_input(run="")), 400, "runId")

    @pytest.mark.parametrize(
        "payload",
        [
            None,
            {"approved": "yes"},
            {"approved": True, "extra": 1},
            {"approved": True, "arguments": [1]},
        ],
    )
    def test_bad_payloads(self, client: httpx.Client, url: str, payload: Any) -> None:
        """A resolved interrupt's payload must say approved, and may give
        arguments and a reason."""
        first = interrupted(client, url)
        interrupt = first[-1]["outcome"]["interrupts"][0]["id"]
        resume = [{"interruptId": interrupt, "status": "resolved", "payload": payload}]
        self.refused(client.post(url, json=run_input(resume=resume)), 400, "payload")

    def test_answers_that_do_not_match(self, client: httpx.Client, url: str) -> None:
        """An answer for an interrupt that is not waiting beside the waiting
        one, or twice the same one."""
        first = interrupted(client, url)
        other = [*approve(first[-1]), {"interruptId": "x/y", "status": "cancelled"}]
        self.refused(client.post(url, json=run_input(resume=other)), 422, "x/y")
        twice = approve(first[-1]) * 2
        self.refused(client.post(url, json=run_input(resume=twice)), 400, "twice")

    def test_two_users_runs_under_one_thread_and_run_id(
        self, client: httpx.Client
    ) -> None:
        """Two users' runs waiting under the same thread id and runId have the
        same interrupt ids: a resume decides the one its user may (Bob's, under
        ``owner_only``), never the other's; answering both is a 422."""
        store = MemoryRunStore()
        app = create_agui_app(
            agent=lambda messages: WeatherAgent()(messages),
            authorize=owner_only(lambda request: request.headers.get("x-user")),
            store=store,
        )
        alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
        with serving(app) as url:
            ids = [
                answers(client.post(url, json=run_input(), headers=user))[-1][
                    "outcome"
                ]["interrupts"][0]["id"]
                for user in (alice, bob)
            ]
            assert ids == ["run-1/call_1", "run-1/call_1"]
            (alices_run,) = (
                row.run_id
                for row in store.pending()
                if row.metadata["owner"] == "alice"
            )
            both = [
                {"interruptId": "run-1/call_1", "status": "cancelled"},
                {"interruptId": "run-1/other", "status": "cancelled"},
            ]
            response = client.post(url, json=run_input(resume=both), headers=bob)
            self.refused(response, 422, "run-1/other")
            resume = [{"interruptId": "run-1/call_1", "status": "cancelled"}]
            body = run_input(run="r2", resume=resume)
            done = answers(client.post(url, json=body, headers=bob))
        (result,) = (e for e in done if e["type"] == "TOOL_CALL_RESULT")
        assert result["metadata"] == {"langhooks.tool_outcome": "denied"}
        waiting = {row.metadata["owner"]: row.run_id for row in store.pending()}
        assert waiting["alice"] == alices_run

    def test_every_open_interrupt_is_answered(self, client: httpx.Client) -> None:
        """A resume that leaves an interrupt open runs nothing (422)."""
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
        with serving(create_agui_app(agent=agent)) as url:
            first = answers(client.post(url, json=run_input()))
            one = approve(first[-1])[:1]
            response = client.post(url, json=run_input(resume=one))
        self.refused(response, 422, "every open interrupt")
        assert agent.runs == []


class TestRuns:
    """How the app runs agents."""

    def test_a_quiet_run_sends_heartbeats(self, client: httpx.Client) -> None:
        """While a run is quiet, comment lines keep the connection open."""
        agent = WeatherAgent(gate=False)
        agent.model = ScriptedChatModel([ScriptedTurn(text="Slowly.")], delay=0.2)
        with serving(create_agui_app(agent=agent, heartbeat=0.05)) as url:
            response = client.post(url, json=run_input())
        assert ": heartbeat" in response.text
        assert answers(response)[-1]["type"] == "RUN_FINISHED"

    def test_a_shared_store(self, client: httpx.Client) -> None:
        """An interrupt taken by one app is resumed by another on the same store."""
        store = MemoryRunStore()
        agent = WeatherAgent()
        with serving(create_agui_app(agent=agent, store=store)) as one:
            first = answers(client.post(one, json=run_input()))
        assert [p.metadata for p in store.pending()] == [
            {"agui_thread": THREAD, "agui_run": "run-1"}
        ]
        with serving(create_agui_app(agent=agent, store=store)) as two:
            body = run_input(run="r2", resume=approve(first[-1]))
            second = answers(client.post(two, json=body))
        assert second[-1]["type"] == "RUN_FINISHED"
        assert agent.runs == [{"city": "Paris"}]

    def test_a_run_that_raises(self, client: httpx.Client) -> None:
        """A run that raises ends with RUN_ERROR "internal_error" (an async
        handler in a chain told to ``run()``)."""

        class Async(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: LLMChain) -> None:
                pass

        def agent(messages: Sequence[Message]) -> LLMChain:
            model = ScriptedChatModel([ScriptedTurn(text="Hi.")])
            return LLMChain(model, callbacks=[Async()]).add_messages(messages)

        with serving(create_agui_app(agent=agent, run_async=False)) as url:
            out = answers(client.post(url, json=run_input()))
        assert [e["type"] for e in out] == ["RUN_STARTED", "RUN_ERROR"]
        assert out[-1]["code"] == "internal_error"

    def test_a_store_that_fails_to_save(self, client: httpx.Client) -> None:
        """An interrupted run that cannot be saved ends with RUN_ERROR."""

        with serving(
            create_agui_app(
                agent=WeatherAgent(), store=UnsavingStore(), expose_errors=True
            )
        ) as url:
            out = answers(client.post(url, json=run_input()))
        assert out[-1] == {
            "type": "RUN_ERROR",
            "message": "the store is down",
            "code": "connection",
        }

    def test_an_agent_that_returns_no_chain(self) -> None:
        """An agent must return an LLMChain."""
        with pytest.raises(TypeError, match="must return an LLMChain"):
            build_chain(lambda messages: None, [])  # type: ignore[arg-type,return-value]

    def test_a_run_that_ends_without_an_answer(self) -> None:
        """A run that returns without the record that ends it still ends the
        stream, with RUN_ERROR, instead of hanging."""

        async def nothing(recorder: EventRecorder) -> None:
            pass

        async def stream() -> list[dict[str, Any] | None]:
            live = LiveRun(Work(nothing, on_loop=True))
            translator = AguiTranslator(thread_id="t", run_id="r")
            return [event async for event in stream_events(live, translator, 1.0)]

        out = asyncio.run(stream())
        assert [e and e["type"] for e in out] == ["RUN_STARTED", "RUN_ERROR"]
        assert out[-1] == {
            "type": "RUN_ERROR",
            "message": "the run ended without an answer",
            "code": "stream_error",
        }

    @pytest.mark.parametrize(
        ("options", "error"),
        [
            ({"agent": "no"}, TypeError),
            ({"heartbeat": "1"}, TypeError),
            ({"heartbeat": True}, TypeError),
            ({"heartbeat": 0}, ValueError),
            ({"run_async": "yes"}, TypeError),
        ],
    )
    def test_bad_options(self, options: dict[str, Any], error: type[Exception]) -> None:
        """Options that cannot work are refused when the app is made."""
        given: dict[str, Any] = {"agent": WeatherAgent(), **options}
        with pytest.raises(error):
            create_agui_app(**given)

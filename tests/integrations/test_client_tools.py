"""Tools the frontend runs (``client_tool``), through both apps served by uvicorn
on 127.0.0.1: the call goes to the client once review allowed it, the client's
result resumes the stored run once, and the model reads it."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
from typing_extensions import override

from langhooks import (
    ChainCallbackHandler,
    Deny,
    Interrupt,
    Message,
    ReviewContext,
    ReviewDecision,
    Tool,
    ToolCall,
    ToolContext,
)
from langhooks.chain import Decision, LLMChain
from langhooks.events import EventRecord
from langhooks.integrations._frontends._client_tools import CLIENT_RESULT
from langhooks.integrations._frontends._records import tool_result_text
from langhooks.integrations._frontends._ui_message_chunks import UiMessageTranslator
from langhooks.integrations.agui import client_tool as agui_client_tool
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import (
    client_tool,
    create_ui_message_app,
    ui_message_chunks,
)
from langhooks.models import ScriptedChatModel, ScriptedTurn

from ._frontend_agent import StalePendingStore
from ._frontend_runs import WholeAnswers, recorded
from ._web_harness import serving
from .test_ui_message_app import chat, chunks

QUESTION = "Make the page calm."
PICKED = "The page is now #a0c4ff."
ANSWER = "Done: the page is a calm blue."
COLOR_SCHEMA = {
    "type": "object",
    "properties": {"mood": {"type": "string"}},
    "required": ["mood"],
}
THREAD = "thread-1"


def pick(call_id: str = "call_1") -> ToolCall:
    """The model's call of the client tool."""
    return ToolCall(call_id=call_id, name="pick_color", arguments={"mood": "calm"})


def weather(call_id: str = "call_2") -> ToolCall:
    """The model's call of the server tool."""
    return ToolCall(call_id=call_id, name="get_weather", arguments={"city": "Paris"})


class Review(ChainCallbackHandler):
    """Settles calls of the tools it names: interrupts them for a person
    (until a person decided) or denies them."""

    def __init__(self, names: Sequence[str], *, deny: bool = False) -> None:
        self.names = frozenset(names)
        self.deny = deny
        self.seen: list[str | None] = []

    @override
    def on_tool_call_review(
        self, chain: LLMChain, call: ToolCall, tool: Tool, review: ReviewContext
    ) -> ReviewDecision | None:
        if call.name not in self.names:
            return None
        self.seen.append(review.human_decision)
        if self.deny:
            return Deny("Not on this page.")
        if review.human_decision is not None:
            return None
        return Interrupt(f"{call.name}: allow?", {"tool": call.name})


class ClientAgent:
    """``agent(messages)``: one scripted model across requests; a server tool
    that counts its runs; the client tool declared by the agent (for the AI
    SDK) or left to the request's ``tools`` (AG-UI)."""

    def __init__(
        self,
        calls: Sequence[ToolCall] = (pick(),),
        *,
        declare: bool = True,
        review: ChainCallbackHandler | None = None,
        own: Tool | None = None,
    ) -> None:
        self.model = ScriptedChatModel(
            [ScriptedTurn(text="", tool_calls=list(calls)), ScriptedTurn(text=ANSWER)]
        )
        self.weather_runs = 0
        self.tools = [Tool("get_weather", self._weather, description="Weather.")]
        if declare:
            self.tools.append(
                client_tool(
                    "pick_color",
                    description="Pick the page's colour in the browser.",
                    parameters_schema=COLOR_SCHEMA,
                )
            )
        if own is not None:
            self.tools.append(own)
        self.review = review

    def _weather(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.weather_runs += 1
        return "14°C"

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        callbacks = [] if self.review is None else [self.review]
        return LLMChain(self.model, tools=self.tools, callbacks=callbacks).add_messages(
            list(messages)
        )

    def tool_results_read(self) -> list[tuple[str, str, bool]]:
        """The results the model read in its last request: (call id, text,
        is_error)."""
        last = self.model.requests[-1].messages
        return [
            (r.tool_call_id, tool_result_text(r), r.is_error)
            for m in last
            if m.role == "tool"
            for r in m.tool_results
        ]


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served app."""
    with httpx.Client(timeout=30) as http:
        yield http


# --- AG-UI ---------------------------------------------------------------------------

FRONTEND_TOOLS = [
    {
        "name": "pick_color",
        "description": "Pick the page's colour in the browser.",
        "parameters": COLOR_SCHEMA,
    }
]
USER = {"id": "user-1", "role": "user", "content": QUESTION}


def run_input(
    messages: Sequence[Mapping[str, Any]] = (USER,),
    *,
    run: str = "run-1",
    tools: Sequence[Mapping[str, Any]] = FRONTEND_TOOLS,
    resume: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """A ``RunAgentInput`` as the AG-UI client posts it."""
    body: dict[str, Any] = {
        "threadId": THREAD,
        "runId": run,
        "messages": list(messages),
        "tools": list(tools),
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if resume is not None:
        body["resume"] = list(resume)
    return body


def events(response: httpx.Response) -> list[dict[str, Any]]:
    """The events of an event-stream answer."""
    assert response.status_code == 200, response.text
    return [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def calls_made(out: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The assistant message carrying the streamed tool calls, as the client
    keeps it."""
    calls: dict[str, dict[str, Any]] = {}
    parent = "answer"
    for event in out:
        if event["type"] == "TOOL_CALL_START":
            parent = event["parentMessageId"]
            calls[event["toolCallId"]] = {
                "id": event["toolCallId"],
                "type": "function",
                "function": {"name": event["toolCallName"], "arguments": ""},
            }
        elif event["type"] == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["function"]["arguments"] += event["delta"]
    return {"id": parent, "role": "assistant", "toolCalls": list(calls.values())}


def tool_message(call_id: str, content: str, **extra: Any) -> dict[str, Any]:
    """The tool message the client adds with a frontend tool's result."""
    return {
        "id": f"result-{call_id}",
        "role": "tool",
        "toolCallId": call_id,
        "content": content,
        **extra,
    }


def resume_all(finished: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A resume approving every interrupt of a RUN_FINISHED event."""
    return [
        {"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
        for i in finished["outcome"]["interrupts"]
    ]


def text(out: Sequence[Mapping[str, Any]]) -> str:
    """The streamed answer text."""
    return "".join(e["delta"] for e in out if e["type"] == "TEXT_MESSAGE_CONTENT")


class TestAgui:
    """The request's ``tools`` are the frontend's; a run waiting for them
    finishes with ``pendingToolCallIds``, and their results resume it."""

    def serve(self, agent: ClientAgent, store: Any = None) -> Any:
        return serving(create_agui_app(agent=agent, store=store))

    def test_a_frontend_tool_call_waits_for_the_client_then_its_result_is_read(
        self, client: httpx.Client
    ) -> None:
        """The call streams, the run finishes with it pending; the posted
        result resumes the stored run and the model reads it; posted again,
        it runs nothing."""
        agent = ClientAgent(declare=False)
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input()))
            assert first[-1]["outcome"] == {
                "type": "success",
                "pendingToolCallIds": ["call_1"],
            }
            assert [e["type"] for e in first].count("TOOL_CALL_END") == 1
            assert not [e for e in first if e["type"] == "TOOL_CALL_RESULT"]
            read = client.get(f"{url}{THREAD}/messages").json()
            assert read["pendingToolCallIds"] == ["call_1"]
            assert read["interrupts"] == []
            conversation = [USER, calls_made(first), tool_message("call_1", PICKED)]
            second = events(client.post(url, json=run_input(conversation, run="r2")))
            # The client has its own tool message: no second one is sent.
            assert not [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
            assert text(second) == ANSWER
            assert "outcome" not in second[-1]
            assert agent.tool_results_read() == [("call_1", PICKED, False)]
            again = events(client.post(url, json=run_input(conversation, run="r3")))
            assert [e["type"] for e in again] == ["RUN_STARTED", "RUN_ERROR"]
            assert again[-1]["code"] == "conflict"
            assert "pick_color ('call_1')" in again[-1]["message"]
            assert agent.model.remaining == 0

    def test_a_result_posted_without_the_tools_still_resumes(
        self, client: httpx.Client
    ) -> None:
        """The stored run keeps the names of its client tools: a request that
        declares none still loads and resumes it."""
        agent = ClientAgent(declare=False)
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input()))
            conversation = [USER, calls_made(first), tool_message("call_1", PICKED)]
            posted = run_input(conversation, run="r2", tools=[])
            assert text(events(client.post(url, json=posted))) == ANSWER

    def test_a_failed_client_result_is_an_error_the_model_reads(
        self, client: httpx.Client
    ) -> None:
        """A tool message with ``error`` is a failed call."""
        agent = ClientAgent(declare=False)
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input()))
            failed = tool_message("call_1", "no colour", error="no colour")
            conversation = [USER, calls_made(first), failed]
            second = events(client.post(url, json=run_input(conversation, run="r2")))
            assert not [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
            assert agent.tool_results_read() == [("call_1", "no colour", True)]

    def test_a_denied_call_never_reaches_the_client(self, client: httpx.Client) -> None:
        """Review denies it: the result says so and nothing is pending."""
        agent = ClientAgent(declare=False, review=Review(["pick_color"], deny=True))
        with self.serve(agent) as url:
            out = events(client.post(url, json=run_input()))
            result = next(e for e in out if e["type"] == "TOOL_CALL_RESULT")
            assert result["metadata"] == {"langhooks.tool_outcome": "denied"}
            assert "outcome" not in out[-1]
            assert text(out) == ANSWER

    def test_an_approval_comes_before_the_client_runs_it(
        self, client: httpx.Client
    ) -> None:
        """Review interrupts: an interrupt, not a pending call; approved, the
        resumed run hands the call to the client; its result ends the run."""
        review = Review(["pick_color"])
        agent = ClientAgent(declare=False, review=review)
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input()))
            assert first[-1]["outcome"]["type"] == "interrupt"
            made = calls_made(first)
            second = events(
                client.post(url, json=run_input(run="r2", resume=resume_all(first[-1])))
            )
            assert second[-1]["outcome"] == {
                "type": "success",
                "pendingToolCallIds": ["call_1"],
            }
            conversation = [USER, made, tool_message("call_1", PICKED)]
            third = events(client.post(url, json=run_input(conversation, run="r3")))
            assert text(third) == ANSWER
            assert review.seen == [None, "approve", "edit"]

    def test_approvals_and_results_answer_one_batch_together(
        self, client: httpx.Client
    ) -> None:
        """A server call waiting for approval beside a client call: the resume
        must bring the client's result too (422 without it)."""
        agent = ClientAgent(
            [pick("call_1"), weather("call_2")],
            declare=False,
            review=Review(["get_weather"]),
        )
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input()))
            (interrupt,) = first[-1]["outcome"]["interrupts"]
            assert interrupt["toolCallId"] == "call_2"
            bare = client.post(url, json=run_input(resume=resume_all(first[-1])))
            assert bare.status_code == 422
            assert "call_1" in bare.json()["message"]
            only_result = [USER, calls_made(first), tool_message("call_1", PICKED)]
            waiting = client.post(url, json=run_input(only_result, run="r2"))
            assert waiting.status_code == 409
            assert "get_weather ('call_2')" in waiting.json()["message"]
            second = events(
                client.post(
                    url,
                    json=run_input(only_result, run="r3", resume=resume_all(first[-1])),
                )
            )
            assert text(second) == ANSWER
            results = [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
            assert [e["toolCallId"] for e in results] == ["call_2"]
            assert agent.weather_runs == 1
            assert sorted(agent.tool_results_read()) == [
                ("call_1", PICKED, False),
                ("call_2", "14°C", False),
            ]

    def test_posting_without_the_result_is_refused(self, client: httpx.Client) -> None:
        """The conversation posted back without the result: 409 says what the
        thread waits for."""
        agent = ClientAgent(declare=False)
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input()))
            again = client.post(url, json=run_input([USER, calls_made(first)]))
            assert again.status_code == 409
            message = again.json()["message"]
            assert "results of the client tool call(s) pick_color ('call_1')" in message

    def test_the_agents_own_tool_of_that_name_runs_on_the_server(
        self, client: httpx.Client
    ) -> None:
        """A frontend tool named as one of the agent's: the agent's runs."""
        ran: list[str] = []

        def server_pick(arguments: Mapping[str, Any], context: ToolContext) -> str:
            ran.append(arguments["mood"])
            return PICKED

        agent = ClientAgent(declare=False, own=Tool("pick_color", server_pick))
        with self.serve(agent) as url:
            out = events(client.post(url, json=run_input()))
            assert text(out) == ANSWER
            assert ran == ["calm"]

    def test_a_tool_langhooks_does_not_take_is_refused(
        self, client: httpx.Client
    ) -> None:
        """A frontend tool whose name is no tool name: 400, nothing ran."""
        agent = ClientAgent(declare=False)
        with self.serve(agent) as url:
            bad = [{"name": "pick color", "description": "", "parameters": {}}]
            refused = client.post(url, json=run_input(tools=bad))
            assert refused.status_code == 400
            assert refused.json()["message"].startswith("tools: ")
            assert agent.model.requests == ()

    def test_a_result_another_worker_took_meanwhile_runs_nothing(
        self, client: httpx.Client
    ) -> None:
        """A worker that listed the run before another resumed it (or before
        the store forgot it): conflict, with the result alone or beside a
        resume."""
        store = StalePendingStore()
        agent = ClientAgent(declare=False)
        with self.serve(agent, store) as url:
            first = events(client.post(url, json=run_input()))
            store.frozen = store.inner.pending()
            conversation = [USER, calls_made(first), tool_message("call_1", PICKED)]
            events(client.post(url, json=run_input(conversation, run="r2")))
            late = events(client.post(url, json=run_input(conversation, run="r3")))
            assert late[-1]["code"] == "conflict"
            assert "answered by another request" in late[-1]["message"]
            resume = [
                {
                    "interruptId": "run-1/call_1",
                    "status": "resolved",
                    "payload": {"approved": True},
                }
            ]
            beside = events(
                client.post(url, json=run_input(conversation, run="r4", resume=resume))
            )
            assert beside[-1]["code"] == "conflict"
            assert store.delete(store.frozen[0].run_id)
            gone = events(client.post(url, json=run_input(conversation, run="r5")))
            assert gone[-1]["code"] == "conflict"
            assert agent.model.remaining == 0

    def test_the_agents_client_tool_needs_no_frontend_declaration(
        self, client: httpx.Client
    ) -> None:
        """``agui.client_tool`` on the server is the same client tool."""
        assert agui_client_tool is client_tool
        agent = ClientAgent(declare=True)
        with self.serve(agent) as url:
            first = events(client.post(url, json=run_input(tools=[])))
            assert first[-1]["outcome"]["pendingToolCallIds"] == ["call_1"]


# --- UI messages ---------------------------------------------------------------------

UI_USER = {
    "id": "user-1",
    "role": "user",
    "parts": [{"type": "text", "text": QUESTION}],
}


def message_of(
    out: Sequence[Mapping[str, Any]], earlier: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The assistant message ``useChat`` builds from a stream (continuing
    ``earlier``): its tool parts in the states the chunks leave them in."""
    message = (
        copy.deepcopy(dict(earlier))
        if earlier is not None
        else {"id": out[0]["messageId"], "role": "assistant", "parts": []}
    )
    parts = {p["toolCallId"]: p for p in message["parts"] if "toolCallId" in p}
    for chunk in out:
        kind = chunk["type"]
        if kind == "tool-input-start":
            part = {
                "type": f"tool-{chunk['toolName']}",
                "toolCallId": chunk["toolCallId"],
                "state": "input-streaming",
                "input": None,
                "text": "",
            }
            parts[chunk["toolCallId"]] = part
            message["parts"].append(part)
        elif kind == "tool-input-delta":
            part = parts[chunk["toolCallId"]]
            part["text"] += chunk["inputTextDelta"]
            with contextlib.suppress(ValueError):  # parsePartialJson: once it parses
                part["input"] = json.loads(part["text"])
        elif kind == "tool-input-available":
            parts[chunk["toolCallId"]].update(
                state="input-available", input=chunk["input"]
            )
        elif kind == "tool-approval-request":
            parts[chunk["toolCallId"]].update(
                state="approval-requested", approval={"id": chunk["approvalId"]}
            )
        elif kind == "tool-output-available":
            parts[chunk["toolCallId"]].update(
                state="output-available", output=chunk["output"]
            )
        elif kind == "tool-output-denied":
            parts[chunk["toolCallId"]]["state"] = "output-denied"
    for part in message["parts"]:
        part.pop("text", None)
    return message


def with_output(message: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    """``message`` after ``addToolOutput`` for ``call_id``."""
    changed = copy.deepcopy(dict(message))
    for part in changed["parts"]:
        if part.get("toolCallId") == call_id:
            part.update(state="output-available", output={"color": "#a0c4ff"})
    return changed


def approved(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` with every approval request approved."""
    changed = copy.deepcopy(dict(message))
    for part in changed["parts"]:
        if part.get("state") == "approval-requested":
            part.update(
                state="approval-responded",
                approval={"id": part["approval"]["id"], "approved": True},
            )
    return changed


def ui_text(out: Sequence[Mapping[str, Any]]) -> str:
    """The streamed answer text."""
    return "".join(c["delta"] for c in out if c["type"] == "text-delta")


OUTPUT = json.dumps({"color": "#a0c4ff"})


class TestUiMessages:
    """A client tool's input is made available once review let it go; the
    output posted back resumes the run."""

    def serve(self, agent: ClientAgent, store: Any = None) -> Any:
        return serving(create_ui_message_app(agent=agent, store=store))

    def test_the_client_runs_the_call_and_its_output_is_read_once(
        self, client: httpx.Client
    ) -> None:
        """``tool-input-available`` and a finish with reason "tool-calls"; the
        output resumes the same message; posted again, 409."""
        agent = ClientAgent()
        with self.serve(agent) as url:
            first = chunks(client.post(url, json=chat([UI_USER])))
            kinds = [c["type"] for c in first]
            assert "tool-approval-request" not in kinds
            assert kinds.index("tool-input-available") > kinds.index("tool-input-delta")
            assert first[-1] == {"type": "finish", "finishReason": "tool-calls"}
            message = message_of(first)
            read = client.get(f"{url}chat-1/messages").json()
            (part,) = [p for p in read["messages"][-1]["parts"] if "toolCallId" in p]
            assert part["state"] == "input-available"
            posted = chat([UI_USER, with_output(message, "call_1")])
            second = chunks(client.post(url, json=posted))
            assert second[0] == {"type": "start", "messageId": message["id"]}
            # The client keeps its own output (an object here), unreplaced.
            assert not [c for c in second if c["type"].startswith("tool-output")]
            assert ui_text(second) == ANSWER
            assert agent.tool_results_read() == [("call_1", OUTPUT, False)]
            again = client.post(url, json=posted)
            assert again.status_code == 409
            assert "pick_color ('call_1')" in again.text

    def test_the_input_waits_for_the_approval(self, client: httpx.Client) -> None:
        """Review interrupts: an approval request and no input available (the
        client's ``onToolCall`` does not fire); approved, the resumed stream
        makes the input available."""
        review = Review(["pick_color"])
        agent = ClientAgent(review=review)
        with self.serve(agent) as url:
            first = chunks(client.post(url, json=chat([UI_USER])))
            kinds = [c["type"] for c in first]
            assert "tool-input-available" not in kinds
            assert "tool-approval-request" in kinds
            message = message_of(first)
            assert message["parts"][0]["input"] == {"mood": "calm"}
            second = chunks(client.post(url, json=chat([UI_USER, approved(message)])))
            available = [c for c in second if c["type"] == "tool-input-available"]
            assert available == [
                {
                    "type": "tool-input-available",
                    "toolCallId": "call_1",
                    "toolName": "pick_color",
                    "input": {"mood": "calm"},
                }
            ]
            message = message_of(second, approved(message))
            third = chunks(
                client.post(url, json=chat([UI_USER, with_output(message, "call_1")]))
            )
            assert ui_text(third) == ANSWER
            assert review.seen == [None, "approve", "edit"]

    def test_a_denied_call_never_reaches_the_client(self, client: httpx.Client) -> None:
        """Review denies it: denied, never available."""
        agent = ClientAgent(review=Review(["pick_color"], deny=True))
        with self.serve(agent) as url:
            out = chunks(client.post(url, json=chat([UI_USER])))
            kinds = [c["type"] for c in out]
            assert "tool-input-available" not in kinds
            assert "tool-output-denied" in kinds
            assert ui_text(out) == ANSWER

    def test_approvals_and_outputs_answer_one_batch_together(
        self, client: httpx.Client
    ) -> None:
        """A server call waiting for approval beside a client call: the
        approvals must come with the client's output (422 without it); the
        output alone is refused (409) while the approval waits."""
        agent = ClientAgent(
            [pick("call_1"), weather("call_2")], review=Review(["get_weather"])
        )
        with self.serve(agent) as url:
            first = chunks(client.post(url, json=chat([UI_USER])))
            message = message_of(first)
            bare = client.post(url, json=chat([UI_USER, approved(message)]))
            assert bare.status_code == 422
            assert "call_1" in bare.text
            early = client.post(
                url, json=chat([UI_USER, with_output(message, "call_1")])
            )
            assert early.status_code == 409
            assert "get_weather ('call_2')" in early.text
            both = approved(with_output(message, "call_1"))
            second = chunks(client.post(url, json=chat([UI_USER, both])))
            outputs = [c for c in second if c["type"].startswith("tool-output")]
            assert [c["toolCallId"] for c in outputs] == ["call_2"]
            assert ui_text(second) == ANSWER
            assert agent.weather_runs == 1

    def test_posting_without_the_output_is_refused(self, client: httpx.Client) -> None:
        """The conversation posted back without the output: 409 names it."""
        agent = ClientAgent()
        with self.serve(agent) as url:
            message = message_of(chunks(client.post(url, json=chat([UI_USER]))))
            again = client.post(url, json=chat([UI_USER, message]))
            assert again.status_code == 409
            assert "outputs of the client tool call(s) pick_color" in again.text

    def test_an_output_another_worker_took_meanwhile_runs_nothing(
        self, client: httpx.Client
    ) -> None:
        """A worker that listed the run before another resumed it: 409, for a
        new output and for one posted beside approvals."""
        store = StalePendingStore()
        agent = ClientAgent()
        with self.serve(agent, store) as url:
            message = message_of(chunks(client.post(url, json=chat([UI_USER]))))
            store.frozen = store.inner.pending()
            posted = chat([UI_USER, with_output(message, "call_1")])
            chunks(client.post(url, json=posted))
            late = client.post(url, json=posted)
            assert late.status_code == 409
            assert "answered by another request" in late.text


class TestAChainThatWaitsItself:
    """An agent whose chain already waits (its own interrupted history): a
    request that neither answers nor moves on is refused in both apps."""

    def waiting(self) -> LLMChain:
        model = ScriptedChatModel([ScriptedTurn(text="", tool_calls=[pick()])])
        chain = LLMChain(model, tools=[client_tool("pick_color")])
        result = chain.add_messages([Message.user(QUESTION)]).run()
        assert result.status == "interrupted"
        return result.chain

    def test_agui(self, client: httpx.Client) -> None:
        chain = self.waiting()
        with serving(create_agui_app(agent=lambda _: chain)) as url:
            refused = client.post(url, json=run_input())
            assert refused.status_code == 409
            assert "pick_color ('call_1')" in refused.json()["message"]

    def test_ui_messages(self, client: httpx.Client) -> None:
        chain = self.waiting()
        with serving(create_ui_message_app(agent=lambda _: chain)) as url:
            refused = client.post(url, json=chat([UI_USER]))
            assert refused.status_code == 409
            assert "pick_color ('call_1')" in refused.text


class TestTranslations:
    """The UI-message translation of a run with a client tool's call."""

    def client_run(self) -> list[EventRecord]:
        """A run on a model that answers whole, calling a client tool."""
        chain = LLMChain(WholeAnswers(), tools=[client_tool("get_weather")])
        return recorded(chain.add_message(Message.user("Oslo?")))[1]

    def test_a_held_call_answered_whole_shows_its_input(self) -> None:
        """Nothing streamed: the held call's input comes as one delta, and is
        made available once it waits for the client."""
        translator = UiMessageTranslator(client_tools=frozenset({"get_weather"}))
        out = [c for r in self.client_run() for c in translator.translate(r)]
        calls = [c for c in out if c.get("toolCallId") == "w"]
        assert [c["type"] for c in calls] == [
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
        ]
        assert json.loads(calls[1]["inputTextDelta"]) == {"city": "Oslo"}
        assert translator.waits(calls[2])
        assert not translator.waits(calls[0])

    def test_recorded_runs_make_the_input_available_once(self) -> None:
        """``ui_message_chunks`` knows no client tools: the call's input is
        available as the model made it, and not again when it waits."""
        out = list(ui_message_chunks(self.client_run()))
        available = [c for c in out if c["type"] == "tool-input-available"]
        assert [c["toolCallId"] for c in available] == ["w"]
        assert out[-1] == {"type": "finish", "finishReason": "tool-calls"}


class TestTheTool:
    """``client_tool``'s function, run by a chain."""

    def test_a_malformed_result_fails_the_call(self) -> None:
        """Arguments whose ``CLIENT_RESULT`` is not the apps' shape: a failure
        the model reads, naming the key."""
        model = ScriptedChatModel(
            [ScriptedTurn(text="", tool_calls=[pick()]), ScriptedTurn(text="ok")]
        )
        chain = LLMChain(model, tools=[client_tool("pick_color")])
        waiting = chain.add_messages([Message.user(QUESTION)]).run()
        assert waiting.status == "interrupted"
        wrong = Decision.edit({"mood": "calm", CLIENT_RESULT: "red"})
        done = waiting.chain.execute_tool_calls_with_decisions([pick()], [wrong])
        result = done.chain.messages[-1].tool_results[0]
        assert result.is_error
        assert CLIENT_RESULT in tool_result_text(result)

"""AG-UI ``context`` and ``state``, and the AI SDK's ``data-state`` part: what the
frontend apps share with a run beside its messages (``_frontends/_shared_state``),
over HTTP on uvicorn and with the official JavaScript clients."""

from __future__ import annotations

import asyncio
import copy
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from langhooks import (
    LangHooksError,
    Message,
    Tool,
    ToolCall,
    ToolContext,
    chain_callbacks,
)
from langhooks.chain import LLMChain
from langhooks.cli.demo import ApprovalGate
from langhooks.events import EventRecord
from langhooks.integrations._frontends._agui_events import AguiTranslator
from langhooks.integrations._frontends._app import (
    LiveRun,
    Translation,
    stream_events,
)
from langhooks.integrations._frontends._runner import runs_of
from langhooks.integrations._frontends._shared_state import (
    CONTEXT_HEADER,
    SharedState,
    StateTranslation,
    agui_state_events,
    json_patch,
    shared_work,
    sharing,
    with_context,
)
from langhooks.integrations.agui import create_agui_app, shared_state
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ScriptedChatModel, ScriptedTurn

from ._frontend_agent import UnsavingStore
from ._web_harness import serving
from .test_agui_app import answers, approve, run_input
from .test_frontends_js import drive
from .test_ui_message_app import chat, chunks

GUIDE = (Path(__file__).parents[2] / "docs" / "guide" / "frontends.md").read_text(
    encoding="utf-8"
)
ITEM = "tea"
START = {"items": ["milk"], "owner": "ann"}
AFTER = {"items": ["milk", ITEM], "owner": "ann", "count": 2}


def add_turns(call_id: str = "call_1") -> list[ScriptedTurn | LangHooksError]:
    """A call of ``add_item``, then the answer."""
    call = ToolCall(call_id=call_id, name="add_item", arguments={"item": ITEM})
    return [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text=f"Added {ITEM}.")]


class CartAgent:
    """``agent(messages)``: a tool that adds an item to the shared state's
    list, and a handler that reads the state when a run starts."""

    def __init__(
        self,
        turns: Sequence[ScriptedTurn | LangHooksError] | None = None,
        *,
        gate: bool = False,
    ) -> None:
        self.model = ScriptedChatModel(list(add_turns() if turns is None else turns))
        self.gate = gate
        self.tool_saw: list[tuple[Any, Any]] = []
        self.handler_saw: list[Any] = []
        self._lock = threading.Lock()
        self.tool = Tool("add_item", self._add, description="Add an item.")

    def _add(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        state = shared_state()
        assert state is not None
        now = state.get()
        with self._lock:
            self.tool_saw.append((copy.deepcopy(now), state.forwarded_props))
        items = [*now.get("items", []), arguments["item"]]
        state.update({"items": items, "count": len(items)})
        return f"{len(items)} items"

    def _started(self, chain: Any) -> None:
        state = shared_state()
        self.handler_saw.append(None if state is None else state.get())

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        callbacks: list[Any] = [chain_callbacks(on_run_start=self._started)]
        if self.gate:
            callbacks.append(ApprovalGate())
        chain = LLMChain(self.model, tools=[self.tool], callbacks=callbacks)
        return chain.add_messages(messages)


def apply_patch(document: Any, operations: Sequence[Mapping[str, Any]]) -> Any:
    """RFC 6902 ``add``, ``remove`` and ``replace`` applied to a copy."""
    document = copy.deepcopy(document)
    for operation in operations:
        path = operation["path"]
        if path == "":
            document = copy.deepcopy(operation["value"])
            continue
        keys = [
            key.replace("~1", "/").replace("~0", "~") for key in path.split("/")[1:]
        ]
        parent = document
        for key in keys[:-1]:
            parent = parent[key]
        if operation["op"] == "remove":
            del parent[keys[-1]]
        else:
            parent[keys[-1]] = copy.deepcopy(operation["value"])
    return document


def agui_post(url: str, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of one AG-UI request."""
    return answers(httpx.post(url, json=dict(body), timeout=30))


def context_messages(model: ScriptedChatModel, request: int) -> list[Message]:
    """The system messages saying AG-UI context in the model's ``request``."""
    return [
        m
        for m in model.requests[request].messages
        if m.role == "system" and m.text.startswith(CONTEXT_HEADER)
    ]


class TestAguiState:
    """``state`` is the run's shared state; a change goes back as AG-UI events."""

    def test_tool_change_is_a_delta_then_a_snapshot(self) -> None:
        """The tool and a handler read the client's state (and the tool the
        forwarded props); the tool's change arrives as a ``STATE_DELTA`` that
        turns the client's state into the new one, then ``STATE_SNAPSHOT``
        before ``RUN_FINISHED``."""
        agent = CartAgent()
        body = {**run_input(), "state": START, "forwardedProps": {"tenant": "t1"}}
        with serving(create_agui_app(agent=agent)) as url:
            events = agui_post(url, body)
        types = [event["type"] for event in events]
        assert types[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]
        (delta,) = (event for event in events if event["type"] == "STATE_DELTA")
        assert types.index("STATE_DELTA") > types.index("TOOL_CALL_END")
        assert apply_patch(START, delta["delta"]) == AFTER
        assert events[-2]["snapshot"] == AFTER
        assert agent.tool_saw == [(START, {"tenant": "t1"})]
        assert agent.handler_saw == [START]

    def test_no_change_sends_no_state(self) -> None:
        """A run whose tools leave the state alone sends no state event."""
        agent = CartAgent([ScriptedTurn(text="Nothing to do.")])
        with serving(create_agui_app(agent=agent)) as url:
            events = agui_post(url, {**run_input(), "state": START})
        assert not [e for e in events if e["type"].startswith("STATE_")]
        assert agent.handler_saw == [START]

    def test_resumed_run_reads_the_state_the_resume_sent(self) -> None:
        """After an interrupt, the resumed run's tool reads the state sent with
        the resume (the client's is the truth), and its change comes back."""
        agent = CartAgent(gate=True)
        newer = {"items": ["bread"]}
        with serving(create_agui_app(agent=agent)) as url:
            first = agui_post(url, {**run_input(), "state": START})
            assert not [e for e in first if e["type"].startswith("STATE_")]
            resume = approve(first[-1])
            body = {**run_input(run="run-2", resume=resume), "state": newer}
            second = agui_post(url, body)
        assert agent.tool_saw == [(newer, {})]
        assert second[-2]["snapshot"] == {"items": ["bread", ITEM], "count": 2}

    def test_a_failed_run_still_sends_its_change(self) -> None:
        """A run that fails after a tool changed the state sends the change
        (before the result) and the closing snapshot before ``RUN_ERROR``."""
        error = LangHooksError("invalid_request", "no")
        agent = CartAgent([*add_turns()[:1], error])
        with serving(create_agui_app(agent=agent)) as url:
            events = agui_post(url, {**run_input(), "state": START})
        types = [event["type"] for event in events]
        assert types.index("STATE_DELTA") < types.index("TOOL_CALL_RESULT")
        assert types[-2:] == ["STATE_SNAPSHOT", "RUN_ERROR"]
        assert events[-2]["snapshot"] == AFTER

    def test_a_run_that_raises_sends_its_change(self) -> None:
        """A run whose work raises (the store cannot save the interrupted
        run) still sends the change a handler made, then ``RUN_ERROR``."""

        def changing(chain: Any, result: Any) -> None:
            state = shared_state()
            assert state is not None
            state.set({"seen": True})

        def agent(messages: Sequence[Message]) -> LLMChain:
            chain = CartAgent(gate=True)(messages)
            return chain.add_callback(chain_callbacks(on_run_complete=changing))

        app = create_agui_app(agent=agent, store=UnsavingStore())
        with serving(app) as url:
            events = agui_post(url, {**run_input(), "state": START})
        types = [event["type"] for event in events]
        assert types[-3:] == ["STATE_DELTA", "STATE_SNAPSHOT", "RUN_ERROR"]
        assert events[-2]["snapshot"] == {"seen": True}


class TestConcurrentTools:
    """Tools that run at once, each in its own worker thread, share one state."""

    def test_each_thread_sees_and_changes_the_state(self) -> None:
        """Two concurrent calls read the client's state in their own threads;
        both changes reach the client."""
        seen: list[Any] = []
        lock = threading.Lock()

        def mark(arguments: Mapping[str, Any], context: ToolContext) -> str:
            state = shared_state()
            assert state is not None
            with lock:
                seen.append(state.get()["owner"])
            state.update({arguments["key"]: threading.get_ident()})
            return "marked"

        calls = [
            ToolCall(call_id=f"c{i}", name="mark", arguments={"key": f"k{i}"}, index=i)
            for i in range(2)
        ]
        model = ScriptedChatModel(
            [ScriptedTurn(tool_calls=calls), ScriptedTurn(text="Marked.")]
        )
        tool = Tool("mark", mark, concurrent=True)

        def agent(messages: Sequence[Message]) -> LLMChain:
            return LLMChain(model, tools=[tool]).add_messages(messages)

        with serving(create_agui_app(agent=agent)) as url:
            events = agui_post(url, {**run_input(), "state": START})
        assert seen == ["ann", "ann"]
        final = events[-2]["snapshot"]
        assert {"k0", "k1"} <= set(final)
        deltas = [e["delta"] for e in events if e["type"] == "STATE_DELTA"]
        state = START
        for delta in deltas:
            state = apply_patch(state, delta)
        assert state == final


class CatchingUp:
    """A frontend's translation that sets ``caught_up`` once it has translated
    the record made just before a tool runs (``on_tool_pre_execution``)."""

    def __init__(self, inner: Translation, caught_up: threading.Event) -> None:
        self.inner = inner
        self.caught_up = caught_up

    def translate(self, record: EventRecord) -> list[dict[str, Any]]:
        events = self.inner.translate(record)
        if record.event == "on_tool_pre_execution":
            self.caught_up.set()
        return events

    def ends(self, event: Mapping[str, Any]) -> bool:
        return self.inner.ends(event)

    def waits(self, event: Mapping[str, Any]) -> bool:
        return self.inner.waits(event)

    def failed(self, exc: BaseException) -> list[dict[str, Any]]:
        return self.inner.failed(exc)

    @property
    def run_id(self) -> str | None:
        return self.inner.run_id


def add_to_cart(arguments: Mapping[str, Any]) -> str:
    """What ``CartAgent``'s tool does to the shared state."""
    state = shared_state()
    assert state is not None
    items = [*state.get()["items"], arguments["item"]]
    state.update({"items": items, "count": len(items)})
    return f"{len(items)} items"


class TestOrder:
    """A change is sent right after the last record made before it, however
    far the event loop has got with the records."""

    @pytest.mark.parametrize("how", ["thread", "concurrent", "async"])
    def test_a_change_the_loop_sees_late_precedes_the_next_record(
        self, how: str
    ) -> None:
        """The tool changes the state only once the loop has translated the
        record made before it (it waits for that): the change still comes
        right before the next record's ``TOOL_CALL_RESULT``, not after it. The
        tool runs in the run's worker thread (``run()``), in a worker thread
        of its own (a concurrent sync tool under ``arun()``: the records
        before it are made there too), or as an async tool on the loop."""
        caught_up = threading.Event()

        def add(arguments: Mapping[str, Any], context: ToolContext) -> str:
            assert caught_up.wait(timeout=30)
            return add_to_cart(arguments)

        async def add_async(arguments: Mapping[str, Any], context: ToolContext) -> str:
            assert await asyncio.to_thread(caught_up.wait, 30)
            return add_to_cart(arguments)

        tool = {
            "thread": Tool("add_item", add),
            "concurrent": Tool("add_item", add, concurrent=True),
            "async": Tool("add_item", add_async),
        }[how]
        model = ScriptedChatModel(add_turns())
        chain = LLMChain(model, tools=[tool]).add_messages([Message.user("Hi")])
        work = runs_of(None, how != "thread", False).fresh(chain, {})

        async def stream() -> list[dict[str, Any]]:
            state = SharedState(START)
            live = LiveRun(shared_work(work, state))
            translator = AguiTranslator(thread_id="t", run_id="r")
            shared = StateTranslation(translator, state, agui_state_events)
            translation = CatchingUp(shared, caught_up)
            return [
                event
                async for event in stream_events(live, translation, 30)
                if event is not None
            ]

        events = asyncio.run(stream())
        types = [event["type"] for event in events]
        result = types.index("TOOL_CALL_RESULT")
        assert types[result - 1] == "STATE_DELTA"
        assert apply_patch(START, events[result - 1]["delta"]) == AFTER
        assert types[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]

    def test_a_change_before_the_first_record_follows_run_started(self) -> None:
        """A handler's ``on_run_start`` runs before the app's recorder records
        the run's start: its change comes right after ``RUN_STARTED``, which
        opens the stream."""

        def starting(chain: Any) -> None:
            state = shared_state()
            assert state is not None
            state.update({"count": 0})

        def agent(messages: Sequence[Message]) -> LLMChain:
            model = ScriptedChatModel([ScriptedTurn(text="Hi.")])
            handler = chain_callbacks(on_run_start=starting)
            return LLMChain(model, callbacks=[handler]).add_messages(messages)

        with serving(create_agui_app(agent=agent)) as url:
            events = agui_post(url, {**run_input(), "state": START})
        assert [event["type"] for event in events[:2]] == ["RUN_STARTED", "STATE_DELTA"]
        assert events[1]["delta"] == [{"op": "add", "path": "/count", "value": 0}]


class TestAguiContext:
    """``context`` entries reach the model as one system message."""

    def test_context_is_one_system_message_before_the_user_turn(self) -> None:
        """The entries are one system message placed before the run's user
        message; the next run, with the conversation posted back, has one again
        (the snapshot never gave it to the client)."""
        agent = CartAgent([ScriptedTurn(text="Hi."), ScriptedTurn(text="Again.")])
        context = [
            {"description": "page", "value": "checkout"},
            {"description": "currency", "value": "EUR"},
        ]
        body = {**run_input(), "context": context}
        with serving(create_agui_app(agent=agent)) as url:
            agui_post(url, body)
            later = [
                *body["messages"],
                {"id": "a-1", "role": "assistant", "content": "Hi."},
                {"id": "user-2", "role": "user", "content": "And now?"},
            ]
            agui_post(url, {**body, "runId": "run-2", "messages": later})
        (said,) = context_messages(agent.model, 0)
        assert said.text == f"{CONTEXT_HEADER}\n- page: checkout\n- currency: EUR"
        first = list(agent.model.requests[0].messages)
        assert [m.role for m in first] == ["system", "user"]
        second = list(agent.model.requests[1].messages)
        assert [m.role for m in second] == [
            "user",
            "assistant",
            "system",
            "user",
        ]
        assert len(context_messages(agent.model, 1)) == 1


class TestUiMessageState:
    """The AI SDK client's state: a ``data-state`` part each way."""

    def test_data_state_part_in_and_out(self) -> None:
        """The state of the last ``data-state`` part posted reaches the tool; its
        change comes back as a ``data-state`` part with the id "state"."""
        agent = CartAgent()
        earlier = {
            "id": "a-0",
            "role": "assistant",
            "parts": [
                {"type": "data-state", "id": "state", "data": {"items": []}},
                {"type": "data-state", "id": "state", "data": START},
                {"type": "text", "text": "Hello."},
            ],
        }
        user = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "?"}]}
        with serving(create_ui_message_app(agent=agent)) as url:
            answer = chunks(httpx.post(url, json=chat([earlier, user]), timeout=30))
        (part,) = (chunk for chunk in answer if chunk["type"] == "data-state")
        assert part == {"type": "data-state", "id": "state", "data": AFTER}
        assert agent.tool_saw == [(START, {})]

    def test_body_state_wins_and_none_is_empty(self) -> None:
        """A body's ``"state"`` is the state; without one or a part it is
        ``{}``."""
        agent = CartAgent([*add_turns(), *add_turns("call_2")])
        user = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "?"}]}
        with serving(create_ui_message_app(agent=agent)) as url:
            httpx.post(url, json={**chat([user]), "state": START}, timeout=30)
            httpx.post(url, json=chat([user], "chat-2"), timeout=30)
        assert [seen for seen, _ in agent.tool_saw] == [START, {}]


class TestSharedState:
    """``SharedState`` on its own."""

    def test_outside_a_run_there_is_none(self) -> None:
        """``shared_state()`` is None outside a frontend run, the state inside
        ``sharing``."""
        state = SharedState({"a": 1})
        assert shared_state() is None
        with sharing(state):
            assert shared_state() is state
        assert shared_state() is None

    def test_copies_in_and_out(self) -> None:
        """What ``get`` returns and what ``set`` took are copies."""
        given = {"a": [1]}
        state = SharedState(given, forwarded_props={"x": [1]})
        given["a"].append(2)
        state.get()["a"].append(3)
        state.forwarded_props["x"].append(2)
        assert (state.get(), state.forwarded_props) == ({"a": [1]}, {"x": [1]})
        value = {"b": 2}
        state.set(value)
        value["b"] = 3
        assert state.get() == {"b": 2}

    def test_refusals(self) -> None:
        """Not JSON, or ``update`` on a state that is not an object, is refused
        and changes nothing."""
        state = SharedState([1])
        with pytest.raises(TypeError, match="update needs a state that is an object"):
            state.update({"a": 1})
        with pytest.raises(TypeError, match=r"cannot encode state"):
            state.set({"a": object()})
        with pytest.raises(ValueError, match=r"changes\[\"a\"\]"):
            SharedState({}).update({"a": float("nan")})
        assert (state.get(), state._changes_through(0)) == ([1], [])

    def test_changes_are_taken_once_in_order(self) -> None:
        """``_changes_through`` answers each change made by then, once."""
        state = SharedState()
        assert state._changes_through(5) == []
        state.update({"a": 1})
        state.set([2])
        assert state._changes_through(0) == [{"a": 1}, [2]]
        assert state._changes_through(0) == []


class TestWithContext:
    """Where the context message goes."""

    def test_no_entries_no_message(self) -> None:
        """Without entries the conversation is as it was."""
        messages = [Message.user("hi")]
        assert with_context(messages, []) == messages

    def test_no_user_message_appends(self) -> None:
        """Without a user message the context message ends the conversation."""
        messages = [Message.system("be brief")]
        out = with_context(messages, [("a", "b")])
        assert [m.text for m in out] == ["be brief", f"{CONTEXT_HEADER}\n- a: b"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b/c", "~d", ""]), inner, max_size=3)
    ),
    max_leaves=10,
)


class TestJsonPatch:
    """``json_patch`` is RFC 6902 from one state to another."""

    @given(_json, _json)
    def test_patch_turns_before_into_after(self, before: Any, after: Any) -> None:
        """Applying the patch of any two JSON values to the first gives the
        second; equal values give no operation."""
        assert apply_patch(before, json_patch(before, after)) == after
        assert json_patch(after, copy.deepcopy(after)) == []

    def test_a_type_change_is_a_replace(self) -> None:
        """``1`` and ``True`` are equal in Python and differ in JSON."""
        assert json_patch({"a": 1}, {"a": True}) == [
            {"op": "replace", "path": "/a", "value": True}
        ]


class TestGuide:
    """The guide's ``cart_agent.py``, served by both apps."""

    def test_cart_agent(self) -> None:
        """Its tool adds to the client's cart: AG-UI's closing snapshot and the
        AI SDK's ``data-state`` part hold the item; outside a run there is no
        cart."""
        found = re.search(r"```python\n(# cart_agent\.py\n.*?)```", GUIDE, re.S)
        assert found is not None
        namespace: dict[str, Any] = {}
        exec(compile(found.group(1), "cart_agent.py", "exec"), namespace)
        agent = namespace["agent"]
        cart = {"items": ["milk"]}
        with serving(create_agui_app(agent=agent)) as url:
            events = agui_post(url, {**run_input(), "state": cart})
        assert events[-2]["snapshot"] == {"items": ["milk", "tea"]}
        user = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "?"}]}
        with serving(create_ui_message_app(agent=agent)) as url:
            answer = chunks(httpx.post(url, json=chat([user]), timeout=30))
        (part,) = (chunk for chunk in answer if chunk["type"] == "data-state")
        assert part["data"] == {"items": ["tea"]}
        call = ToolCall(call_id="c", name="add_item", arguments={"item": "x"})
        assert namespace["add_item"](call.arguments, ToolContext(call=call)) == (
            "there is no cart here"
        )


class TestOfficialClients:
    """The official clients read the state the tool made."""

    def test_agui_http_agent(self) -> None:
        """``HttpAgent`` with ``initialState``, ``context`` and
        ``forwardedProps``: after the run its ``state`` is the tool's change,
        applied from the events it validated; the model saw the context."""
        agent = CartAgent()
        summary = drive("agui_state.mjs", create_agui_app(agent=agent))
        assert summary["error"] is None
        assert summary["state"] == AFTER
        # Once applying the delta, once the closing snapshot.
        assert summary["changes"] == [AFTER, AFTER]
        assert agent.tool_saw == [(START, {"tenant": "t1"})]
        (said,) = context_messages(agent.model, 0)
        assert said.text == f"{CONTEXT_HEADER}\n- page: checkout"

    def test_ai_sdk_data_state(self) -> None:
        """AI SDK 6's ``readUIMessageStream`` keeps one ``data-state`` part with
        the tool's change; posted back, that state is what the next run's tool
        reads."""
        agent = CartAgent([*add_turns(), *add_turns("call_2")])
        summary = drive("ui_message_state.mjs", create_ui_message_app(agent=agent))
        first, second = summary["first"], summary["second"]
        assert first["errors"] == second["errors"] == []
        assert first["states"] == [
            {"type": "data-state", "id": "state", "data": {"items": [ITEM], "count": 1}}
        ]
        assert second["states"] == [
            {
                "type": "data-state",
                "id": "state",
                "data": {"items": [ITEM, ITEM], "count": 2},
            }
        ]
        assert [seen for seen, _ in agent.tool_saw] == [
            {},
            {"items": [ITEM], "count": 1},
        ]

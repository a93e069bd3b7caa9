"""The frontend apps with async agents (issue 43 item 1): a chain with an async tool
or an async handler runs with ``arun()`` on the app's event loop, is resumed there,
and can be cancelled; a sync chain keeps running in a thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import httpx
import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    Message,
    Tool,
    ToolContext,
)
from langhooks._persist._stores import awaited_memory
from langhooks.chain import LLMChain
from langhooks.chain._chain import ABANDONED
from langhooks.cli.demo import SYSTEM, ApprovalGate
from langhooks.integrations._frontends._records import tool_result_text
from langhooks.integrations._frontends._runner import is_async
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ScriptedChatModel
from langhooks.stores import MemoryRunStore

from ._frontend_agent import (
    ANSWER,
    FORECAST,
    WEATHER_SCHEMA,
    StalePendingStore,
    weather_turns,
)
from ._web_harness import serving
from .test_agui_app import THREAD, answers, approve, run_input
from .test_ui_message_app import USER, answered, assistant_of, chat, chunks

Kind = Literal["tool", "handler"]
App = Literal["agui", "ui"]


class _LoopNoter(AsyncChainCallbackHandler):
    """An async handler that notes the loop each run starts on."""

    def __init__(self, loops: list[asyncio.AbstractEventLoop]) -> None:
        self._loops = loops

    @override
    async def on_run_start(self, chain: LLMChain) -> None:
        await asyncio.sleep(0)
        self._loops.append(asyncio.get_running_loop())


class AsyncAgent:
    """The weather agent with an async part: an async weather tool (``kind``
    "tool") or an async handler ("handler"). It notes the app's loop (the
    agent is asked on it), the loop the async part ran on, and the tool's runs;
    with ``hold`` the tool waits until it is cancelled."""

    def __init__(self, kind: Kind, *, gate: bool = True, hold: bool = False) -> None:
        self.kind = kind
        self.gate = gate
        self.hold = hold
        self.model = ScriptedChatModel(weather_turns())
        self.app_loops: list[asyncio.AbstractEventLoop] = []
        self.ran_on: list[asyncio.AbstractEventLoop] = []
        self.runs: list[dict[str, Any]] = []
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def _aweather(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> str:
        self.ran_on.append(asyncio.get_running_loop())
        self.started.set()
        if self.hold:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        self.runs.append(dict(arguments))
        return FORECAST

    def _weather(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.runs.append(dict(arguments))
        return FORECAST

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        self.app_loops.append(asyncio.get_running_loop())
        function = self._aweather if self.kind == "tool" else self._weather
        tool = Tool("get_weather", function, parameters_schema=WEATHER_SCHEMA)
        callbacks: list[ChainCallbackHandler | AsyncChainCallbackHandler] = (
            [ApprovalGate()] if self.gate else []
        )
        if self.kind == "handler":
            callbacks.append(_LoopNoter(self.ran_on))
        chain = LLMChain(self.model, tools=[tool], callbacks=callbacks)
        return chain.add_messages([Message.system(SYSTEM), *messages])


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class HeldAgent:
    """A sync weather agent whose tool waits for ``release`` (it runs in a
    thread, where nothing can stop it)."""

    def __init__(self) -> None:
        self.model = ScriptedChatModel(weather_turns())
        self.started = threading.Event()
        self.release = threading.Event()
        self.on_loop: list[bool] = []

    def _weather(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.on_loop.append(_loop_running())
        self.started.set()
        self.release.wait(30)
        return FORECAST

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        tool = Tool("get_weather", self._weather, parameters_schema=WEATHER_SCHEMA)
        chain = LLMChain(self.model, tools=[tool])
        return chain.add_messages([Message.system(SYSTEM), *messages])


def app_of(
    app: App, agent: Callable[[Sequence[Message]], LLMChain], **options: Any
) -> Any:
    """The ``app`` ("agui" or "ui") serving ``agent``."""
    create = create_agui_app if app == "agui" else create_ui_message_app
    return create(agent=agent, **options)


def ask(client: httpx.Client, app: App, url: str) -> list[dict[str, Any]]:
    """The events (or chunks) of a first request."""
    if app == "agui":
        return answers(client.post(url, json=run_input()))
    return chunks(client.post(url, json=chat([USER])))


def approved(
    client: httpx.Client, app: App, url: str, first: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The events (or chunks) of approving ``first``'s waiting call."""
    if app == "agui":
        body = run_input(resume=approve(first[-1]), run="run-2")
        return answers(client.post(url, json=body))
    message = answered(assistant_of(first))
    return chunks(client.post(url, json=chat([USER, message])))


def text_of(app: App, out: Sequence[Mapping[str, Any]]) -> str:
    """The answer's text."""
    kind, key = (
        ("TEXT_MESSAGE_CONTENT", "delta") if app == "agui" else ("text-delta", "delta")
    )
    return "".join(event[key] for event in out if event["type"] == kind)


def waits(app: App, out: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``out`` ends waiting for an approval."""
    if app == "agui":
        return out[-1]["type"] == "RUN_FINISHED" and bool(
            out[-1]["outcome"]["type"] == "interrupt"
        )
    return any(c["type"] == "tool-approval-request" for c in out)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """An HTTP client for the served apps."""
    with httpx.Client(timeout=30) as http:
        yield http


APPS: tuple[App, ...] = ("agui", "ui")


class TestWhoRunsOnTheLoop:
    """``is_async``: an async handler or tool makes a chain run with ``arun()``."""

    @pytest.mark.parametrize("kind", ["tool", "handler"])
    def test_an_async_part(self, kind: Kind) -> None:
        """A chain with an async tool, or an async handler, is async."""

        async def chain() -> LLMChain:
            return AsyncAgent(kind)([])

        assert is_async(asyncio.run(chain()))

    def test_a_sync_chain(self) -> None:
        """A chain with sync handlers and tools is not."""
        assert not is_async(HeldAgent()([]))


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("kind", ["tool", "handler"])
class TestAnAsyncAgent:
    """An agent with an async tool or handler, over HTTP."""

    def test_interrupt_then_resume(
        self, client: httpx.Client, app: App, kind: Kind
    ) -> None:
        """The run stops at the review and the approval resumes it, both with
        ``arun()`` on the app's own loop (the default ``MemoryRunStore``); the
        tool runs once and the model answers."""
        agent = AsyncAgent(kind)
        with serving(app_of(app, agent)) as url:
            first = ask(client, app, url)
            second = approved(client, app, url, first)
        assert waits(app, first)
        assert text_of(app, second) == ANSWER
        assert agent.runs == [{"city": "Paris"}]
        assert agent.ran_on
        assert all(
            loop is agent.app_loops[0] for loop in agent.ran_on + agent.app_loops
        )

    def test_no_review(self, client: httpx.Client, app: App, kind: Kind) -> None:
        """Without a review the run goes on to the answer in one request."""
        agent = AsyncAgent(kind, gate=False)
        with serving(app_of(app, agent)) as url:
            out = ask(client, app, url)
        assert text_of(app, out).endswith(ANSWER)
        assert agent.runs == [{"city": "Paris"}]

    def test_a_new_message_abandons_the_waiting_call(
        self, client: httpx.Client, app: App, kind: Kind
    ) -> None:
        """A new message while the approval waits rejects the call through the
        store's async resume; the tool never runs."""
        agent = AsyncAgent(kind)
        with serving(app_of(app, agent)) as url:
            first = ask(client, app, url)
            if app == "agui":
                snapshot = first[-2]["messages"]
                later = {"id": "user-2", "role": "user", "content": "Never mind."}
                body = run_input([*snapshot, later], run="run-2")
                out = answers(client.post(url, json=body))
            else:
                second = {**USER, "id": "user-2"}
                out = chunks(
                    client.post(url, json=chat([USER, assistant_of(first), second]))
                )
        assert text_of(app, out) == ANSWER
        assert agent.runs == []
        told = agent.model.requests[-1].messages
        results = [r for message in told for r in message.tool_results]
        assert [tool_result_text(r) for r in results] == [ABANDONED]


@pytest.mark.parametrize("app", APPS)
class TestStores:
    """Which store resumes which chain."""

    def test_an_async_store(self, client: httpx.Client, app: App) -> None:
        """Given an ``AsyncRunStore``, runs are saved, read and resumed through
        it, sync chains too (its resume runs them with ``arun()``)."""
        store = _AsyncStore()
        agent = AsyncAgent("tool")
        with serving(app_of(app, agent, store=store)) as url:
            first = ask(client, app, url)
            page = client.get(f"{url}{THREAD if app == 'agui' else 'chat-1'}/messages")
            second = approved(client, app, url, first)
            if app == "agui":
                body = run_input(resume=approve(first[-1]), run="run-3")
                late = answers(client.post(url, json=body))[-1]["code"]
            else:
                message = answered(assistant_of(first))
                late = client.post(url, json=chat([USER, message])).status_code
        assert page.status_code == 200, page.text
        assert text_of(app, second) == ANSWER
        assert late == ("conflict" if app == "agui" else 409)  # answered already
        assert agent.runs == [{"city": "Paris"}]
        assert {"save", "pending", "load", "resume"} <= set(store.asked)

    def test_a_sync_chain_with_an_async_store(
        self, client: httpx.Client, app: App
    ) -> None:
        """A sync chain is resumed through an ``AsyncRunStore`` too."""
        agent = HeldAgent()
        agent.release.set()
        gated = _Gated(agent)
        with serving(app_of(app, gated, store=_AsyncStore())) as url:
            first = ask(client, app, url)
            second = approved(client, app, url, first)
        assert waits(app, first)
        assert text_of(app, second) == ANSWER

    def test_a_sync_store_cannot_resume_an_async_chain(
        self, client: httpx.Client, app: App, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A sync store other than ``MemoryRunStore`` resumes with ``run()``
        only: the resume fails, nothing runs, and the log says to give an
        ``AsyncRunStore``."""
        agent = AsyncAgent("tool")
        with serving(
            app_of(app, agent, store=StalePendingStore(), expose_errors=True)
        ) as url:
            first = ask(client, app, url)
            second = approved(client, app, url, first)
        assert agent.runs == []
        assert "internal_error" in str(second[-1])
        assert "give the app an AsyncRunStore" in caplog.text


class _Gated:
    """``agent`` with the approval gate."""

    def __init__(self, agent: HeldAgent) -> None:
        self._agent = agent

    def __call__(self, messages: Sequence[Message]) -> LLMChain:
        return self._agent(messages).add_callback(ApprovalGate())


class _AsyncStore:
    """An ``AsyncRunStore``: a ``MemoryRunStore``'s runs, awaited (as the
    async Redis and PostgreSQL stores are), counting the calls."""

    def __init__(self) -> None:
        self._inner = awaited_memory(MemoryRunStore())
        self.asked: list[str] = []

    async def save(self, chain: LLMChain, **options: Any) -> str:
        """As the inner store's."""
        self.asked.append("save")
        return await self._inner.save(chain, **options)

    async def load(self, run_id: str, model: Any, **options: Any) -> LLMChain:
        """As the inner store's."""
        self.asked.append("load")
        return await self._inner.load(run_id, model, **options)

    async def resume(
        self, run_id: str, decisions: Any, model: Any, **options: Any
    ) -> Any:
        """As the inner store's."""
        self.asked.append("resume")
        return await self._inner.resume(run_id, decisions, model, **options)

    async def pending(self, **options: Any) -> Any:
        """As the inner store's."""
        self.asked.append("pending")
        return await self._inner.pending(**options)

    async def delete(self, run_id: str) -> bool:
        """As the inner store's."""
        return await self._inner.delete(run_id)  # pragma: no cover - not asked


def _cancel_url(app: App, url: str) -> str:
    return f"{url}{THREAD if app == 'agui' else 'chat-1'}/cancel"


@pytest.mark.parametrize("app", APPS)
class TestCancel:
    """``POST /{id}/cancel`` cancels a run on the loop; nothing else does."""

    def test_cancel_an_async_run(self, client: httpx.Client, app: App) -> None:
        """The tool's task is cancelled, the answer ends "cancelled", the cancel
        answers 202; a second cancel finds nothing (``{"cancelled": false}``)."""
        agent = AsyncAgent("tool", gate=False, hold=True)
        out: list[list[dict[str, Any]]] = []
        with serving(app_of(app, agent, expose_errors=True)) as url:

            def ask_in_thread() -> None:
                with httpx.Client(timeout=30) as other:
                    out.append(ask(other, app, url))

            asking = threading.Thread(target=ask_in_thread)
            asking.start()
            assert agent.started.wait(30)
            cancelled = client.post(_cancel_url(app, url))
            asking.join(30)
            again = client.post(_cancel_url(app, url))
        assert cancelled.status_code == 202, cancelled.text
        assert cancelled.json() == {"cancelled": True}
        assert agent.cancelled.is_set()
        assert agent.runs == []
        last = out[0][-1]
        if app == "agui":
            assert last["type"] == "RUN_ERROR"
            assert last["code"] == "cancelled"
        else:
            assert last == {
                "type": "error",
                "errorText": "cancelled: the run was cancelled",
            }
        assert again.status_code == 200, again.text
        assert again.json() == {"cancelled": False}

    def test_a_run_in_a_thread_is_not_cancelled(
        self, client: httpx.Client, app: App
    ) -> None:
        """A sync run cannot be stopped: 409 says so, and it goes on to its
        answer."""
        agent = HeldAgent()
        out: list[list[dict[str, Any]]] = []
        with serving(app_of(app, agent)) as url:

            def ask_in_thread() -> None:
                with httpx.Client(timeout=30) as other:
                    out.append(ask(other, app, url))

            asking = threading.Thread(target=ask_in_thread)
            asking.start()
            assert agent.started.wait(30)
            refused = client.post(_cancel_url(app, url))
            agent.release.set()
            asking.join(30)
        assert refused.status_code == 409, refused.text
        assert "run_async=True" in refused.json()["error"]
        assert text_of(app, out[0]).endswith(ANSWER)

    def test_nothing_to_cancel(self, client: httpx.Client, app: App) -> None:
        """A chat with no run going on here: nothing is cancelled, and that is
        no error."""
        with serving(app_of(app, AsyncAgent("tool"))) as url:
            answer = client.post(_cancel_url(app, url))
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"cancelled": False}

    def test_authorized_as_a_write(self, client: httpx.Client, app: App) -> None:
        """``authorize`` is asked "start" for the chat; a refusal is 403."""
        asked: list[tuple[str, str | None]] = []

        def authorize(request: Any, action: str, run_id: str | None) -> bool:
            asked.append((action, run_id))
            return False

        with serving(app_of(app, AsyncAgent("tool"), authorize=authorize)) as url:
            answer = client.post(_cancel_url(app, url))
        assert answer.status_code == 403, answer.text
        assert asked == [("start", None)]


@pytest.mark.parametrize("app", APPS)
class TestRunAsync:
    """``run_async`` overrides the choice."""

    def test_true_runs_a_sync_chain_on_the_loop(
        self, client: httpx.Client, app: App
    ) -> None:
        """With True a sync chain runs with ``arun()``: its one sync tool is
        called on the app's loop."""
        agent = HeldAgent()
        agent.release.set()
        with serving(app_of(app, agent, run_async=True)) as url:
            out = ask(client, app, url)
        assert text_of(app, out).endswith(ANSWER)
        assert agent.on_loop == [True]

    def test_false_runs_an_async_chain_in_a_thread(
        self, client: httpx.Client, app: App
    ) -> None:
        """With False an async tool's chain runs with ``run()`` in a thread:
        the tool runs on a loop of its own, not the app's."""
        agent = AsyncAgent("tool", gate=False)
        with serving(app_of(app, agent, run_async=False)) as url:
            out = ask(client, app, url)
        assert text_of(app, out).endswith(ANSWER)
        assert agent.ran_on
        assert agent.ran_on[0] is not agent.app_loops[0]


def _body(app: App) -> dict[str, Any]:
    return run_input() if app == "agui" else chat([USER])


def _leave_when_started(url: str, app: App, agent: AsyncAgent) -> None:
    """Post a first message and go away once the tool has started."""
    with (
        httpx.Client(timeout=30) as other,
        other.stream("POST", url, json=_body(app)) as response,
    ):
        assert response.status_code == 200
        assert agent.started.wait(30)


@pytest.mark.parametrize("app", APPS)
class TestDisconnect:
    """A client that goes away cancels the run only with
    ``cancel_on_disconnect=True``."""

    def test_cancel_on_disconnect(self, app: App) -> None:
        """The run's task is cancelled when its client leaves."""
        agent = AsyncAgent("tool", gate=False, hold=True)
        with serving(app_of(app, agent, cancel_on_disconnect=True)) as url:
            _leave_when_started(url, app, agent)
            assert agent.cancelled.wait(30)
        assert agent.runs == []

    def test_by_default_the_run_goes_on(self, client: httpx.Client, app: App) -> None:
        """Without it the run outlives its client: it is still there to cancel
        (and to follow with ``GET /{id}/stream``)."""
        agent = AsyncAgent("tool", gate=False, hold=True)
        with serving(app_of(app, agent)) as url:
            _leave_when_started(url, app, agent)
            cancelled = client.post(_cancel_url(app, url))
            assert agent.cancelled.wait(30)
        assert cancelled.status_code == 202, cancelled.text

    def test_a_bad_option(self, app: App) -> None:
        """``cancel_on_disconnect`` must be a bool."""
        with pytest.raises(TypeError, match="cancel_on_disconnect"):
            app_of(app, AsyncAgent("tool"), cancel_on_disconnect="yes")

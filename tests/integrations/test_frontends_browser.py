"""A chat's life in a real browser (issue 41): React pages on the official
clients, one per protocol, against the frontend apps.

``tests/browser`` holds the pages (``ui.html``: AI SDK 6 ``useChat`` with
``DefaultChatTransport``; ``agui.html``: an ``@ag-ui/client`` ``HttpAgent``),
pinned in its ``package.json`` and lock file and bundled with esbuild once per
test session. Each test serves a page from the same server as the app (the app
mounted at ``/api/<protocol>/``, as a Next.js rewrite would put it) and drives it
with Debian's chromium through Playwright: a page keeps only the chat id, in its
URL. Skipped with a reason without node, the pages' packages or chromium, except
in CI (CI=true), where that fails.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Message as ASGIMessage
from starlette.types import Receive, Scope, Send

from langhooks import (
    ChatResponse,
    LangHooksError,
    Message,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    ToolCall,
)
from langhooks.chain import LLMChain
from langhooks.chain._chain import ABANDONED
from langhooks.cli.demo import ApprovalGate
from langhooks.integrations._frontends._records import tool_result_text
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn

from .._services import need_command, unavailable
from ._frontend_agent import (
    ANSWER,
    FIRST_TEXT,
    FORECAST,
    QUESTION,
    WeatherAgent,
    weather_turns,
)
from ._web_harness import serving
from .test_client_tools import ANSWER as COLOR_ANSWER
from .test_client_tools import QUESTION as COLOR_QUESTION
from .test_client_tools import ClientAgent
from .test_shared_state import CartAgent, add_turns
from .test_web_browser import browser, expect

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# The Playwright browser fixture of the live page's tests, shared.
__all__ = ["browser"]

PAGES = Path(__file__).parents[1] / "browser"
PROTOCOLS = ["ui", "agui"]
LOGGER = "langhooks.integrations.frontends"
#: What the page's ``pick_color`` tells the model.
PICKED = "The page is now #a0c4ff."


@pytest.fixture(scope="session")
def chat_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages, built once per session from the pinned packages."""
    program = need_command("node", "install Node.js 20 or later")
    if not (PAGES / "node_modules" / "esbuild" / "package.json").is_file():
        unavailable(
            "the chat pages' packages are not installed: run "
            "`npm ci --prefix tests/browser`",
            "the chat pages' packages (npm ci --prefix tests/browser)",
        )
    out = tmp_path_factory.mktemp("chat-pages")
    done = subprocess.run(
        [program, str(PAGES / "build.mjs"), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; script errors on it fail the test."""
    opened = browser.new_page(viewport={"width": 900, "height": 700})
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        opened.close()
    assert errors == []


class Site:
    """The page and the protocol's app (``agent`` and ``options``) on one server,
    as an ASGI app that records each request's method, path and status."""

    def __init__(self, pages: Path, protocol: str, agent: Any, **options: Any) -> None:
        create = create_ui_message_app if protocol == "ui" else create_agui_app
        self.app = Starlette(
            routes=[
                Mount(f"/api/{protocol}", create(agent=agent, **options)),
                Mount("/", StaticFiles(directory=pages, html=True)),
            ]
        )
        self.requests: list[tuple[str, str, int]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: ASGIMessage) -> None:
            if message["type"] == "http.response.start":
                entry = (scope["method"], scope["path"], message["status"])
                self.requests.append(entry)
            await send(message)

        await self.app(scope, receive, sending)

    def asked(self, route: str) -> list[int]:
        """The statuses answered to GET ``/api/<protocol>/<chat id>/<route>``."""
        return [
            status
            for method, path, status in self.requests
            if method == "GET" and path.startswith("/api/") and path.endswith(route)
        ]


def send(page: Page, text: str) -> None:
    """Type ``text`` in the composer and send it."""
    page.fill("#prompt", text)
    page.click("#send")


def assistant_texts(page: Page) -> Any:
    """The texts of the assistant's messages, as a retrying locator."""
    return page.locator(".message[data-role=assistant] .text")


def told(agent: WeatherAgent) -> str:
    """What the model was last told of the weather call."""
    messages = agent.model.requests[-1].messages
    tool = next(m for m in reversed(messages) if m.role == "tool")
    return tool_result_text(tool.tool_results[0])


class HeldAnswer:
    """A model that streams ``words`` one partial each and, after ``pause``
    of them, waits until the test sets ``release`` (``reached`` says it got
    there): the answer is running, half sent, for as long as the test needs."""

    def __init__(
        self,
        words: Sequence[str],
        pause: int,
        *,
        calls: Sequence[ToolCall] = (),
        then: ScriptedChatModel | None = None,
    ) -> None:
        self.words = list(words)
        self.pause = pause
        self.calls = list(calls)
        self.then = then
        self.reached = threading.Event()
        self.release = threading.Event()

    def _message(self) -> Message:
        return Message.assistant("".join(self.words), tool_calls=self.calls)

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The words, held after ``pause`` of them, and the ``calls``; once
        held, the next calls are ``then``'s."""
        if self.then is not None and self.reached.is_set():
            return self.then.stream(request, handler, handle=handle)
        context = PartialResponseContext(handle=handle or StreamingHandle())
        for number, word in enumerate(self.words):
            if number == self.pause:
                self.reached.set()
                self.release.wait(30)
            handler.on_partial_response(PartialResponse(text=word), context)
        response = ChatResponse(message=self._message())
        handler.on_complete_response(response)
        return response

    async def astream(
        self, request: ChatRequest, handler: Any, *, handle: Any = None
    ) -> ChatResponse:
        """As ``stream``, for an app that runs its chains with ``arun``."""
        if self.then is not None and self.reached.is_set():
            return await self.then.astream(request, handler, handle=handle)
        context = PartialResponseContext(handle=handle or StreamingHandle())
        for number, word in enumerate(self.words):
            if number == self.pause:
                self.reached.set()
                await asyncio.to_thread(self.release.wait, 30)
            called = handler.on_partial_response(PartialResponse(text=word), context)
            if inspect.isawaitable(called):
                await called
        response = ChatResponse(message=self._message())
        called = handler.on_complete_response(response)
        if inspect.isawaitable(called):
            await called
        return response


@pytest.mark.parametrize("protocol", PROTOCOLS)
class TestAChatsLife:
    """Each test drives the page of one protocol: ``ui.html`` or ``agui.html``."""

    def test_a_reload_mid_answer_shows_the_whole_answer(
        self, page: Page, chat_pages: Path, protocol: str
    ) -> None:
        """The page is reloaded while the answer streams: it follows the
        answer again from its start (AI SDK: ``resume: true``; AG-UI:
        ``connectAgent`` on the plain GET) and shows it whole, once."""
        words = [f"word{n} " for n in range(12)]
        model = HeldAnswer(words, pause=4)

        def agent(messages: Sequence[Message]) -> LLMChain:
            return LLMChain(model).add_messages(messages)

        app = Site(chat_pages, protocol, agent)
        with serving(app) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, "Count to twelve.")
            try:
                assert model.reached.wait(30)
                expect(assistant_texts(page)).to_have_text(["word0 word1 word2 word3"])
                page.reload()
                # The answer so far, replayed to the reloaded page; then the rest.
                expect(assistant_texts(page)).to_have_text(["word0 word1 word2 word3"])
            finally:
                model.release.set()
            expect(assistant_texts(page)).to_have_text(["".join(words).strip()])
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            assert page.locator("#error").count() == 0
        # The first page load found no stream; the reload followed the answer.
        assert app.asked("/stream") == [204, 200]

    def test_a_reload_mid_answer_then_approving_finishes_the_run(
        self, page: Page, chat_pages: Path, protocol: str
    ) -> None:
        """Reloaded while the answer that ends at an approval streams, the
        page follows it to the approval; Approve runs the tool once and the
        answer comes."""
        weather = WeatherAgent(weather_turns()[1:])
        call = ToolCall(
            call_id="call_1", name="get_weather", arguments={"city": "Paris"}
        )
        words = ["Let ", "me ", "check ", "the ", "weather ", "in ", "Paris."]
        model = HeldAnswer(words, pause=3, calls=[call], then=weather.model)

        def agent(messages: Sequence[Message]) -> LLMChain:
            chain = LLMChain(model, tools=[weather.tool], callbacks=[ApprovalGate()])
            return chain.add_messages(messages)

        with serving(Site(chat_pages, protocol, agent)) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, QUESTION)
            try:
                assert model.reached.wait(30)
                expect(assistant_texts(page)).to_have_text(["Let me check"])
                page.reload()
                expect(assistant_texts(page)).to_have_text(["Let me check"])
            finally:
                model.release.set()
            page.click("button.approve")
            expect(page.locator(".tool .output")).to_have_text([FORECAST])
            expect(assistant_texts(page)).to_have_text([FIRST_TEXT, ANSWER])
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            assert page.locator("#error").count() == 0
        assert weather.runs == [{"city": "Paris"}]

    def test_a_reload_with_only_the_chat_id_finds_the_waiting_approval(
        self, page: Page, chat_pages: Path, protocol: str
    ) -> None:
        """Reloaded while an approval waits, the page reads the thread back
        (GET /{id}/messages: the question and the waiting call); Approve
        finishes the run and the tool runs once."""
        agent = WeatherAgent()
        app = Site(chat_pages, protocol, agent)
        with serving(app) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, QUESTION)
            expect(page.locator(".tool[data-state=waiting]")).to_have_count(1)
            page.reload()
            assert "chat=" in page.url
            expect(page.locator(".tool[data-state=waiting]")).to_have_count(1)
            expect(page.locator(".message[data-role=user] .text")).to_have_text(
                [QUESTION]
            )
            page.click("button.approve")
            expect(page.locator(".tool .output")).to_have_text([FORECAST])
            expect(assistant_texts(page)).to_have_text([FIRST_TEXT, ANSWER])
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            assert page.locator("button.approve").count() == 0
        assert agent.runs == [{"city": "Paris"}]
        # Nothing waited on the first load; the reload read the thread back
        # and, as it waited, followed no answer.
        assert app.asked("/messages") == [404, 200]
        assert app.asked("/stream") == [204]

    def test_a_second_message_rejects_the_waiting_approval(
        self, page: Page, chat_pages: Path, protocol: str
    ) -> None:
        """A new message while the approval waits rejects it (the model reads
        why), is answered, and the chat goes on; the tool never runs."""
        turns = [
            weather_turns()[0],
            ScriptedTurn(text="No weather, then. Anything else?"),
            ScriptedTurn(text="You are welcome."),
        ]
        agent = WeatherAgent(turns)
        with serving(Site(chat_pages, protocol, agent)) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, QUESTION)
            expect(page.locator(".tool[data-state=waiting]")).to_have_count(1)
            send(page, "Never mind.")
            expect(assistant_texts(page).last).to_have_text(
                "No weather, then. Anything else?"
            )
            assert page.locator("button.approve").count() == 0
            send(page, "Thanks!")
            expect(assistant_texts(page).last).to_have_text("You are welcome.")
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            assert page.locator("#error").count() == 0
            users = page.locator(".message[data-role=user] .text")
            expect(users).to_have_text([QUESTION, "Never mind.", "Thanks!"])
        assert agent.runs == []
        assert told(agent) == ABANDONED

    def test_a_failing_model_shows_a_safe_message(
        self,
        page: Page,
        chat_pages: Path,
        protocol: str,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """The page shows the error's code and the run id, never its details;
        the server's log has them under that run id."""
        secret = "the key sk-test-4242 was refused by auth.internal:8443"

        def agent(messages: Sequence[Message]) -> LLMChain:
            model = ScriptedChatModel([LangHooksError("authentication", secret)])
            return LLMChain(model).add_messages(messages)

        caplog.set_level(logging.ERROR, logger=LOGGER)
        with serving(Site(chat_pages, protocol, agent)) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, "Hello?")
            expect(page.locator("#error")).to_contain_text("authentication")
            shown = page.locator("#error").inner_text()
            html = page.content()
        assert "sk-test-4242" not in html
        assert "auth.internal" not in html
        found = re.search(r"run id '([^']+)'", shown)
        assert found is not None, shown
        logged = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert any(found[1] in line and secret in line for line in logged), logged


@pytest.mark.parametrize("protocol", PROTOCOLS)
class TestSharedState:
    """The state a tool changes, shown by the page (issue 43, item 3)."""

    def test_the_page_shows_the_state_a_tool_changed(
        self, page: Page, chat_pages: Path, protocol: str
    ) -> None:
        """The tool's change reaches the page (AG-UI ``STATE_DELTA`` and
        ``STATE_SNAPSHOT`` applied to ``agent.state``; the AI SDK's
        ``data-state`` part); the next message sends the page's state back, so
        the tool goes on from it."""
        agent = CartAgent([*add_turns(), *add_turns("call_2")])
        with serving(Site(chat_pages, protocol, agent)) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, "Add tea.")
            expect(page.locator("#state")).to_have_text('{"items":["tea"],"count":1}')
            expect(assistant_texts(page).last).to_have_text("Added tea.")
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            send(page, "Once more.")
            expect(page.locator("#state")).to_have_text(
                '{"items":["tea","tea"],"count":2}'
            )
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            assert page.locator("#error").count() == 0
        assert [seen for seen, _ in agent.tool_saw] == [
            {},
            {"items": ["tea"], "count": 1},
        ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
class TestAToolThePageRuns:
    """``pick_color`` runs in the page (issue 43, item 2): a ``useChat``
    client-side tool (``onToolCall`` -> ``addToolOutput``), a CopilotKit-style
    frontend tool of the AG-UI request (``pendingToolCallIds`` -> a tool
    message -> the next run)."""

    def test_the_page_runs_the_tool_once_and_the_model_reads_its_result(
        self, page: Page, chat_pages: Path, protocol: str
    ) -> None:
        """The model calls ``pick_color``; the page runs it once (its colour
        and run count show), posts its result by itself, and the model reads
        it and answers. The AI SDK's agent declares the client tool; the AG-UI
        agent has it from the page's request."""
        agent = ClientAgent(declare=protocol == "ui")
        app = Site(chat_pages, protocol, agent)
        with serving(app) as url:
            page.goto(f"{url}{protocol}.html")
            send(page, COLOR_QUESTION)
            expect(assistant_texts(page)).to_have_text([COLOR_ANSWER])
            expect(page.locator("#chat")).to_have_attribute("data-status", "ready")
            card = page.locator(".tool")
            expect(card).to_have_attribute("data-name", "pick_color")
            expect(card.locator(".output")).to_have_text(PICKED)
            expect(page.locator("#picked")).to_have_text("#a0c4ff")
            expect(page.locator("#picked")).to_have_attribute("data-runs", "1")
            expect(page.locator("body")).to_have_css(
                "background-color", "rgb(160, 196, 255)"
            )
            assert page.evaluate("window.__toolRuns") == 1
            assert page.locator("#error").count() == 0
        assert agent.tool_results_read() == [("call_1", PICKED, False)]
        assert agent.model.remaining == 0
        # The question, then the page's result: nothing posted again.
        posts = [s for m, p, s in app.requests if m == "POST"]
        assert posts == [200, 200]

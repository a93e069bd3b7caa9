"""The live page in a real browser: Debian's chromium, driven by Playwright.

Skipped with a reason when chromium or Playwright is missing, except in CI (CI=true),
where .ci/run installs chromium and a missing browser fails the tests.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pytest

from langhooks import Message, ToolCall, ToolContext
from langhooks.chain import LLMChain, Tool
from langhooks.integrations._web_auth import TokenAuth
from langhooks.integrations.web import create_app
from langhooks.models import ScriptedChatModel, ScriptedTurn
from langhooks.stores import MemoryRunStore
from tests._services import need_command, unavailable

from ._web_harness import ANSWER, FIRST_TEXT, QUESTION, agent_of, serving, weather_turns

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page
    from playwright.sync_api._generated import LocatorAssertions

TOKEN = "browser-test-token"


def guarded_app(**options: Any) -> Any:
    """``create_app(**options)`` behind a token, as ``langhooks serve`` runs it: the
    browser logs in once with ``?token=`` and goes on with the cookie."""
    auth = TokenAuth(TOKEN, cookie="langhooks_browser_test")
    return auth.wrap(create_app(authorize=auth, **options))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless chromium from the system's packages (not Playwright's download)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable(
            "Playwright is not installed (pip install playwright)", "Playwright"
        )
    path = need_command("chromium", "apt-get install -y chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page; script errors on it fail the test."""
    opened = browser.new_page(viewport={"width": 1100, "height": 760})
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        opened.close()
    assert errors == []


def expect(locator: Locator) -> LocatorAssertions:
    """Playwright's retrying assertions (imported late: Playwright may be missing)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


def start_run(page: Page, url: str, prompt: str = QUESTION) -> None:
    """Open the page and start a run from its form."""
    page.goto(f"{url}?token={TOKEN}")
    page.fill("#prompt", prompt)
    page.click("#start-button")


class TestDemoRun:
    def test_renders_the_run_up_to_the_approval(self, page: Page) -> None:
        """Thinking, text, the tool call awaiting approval and the usage all show."""
        app = guarded_app(agent=agent_of(weather_turns(), delay=0.01), heartbeat=0.5)
        with serving(app) as url:
            start_run(page, url)
            page.wait_for_selector(".tool[data-state=awaiting]")
            assert page.text_content("#question") == QUESTION
            assert page.text_content(".turn .thinking") == (
                "I should look up the weather before answering."
            )
            assert page.text_content(".turn .text") == FIRST_TEXT
            assert page.text_content(".tool .name") == "get_weather"
            assert "Paris" in (page.text_content(".tool .arguments") or "")
            assert page.text_content(".tool .badge") == "awaiting approval"
            assert page.is_visible("button.approve")
            assert page.is_visible("button.reject")
            expect(page.locator("#usage")).to_have_text("tokens: 48 in · 36 out")
            assert page.text_content("#run-state") == "waiting for approval"
            assert page.text_content("#runs .prompt") == QUESTION
            page.close()

    def test_progress_shows_on_the_running_call(self, page: Page) -> None:
        """A running tool's progress report is shown on its card."""
        release = threading.Event()

        def indexing(arguments: Mapping[str, Any], context: ToolContext) -> str:
            context.report_progress(2, 4, "halfway")
            release.wait(30)
            return "indexed"

        def agent(prompt: str) -> LLMChain:
            call = ToolCall(call_id="c1", name="index", arguments={})
            model = ScriptedChatModel(
                [ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="Indexed.")]
            )
            # Concurrent: the tool waits in a worker thread, not on the app's loop.
            tool = Tool("index", indexing, concurrent=True)
            return LLMChain(model, tools=[tool]).add_message(Message.user(prompt))

        with serving(guarded_app(agent=agent, heartbeat=0.5)) as url:
            start_run(page, url)
            try:
                expect(page.locator(".tool .note")).to_have_text("2/4 (50%) halfway")
            finally:
                release.set()
            page.wait_for_selector(".tool[data-state=completed]")
            assert page.text_content(".tool .note") == ""
            page.close()

    def test_approve_resumes_the_run_and_the_answer_appears(self, page: Page) -> None:
        """Approve runs the tool; its result and the model's answer appear."""
        app = guarded_app(agent=agent_of(weather_turns(), delay=0.01), heartbeat=0.5)
        with serving(app) as url:
            start_run(page, url)
            page.click("button.approve")
            page.wait_for_selector(".tool[data-state=completed]")
            page.wait_for_selector("#run-state.ok")
            texts = page.locator(".turn .text").all_text_contents()
            assert texts == [FIRST_TEXT, ANSWER]
            assert (
                page.text_content(".tool .result")
                == "Paris: 14°C, light rain until 16:00"
            )
            assert page.locator("button.approve").count() == 0
            assert page.text_content("#usage") == "tokens: 145 in · 57 out"
            expect(page.locator("#connection")).to_have_text("stream ended")
            page.close()

    def test_reject_denies_the_call_and_the_run_goes_on(self, page: Page) -> None:
        """Reject does not run the tool; the card says denied and the model answers."""
        app = guarded_app(agent=agent_of(weather_turns(), delay=0.01), heartbeat=0.5)
        with serving(app) as url:
            start_run(page, url)
            page.click("button.reject")
            page.wait_for_selector(".tool[data-state=denied]")
            page.wait_for_selector("#run-state.ok")
            assert "rejected" in (page.text_content(".tool .result") or "")
            page.close()


class DropOnce:
    """ASGI middleware that cuts the first event stream after ``after`` events, from
    the server side, as a proxy or a restarting worker would; it records what each
    connection sent."""

    class _Dropped(Exception):
        pass

    def __init__(self, app: Any, after: int) -> None:
        self.app = app
        self.after = after
        self.connections: list[tuple[str | None, list[str]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/events"):
            await self.app(scope, receive, send)
            return
        last = dict(scope["headers"]).get(b"last-event-id")
        sent: list[str] = []
        self.connections.append((None if last is None else last.decode(), sent))
        drop = len(self.connections) == 1

        async def forward(message: Any) -> None:
            body = message.get("body", b"")
            if body.startswith(b"id: "):
                sent.append(body.split(b"\n", 1)[0][4:].decode())
            await send(message)
            if drop and len(sent) == self.after:
                await send(
                    {"type": "http.response.body", "body": b"", "more_body": False}
                )
                raise DropOnce._Dropped

        with contextlib.suppress(DropOnce._Dropped):
            await self.app(scope, receive, forward)


class TestReconnect:
    def test_a_dropped_stream_resumes_with_every_event_once(self, page: Page) -> None:
        """The browser reconnects with Last-Event-ID; the text shows exactly once."""
        words = [f"word{n}" for n in range(150)]
        text = " ".join(words) + "."
        agent = agent_of([ScriptedTurn(text=text)], delay=0.01, gate=False)
        app = DropOnce(guarded_app(agent=agent, heartbeat=0.5), after=40)
        with serving(app) as url:
            start_run(page, url, "Count.")
            page.wait_for_selector("#run-state.ok")
            expect(page.locator("#connection")).to_have_text("stream ended")
            stats = page.evaluate("window.langhooks.stats")
            shown = page.locator(".turn .text").all_text_contents()
            page.close()
        sent = [event_id for _, ids in app.connections for event_id in ids]
        received: list[str] = stats["received"]
        duplicates = len(received) - len(set(received))
        lost = sorted(set(sent) - set(received), key=int)
        print(
            f"\nreconnect: events sent {len(sent)}, received {len(received)}, "
            f"duplicates {duplicates}, lost {len(lost)}, "
            f"connections {len(app.connections)}"
        )
        assert shown == [text]
        assert duplicates == 0
        assert lost == []
        assert received == [str(n) for n in range(1, len(sent) + 1)]
        first, second = app.connections[0], app.connections[1]
        assert len(first[1]) == 40
        assert second[0] == "40"
        assert stats["opened"] >= 2


class TestUntrustedContent:
    def test_a_script_in_an_answer_is_shown_as_text(self, page: Page) -> None:
        """Markup from the model or a tool is inert text: nothing runs, no element."""
        attack = (
            '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
        )
        turns = [
            ScriptedTurn(thinking=attack, text=attack),
        ]
        app = guarded_app(agent=agent_of(turns, gate=False), heartbeat=0.5)
        with serving(app) as url:
            start_run(page, url, attack)
            page.wait_for_selector("#run-state.ok")
            assert page.text_content(".turn .text") == attack
            assert page.text_content(".turn .thinking") == attack
            assert page.text_content("#question") == attack
            assert page.text_content("#runs .prompt") == attack
            assert page.locator("#run img, #run script, #runs img").count() == 0
            assert page.evaluate("window.pwned") is None
            page.close()


class TestOnRedis:
    def test_approve_on_a_page_whose_runs_live_in_redis(self, page: Page) -> None:
        """The same page works when runs live in Redis and resume from saved state."""
        import uuid

        import redis

        from langhooks.cli.serve import DemoModel, demo_agent
        from tests._services import need_redis

        client = redis.Redis.from_url(need_redis())
        prefix = f"langhooks-test:{uuid.uuid4().hex}:"
        agent = demo_agent(lambda: DemoModel(0.01))
        app = guarded_app(redis=client, prefix=prefix, agent=agent, heartbeat=0.5)
        try:
            with serving(app) as url:
                start_run(page, url)
                page.click("button.approve")
                page.wait_for_selector("#run-state.ok")
                texts = page.locator(".turn .text").all_text_contents()
                assert texts[-1] == (
                    "It is 14°C in Paris with light rain until 16:00, so yes: take "
                    "an umbrella."
                )
                page.close()
        finally:
            keys = list(client.scan_iter(match=f"{prefix}*"))
            if keys:
                client.delete(*keys)
            client.close()


class TestServeCommand:
    def test_the_printed_url_works_in_the_browser(self, page: Page) -> None:
        """`langhooks serve` started as a command: its printed URL opens the page,
        a run streams, approval finishes it, and a reload keeps working (the
        cookie); the same address without the token is refused."""
        import subprocess
        import sys

        command = [sys.executable, "-m", "langhooks", "serve", "--port", "0"]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
            try:
                assert process.stdout is not None
                url = process.stdout.readline().split()[2]
                base = url.partition("?")[0]
                page.goto(url)
                page.fill("#prompt", QUESTION)
                page.click("#start-button")
                page.click("button.approve")
                page.wait_for_selector("#run-state.ok")
                assert (
                    page.locator(".turn .text")
                    .all_text_contents()[-1]
                    .startswith("It is 14°C in Paris")
                )
                page.goto(base)
                expect(page.locator("#runs .prompt")).to_have_text(QUESTION)
                context = page.context.browser
                assert context is not None
                stranger = context.new_page()
                answer = stranger.goto(base)
                assert answer is not None
                assert answer.status == 401
                stranger.close()
                page.close()
            finally:
                process.terminate()


class TestNarrowWindow:
    def test_at_400_px_nothing_overflows(self, browser: Browser) -> None:
        """At 400 px wide the page is one column: the document, the header and
        the run all fit the window, with a long run id and tool arguments."""
        page = browser.new_page(viewport={"width": 400, "height": 800})
        app = guarded_app(agent=agent_of(weather_turns(), delay=0.0), heartbeat=0.5)
        with serving(app) as url:
            start_run(page, url)
            page.wait_for_selector(".tool[data-state=awaiting]")
            widths = page.evaluate(
                """() => ({
                    document: document.documentElement.scrollWidth,
                    header: document.querySelector("header")
                        .getBoundingClientRect().right,
                    run: document.querySelector("#run").getBoundingClientRect().right,
                    tool: document.querySelector(".tool").getBoundingClientRect().right,
                })"""
            )
            assert widths["document"] <= 400, widths
            assert max(widths["header"], widths["run"], widths["tool"]) <= 400, widths
        page.close()


class TestTheEnd:
    def test_a_finished_run_never_shows_reconnecting(self, page: Page) -> None:
        """When the server closes a finished run's stream, the page says the
        stream ended and the run finished, without a 'reconnecting…' on the way."""
        app = guarded_app(agent=agent_of(weather_turns(), delay=0.01), heartbeat=0.5)
        with serving(app) as url:
            page.goto(f"{url}?token={TOKEN}")
            page.evaluate(
                """() => {
                    window.connectionTexts = [];
                    new MutationObserver(() => window.connectionTexts.push(
                        document.getElementById("connection").textContent
                    )).observe(document.getElementById("connection"),
                               {childList: true, characterData: true, subtree: true});
                }"""
            )
            page.fill("#prompt", QUESTION)
            page.click("#start-button")
            page.click("button.approve")
            expect(page.locator("#connection")).to_have_text("stream ended")
            expect(page.locator("#run-state")).to_have_text("finished")
            seen = page.evaluate("() => window.connectionTexts")
            assert "reconnecting…" not in seen
            assert seen[-1] == "stream ended"
            page.close()


class HeldSaves:
    """A ``MemoryRunStore`` whose ``save`` waits until the test lets it go: the run
    has ended, but the server is not done with it yet."""

    def __init__(self) -> None:
        self.store = MemoryRunStore()
        self.release = threading.Event()

    def save(self, chain: LLMChain, **options: Any) -> str:
        self.release.wait(30)
        return self.store.save(chain, **options)

    def load(self, run_id: str, *args: Any, **options: Any) -> LLMChain:
        return self.store.load(run_id, *args, **options)

    def resume(self, run_id: str, *args: Any, **options: Any) -> Any:
        return self.store.resume(run_id, *args, **options)

    def pending(self, **options: Any) -> Any:
        return self.store.pending(**options)

    def delete(self, run_id: str) -> bool:
        return self.store.delete(run_id)


class TestRunList:
    def test_the_list_shows_the_live_state_of_the_shown_run(self, page: Page) -> None:
        """The run waits for approval: its entry in the run list says so with the
        view, while the server is still saving the run (its listed state is
        "running" until the save is done)."""
        held = HeldSaves()
        app = guarded_app(
            agent=agent_of(weather_turns(), delay=0.0), store=held, heartbeat=0.5
        )
        with serving(app) as url:
            try:
                start_run(page, url)
                expect(page.locator("#run-state")).to_have_text("waiting for approval")
                listed = page.request.get(f"{url}runs").json()["runs"]
                assert [run["state"] for run in listed] == ["running"]
                expect(page.locator("#runs .state")).to_have_text(
                    "waiting for approval"
                )
            finally:
                held.release.set()
            page.close()

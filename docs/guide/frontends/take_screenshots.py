"""Remake the screenshots of docs/guide/frontends.md: the browser tests' chat pages
(tests/browser: AI SDK 6 ``useChat`` and ``@ag-ui/client``) in headless chromium,
each with the weather call waiting for approval after a reload.

Run from the repository root: ``python docs/guide/frontends/take_screenshots.py``.
Needs the ``web`` extra, Playwright for Python, Debian's ``chromium`` and the
pages' packages (``npm ci --prefix tests/browser``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import uvicorn
from playwright.sync_api import expect, sync_playwright
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from langhooks import Message, TokenUsage, ToolCall
from langhooks.chain import LLMChain
from langhooks.cli.demo import SYSTEM, WEATHER_TOOL, ApprovalGate
from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.ui_messages import create_ui_message_app
from langhooks.models import ScriptedChatModel, ScriptedTurn

HERE = Path(__file__).resolve().parent
PAGES = HERE.parents[2] / "tests" / "browser"
QUESTION = "What's the weather in Paris? Do I need an umbrella?"
LOOK_UP = ScriptedTurn(
    thinking="I should look up the weather before answering.",
    text="Let me check the weather in Paris.",
    tool_calls=[
        ToolCall(call_id="call_1", name="get_weather", arguments={"city": "Paris"})
    ],
    usage=TokenUsage(input_tokens=48, output_tokens=36),
)


def agent(messages: Sequence[Message]) -> LLMChain:
    """The lookup, stopped at the approval."""
    model = ScriptedChatModel([LOOK_UP])
    chain = LLMChain(model, tools=[WEATHER_TOOL], callbacks=[ApprovalGate()])
    return chain.add_messages([Message.system(SYSTEM), *messages])


def main() -> None:
    """Build the pages, serve them with both apps, save a screenshot of each."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs chromium: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as built:
        subprocess.run(["node", str(PAGES / "build.mjs"), built], check=True)
        app = Starlette(
            routes=[
                Mount("/api/ui", create_ui_message_app(agent=agent)),
                Mount("/api/agui", create_agui_app(agent=agent)),
                Mount("/", StaticFiles(directory=built, html=True)),
            ]
        )
        listener = socket.create_server(("127.0.0.1", 0))
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
        thread.start()
        while not server.started:
            time.sleep(0.01)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium)
                for protocol in ("ui", "agui"):
                    page = browser.new_page(viewport={"width": 760, "height": 420})
                    page.goto(f"{url}{protocol}.html")
                    page.fill("#prompt", QUESTION)
                    page.click("#send")
                    expect(page.locator(".tool[data-state=waiting]")).to_have_count(1)
                    page.reload()
                    expect(page.locator("button.approve")).to_be_enabled()
                    page.screenshot(path=HERE / f"{protocol}-approval.png")
                browser.close()
        finally:
            server.should_exit = True
            thread.join()
    print(f"wrote ui-approval.png and agui-approval.png in {HERE}")


if __name__ == "__main__":
    main()

"""Remake the screenshots of docs/guide/web.md: the demo agent in headless chromium.

Run from the repository root: ``python docs/guide/web/take_screenshots.py``. Needs the
``web`` extra, Playwright for Python and Debian's ``chromium`` (Playwright's own
browser download is not used).
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import expect, sync_playwright

from langhooks.cli.demo import QUESTION
from langhooks.cli.serve import DemoModel, demo_agent
from langhooks.integrations.web import create_app

HERE = Path(__file__).resolve().parent
VIEWPORT = {"width": 1100, "height": 620}
NARROW = {"width": 400, "height": 820}


def main() -> None:
    """Serve the demo agent, run it in the browser, save three screenshots."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("needs chromium: apt-get install -y chromium")
    app = create_app(agent=demo_agent(lambda: DemoModel(0.05)))
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
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(url)
            page.fill("#prompt", QUESTION)
            page.click("#start-button")
            page.wait_for_selector(".tool[data-state=awaiting]")
            expect(page.locator("#usage")).to_contain_text("48 in")
            page.screenshot(path=HERE / "mid-run.png")
            page.click("button.approve")
            expect(page.locator("#connection")).to_have_text("stream ended")
            page.screenshot(path=HERE / "finished.png")
            narrow = browser.new_page(viewport=NARROW)
            narrow.goto(url)
            narrow.fill("#prompt", "Tell me a joke.")
            narrow.click("#start-button")
            narrow.click("button.reject")
            expect(narrow.locator("#connection")).to_have_text("stream ended")
            narrow.screenshot(path=HERE / "narrow-rejected.png", full_page=True)
            browser.close()
    finally:
        server.should_exit = True
        thread.join()
    print(f"wrote mid-run.png, finished.png and narrow-rejected.png in {HERE}")


if __name__ == "__main__":
    main()

"""The frontend guide's raw requests, run with ``curl`` against its own apps.

``docs/guide/frontends.md`` shows the HTTP a client sends to both frontend apps: a
first message, then the approval answer that resumes the run. Its ``bash`` blocks
are run here as written (the URL and the run id swapped for this server's), on the
apps the page builds from its ``chat_agent.py``, and each line its ``text`` blocks
show must be in what the server sent.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._services import need_command

from ._web_harness import serving

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "guide" / "frontends.md").read_text(encoding="utf-8")
SECTION = GUIDE.split("## The raw requests", 1)[1].split("\n## ", 1)[0]
# Each request and the answer shown after it.
PAIRS = re.findall(r"```bash\n(.*?)```.*?```text\n(.*?)```", SECTION, re.S)
DOC_URL = "http://127.0.0.1:8000/"
SAMPLE_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture(scope="module")
def guide_apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The page's ``chat_agent.py``, ``ui_server.py`` and ``agui_server.py``,
    imported from a directory of their own."""
    here = tmp_path_factory.mktemp("frontends")
    for name in ("chat_agent", "ui_server", "agui_server"):
        found = re.search(rf"```python\n(# {name}\.py\n.*?)```", GUIDE, re.S)
        assert found is not None, name
        (here / f"{name}.py").write_text(found.group(1), encoding="utf-8")
    sys.path.insert(0, str(here))
    try:
        yield {
            "ui": importlib.import_module("ui_server").app,
            "agui": importlib.import_module("agui_server").app,
        }
    finally:
        sys.path.remove(str(here))
        for name in ("chat_agent", "ui_server", "agui_server"):
            sys.modules.pop(name, None)


def curl(command: str, url: str, run_id: str | None = None) -> str:
    """Run one of the page's commands against ``url``; what it printed."""
    command = command.replace(DOC_URL, url)
    if run_id is not None:
        command = re.sub(r"^RUN=\w+", f"RUN={run_id}", command, flags=re.M)
    done = subprocess.run(
        ["bash", "-c", f"set -eu\n{command.replace('curl -N', 'curl -sSN')}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_shown(shown: str, got: str, run_id: str) -> None:
    """Each line the page shows (but "...") is in the answer, with this run's id."""
    lines = set(got.splitlines())
    for line in shown.splitlines():
        if line != "...":
            assert SAMPLE_ID.sub(run_id, line) in lines, line


class TestRawRequests:
    def test_the_page_shows_both_protocols(self) -> None:
        """Two requests per protocol: a first message and the resume."""
        assert len(PAIRS) == 4

    @pytest.mark.parametrize(("app", "first"), [("ui", 0), ("agui", 2)])
    def test_first_message_then_the_approval(
        self, guide_apps: dict[str, Any], app: str, first: int
    ) -> None:
        """The first request stops at the call under ``<runId>/<toolCallId>``; the
        second, with that id, runs the tool and streams the answer; a second chat
        starts afresh."""
        need_command("curl", "apt-get install -y curl")
        (ask, asked), (answer, answered) = PAIRS[first : first + 2]
        with serving(guide_apps[app]) as url:
            got = curl(ask, url)
            found = re.search(r'"(?:approvalId|id)":"([\w-]+)/c1"', got)
            assert found is not None, got
            run_id = found.group(1)
            assert_shown(asked, got, run_id)
            resumed = curl(answer, url, run_id)
            assert_shown(answered, resumed, run_id)
            assert "Light " in resumed
            assert "interrupt" not in resumed
            # Another chat: the agent's scripted model is not used up.
            again = curl(ask.replace("chat-1", "chat-2").replace("thread-1", "t2"), url)
            assert "/c1" in again

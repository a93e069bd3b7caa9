"""The scripted demo agent ``langhooks serve`` runs: it never contradicts the user.

Through the web app, as a user of the page: a prompt the script does not answer is
said to be ignored (and echoed), and after a Reject the answer says the lookup was
rejected instead of telling the user to take an umbrella.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from langhooks.cli.demo import QUESTION
from langhooks.cli.serve import DemoModel, demo_agent
from langhooks.integrations.web import create_app

from ._web_harness import serving
from .test_web import decide, events, start, text_of, wait_state

CALL = "call_weather_1"


@pytest.fixture
def url() -> Iterator[str]:
    """The demo agent of ``langhooks serve``, served on 127.0.0.1."""
    app = create_app(agent=demo_agent(lambda: DemoModel(0.0)), heartbeat=0.05)
    with serving(app) as base:
        yield base


def answered(base: str, prompt: str, decision: str) -> str:
    """The text streamed by a run of ``prompt`` decided with ``decision``."""
    run_id = start(base, prompt)
    wait_state(base, run_id, "interrupted")
    decided = decide(base, run_id, {"tool_call_id": CALL, "decision": decision})
    assert decided.status_code == 202
    return text_of([json.loads(e["data"]) for e in events(base, run_id)])


class TestDemoScript:
    def test_a_rejected_lookup_is_not_answered_with_the_forecast(
        self, url: str
    ) -> None:
        """After Reject the answer says the lookup was rejected, and no umbrella."""
        text = answered(url, QUESTION, "reject")
        assert "take an umbrella" not in text
        assert "The weather lookup was rejected" in text

    def test_an_approved_lookup_is_answered(self, url: str) -> None:
        """After Approve the answer is the forecast's."""
        assert answered(url, QUESTION, "approve").endswith("yes: take an umbrella.")

    def test_a_prompt_it_ignores_is_said_plainly(self, url: str) -> None:
        """Any other prompt is echoed with the word that the script ignores it."""
        text = answered(url, "Tell me a joke.", "approve")
        assert text.startswith(
            "I am the demo's scripted model and cannot answer “Tell me a joke.”"
        )
        assert "one script, about the weather in Paris" in text

    def test_a_long_ignored_prompt_is_cut(self, url: str) -> None:
        """A long prompt is echoed cut to 80 characters."""
        text = answered(url, "x" * 200, "approve")
        assert f"“{'x' * 79}…”" in text

"""langhooks' SDK models beside the official OpenTelemetry GenAI instrumentations.

Each instrumentation patches the provider SDK for the whole process, so each case
runs ``tests/integrations/_beside_instrumentation.py`` in a subprocess, with the
instrumentation's install directory first on ``PYTHONPATH``. ``.ci/run`` installs
them (``pip install --no-deps --target .instrumentations/KIT``), pinned:

- ``openai-v2``: ``opentelemetry-instrumentation-openai-v2==2.4b0`` with
  ``opentelemetry-util-genai==1.1b0`` (util-genai 1.2b0 and 1.3b0 removed the
  ``opentelemetry.util.genai.instruments`` module 2.4b0 imports);
- ``genai``: its successors ``opentelemetry-instrumentation-genai-openai==1.3b0`` and
  ``opentelemetry-instrumentation-genai-anthropic==1.3b0`` (the official Anthropic
  one) with ``opentelemetry-util-genai==1.3b0``, which they require.

Two directories because the two kits need different util-genai releases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from tests._services import unavailable

ROOT: Final = Path(__file__).resolve().parents[2]
KITS: Final = ROOT / ".instrumentations"

CASES: Final = [
    ("openai-v2", "chat"),
    ("openai-v2", "responses"),
    ("genai", "chat"),
    ("genai", "responses"),
    ("genai", "anthropic"),
]


def run_beside(kit: str, model: str) -> dict[str, Any]:
    """The JSON the subprocess printed for ``kit`` instrumenting ``model``."""
    directory = KITS / kit
    if not directory.is_dir():
        unavailable(
            f"the {kit} instrumentation is not installed in {directory}: run the "
            f"'pip install --target' lines of .ci/run",
            "the OpenTelemetry instrumentations (.ci/run's pip install --target)",
        )
    inherited = os.environ.get("PYTHONPATH", "")
    path = os.pathsep.join([str(directory), str(ROOT), inherited])
    done = subprocess.run(
        [sys.executable, "-m", f"{__package__}._beside_instrumentation", kit, model],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(scope="module", params=CASES, ids=[f"{k}-{m}" for k, m in CASES])
def beside(request: pytest.FixtureRequest) -> tuple[str, str, dict[str, Any]]:
    kit, model = request.param
    return kit, model, run_beside(kit, model)


class TestBesideInstrumentation:
    """With the instrumentation active, langhooks streams as without it."""

    def test_stream_completes(self, beside: tuple[str, str, dict[str, Any]]) -> None:
        """stream() returns the complete response and on_error is never called."""
        result = beside[2]["stream"]
        assert result["status"] == "complete", result
        assert result["partials"] > 0
        assert result["errors"] == []

    def test_astream_completes(self, beside: tuple[str, str, dict[str, Any]]) -> None:
        """astream() too, though the wrapper's close() is not awaitable there."""
        result = beside[2]["astream"]
        assert result["status"] == "complete", result
        assert result["partials"] > 0
        assert result["errors"] == []

    def test_chain_runs(self, beside: tuple[str, str, dict[str, Any]]) -> None:
        """An LLMChain run through a tool call ends ok (not protocol_error)."""
        assert beside[2]["chain"]["run"] == "ok", beside[2]["chain"]

    def test_client_span_nests_under_chat(
        self, beside: tuple[str, str, dict[str, Any]]
    ) -> None:
        """Each span the instrumentation makes is a child of a langhooks chat span."""
        kit, model, result = beside
        spans = result["spans"]
        ours = {s["id"]: s for s in spans if s["scope"] == "langhooks"}
        theirs = [s for s in spans if s["scope"] != "langhooks"]
        if kit == "openai-v2" and model == "responses":
            # 2.4b0 instruments Chat Completions only.
            assert theirs == []
            return
        # One per model call: traced_stream, atraced_stream, two in the chain.
        assert len(theirs) == 4
        for span in theirs:
            parent = ours[span["parent"]]
            assert parent["name"].startswith("chat ")

"""docs/guide/runtime.md shows the firing order the runtime really has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.chain.scenarios import SCENARIOS, recorded

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "runtime.md"
BLOCK = re.compile(r"<!-- events: (\w+) -->\n```text\n(.*?)\n```", re.DOTALL)


def documented() -> dict[str, list[str]]:
    """The event lists on the page, by scenario name."""
    return {name: body.splitlines() for name, body in BLOCK.findall(PAGE.read_text())}


class TestRuntimePage:
    """The page's event lists and the recorded sequences agree."""

    def test_every_scenario_is_documented(self) -> None:
        """The page has one event list per scenario, and no other."""
        assert sorted(documented()) == sorted(SCENARIOS)

    @pytest.mark.parametrize("name", sorted(SCENARIOS))
    def test_documented_order_is_the_real_order(self, name: str) -> None:
        """Running the scenario records exactly the list the page shows."""
        assert recorded(name) == documented()[name]

"""Prints the conformance table (framework x event) at the end of the session."""

from __future__ import annotations

import pytest

from ._compare import ROWS, table


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The table of every framework the suite ran, against LLMChain."""
    if ROWS:
        terminalreporter.write_sep("-", "bridges: events against LLMChain's")
        terminalreporter.write_line(table(ROWS))

"""Session hooks for the whole suite: the coverage gate and missing services."""

from __future__ import annotations

import pytest

from tests._services import MISSING


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Leave out the 100% coverage gate when tests were skipped for a missing service.

    The code that talks to a missing service did not run, so the total cannot
    reach 100%; the run stays green with the skips saying why. Under ``CI`` those
    tests fail instead of skipping, so the gate always applies there.
    """
    cov = session.config.pluginmanager.getplugin("_cov")
    options = getattr(cov, "options", None)
    if not MISSING or getattr(options, "cov_fail_under", None) is None:
        return
    options.cov_fail_under = None  # type: ignore[union-attr]
    reporter = session.config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:  # pragma: no branch
        reporter.write_line(
            "coverage gate not applied: tests were skipped for "
            + ", ".join(sorted(MISSING))
            + " (start them, or set CI to make the skips fail)"
        )

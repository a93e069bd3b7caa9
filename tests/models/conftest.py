"""Fixtures shared by the provider-model tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import FixtureServer


@pytest.fixture
def server() -> Iterator[FixtureServer]:
    """A fixture server on 127.0.0.1, stopped after the test."""
    with FixtureServer() as running:
        yield running

"""Where the test suite finds the services it needs, and what it does without them.

Each service has one environment variable naming it, with a default on 127.0.0.1 that
never uses the service's default database:

- ``LANGHOOKS_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/9``),
- ``LANGHOOKS_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``;
  every test works in a schema of its own and drops it).

Outside CI a test whose service is unreachable is skipped with a reason naming the
service and how to start it; with ``CI`` set (as ``.ci/run`` sets it) it fails
instead, so a green CI run never hides a missing service. Each service is probed
once per session, with a short timeout. The services skipped are kept in
``MISSING``: ``tests/conftest.py`` then leaves out the 100% coverage gate (the code
that talks to them did not run) and says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import urllib.parse
from typing import NoReturn

import pytest

__all__ = [
    "MISSING",
    "POSTGRES_URL",
    "REDIS_URL",
    "ci",
    "host_port",
    "need_command",
    "need_postgres",
    "need_redis",
    "unavailable",
]

REDIS_URL = os.environ.get("LANGHOOKS_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
POSTGRES_URL = os.environ.get(
    "LANGHOOKS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)

#: The services (or programs) whose tests were skipped in this session.
MISSING: set[str] = set()


def ci() -> bool:
    """Whether CI asked for every service (``CI`` set to anything but 0/false)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def unavailable(reason: str, service: str | None = None) -> NoReturn:
    """Skip the test with ``reason``, or fail it with ``reason`` under CI.

    ``service`` names what is missing (``reason`` when None), for ``MISSING``.
    """
    if ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)")
    MISSING.add(service or reason)
    pytest.skip(reason)


@functools.cache
def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def host_port(url: str) -> tuple[str, int]:
    """The host and port a service URL names (the scheme's default port if none)."""
    parts = urllib.parse.urlsplit(url)
    default = 5432 if parts.scheme.startswith("postgres") else 6379
    return parts.hostname or "127.0.0.1", parts.port or default


def need_redis() -> str:
    """The Redis URL to use, or skip (fail under CI) when no server answers there."""
    host, port = host_port(REDIS_URL)
    if not _reachable(host, port):
        unavailable(
            f"Redis is not reachable at {REDIS_URL} (start one with "
            "`redis-server --port 6379 --save ''`, or set LANGHOOKS_TEST_REDIS_URL)",
            "Redis",
        )
    return REDIS_URL


def need_postgres() -> str:
    """The PostgreSQL URL to use, or skip (fail under CI) when no server answers."""
    host, port = host_port(POSTGRES_URL)
    if not _reachable(host, port):
        unavailable(
            f"PostgreSQL is not reachable at {POSTGRES_URL} (start a server with "
            "trust auth, or set LANGHOOKS_TEST_POSTGRES_URL)",
            "PostgreSQL",
        )
    return POSTGRES_URL


def need_command(name: str, how: str) -> str:
    """The path of the program ``name``, or skip (fail under CI) when it is absent."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"`{name}` is not installed ({how})", name)
    return path

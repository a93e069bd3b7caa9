"""Where the test suite finds the services it needs, and what it does without them.

Each service has one environment variable naming it, with a default on 127.0.0.1 that
never uses the service's default database:

- ``LANGHOOKS_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/9``),
- ``LANGHOOKS_TEST_POSTGRES_URL`` (default ``postgresql://postgres@127.0.0.1:5432/test``;
  every test works in a schema of its own and drops it).

Outside CI a test whose service is unreachable is skipped with a reason naming the
service and how to start it; with ``CI`` set (as ``.ci/run`` sets it) it fails
instead, so a green CI run never hides a missing service. Each service is probed
once per session, with a short timeout.
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
    "POSTGRES_URL",
    "REDIS_URL",
    "ci",
    "need_command",
    "need_postgres",
    "need_redis",
    "unavailable",
]

REDIS_URL = os.environ.get("LANGHOOKS_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
POSTGRES_URL = os.environ.get(
    "LANGHOOKS_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def ci() -> bool:
    """Whether CI asked for every service (``CI`` set to anything but 0/false)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip the test with ``reason``, or fail it with ``reason`` under CI."""
    if ci():
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)")
    pytest.skip(reason)


@functools.cache
def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _host_port(url: str, default_port: int) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or default_port


def need_redis() -> str:
    """The Redis URL to use, or skip (fail under CI) when no server answers there."""
    host, port = _host_port(REDIS_URL, 6379)
    if not _reachable(host, port):
        unavailable(
            f"Redis is not reachable at {REDIS_URL} (start one with "
            "`redis-server --port 6379 --save ''`, or set LANGHOOKS_TEST_REDIS_URL)"
        )
    return REDIS_URL


def need_postgres() -> str:
    """The PostgreSQL URL to use, or skip (fail under CI) when no server answers."""
    host, port = _host_port(POSTGRES_URL, 5432)
    if not _reachable(host, port):
        unavailable(
            f"PostgreSQL is not reachable at {POSTGRES_URL} (start a server with "
            "trust auth, or set LANGHOOKS_TEST_POSTGRES_URL)"
        )
    return POSTGRES_URL


def need_command(name: str, how: str) -> str:
    """The path of the program ``name``, or skip (fail under CI) when it is absent."""
    path = shutil.which(name)
    if path is None:
        unavailable(f"`{name}` is not installed ({how})")
    return path

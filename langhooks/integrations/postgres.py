"""Durable runs in PostgreSQL (``langhooks[postgres]``: psycopg 3 and psycopg-pool).

- ``PostgresRunStore`` / ``AsyncPostgresRunStore``: save an interrupted run, list
  the runs waiting for people (``pending``, filtered by JSONB containment), resume
  one in any worker, once, even across a crash. ``setup()`` creates the schema.
- ``SCHEMA_VERSION``: the schema version ``setup()`` brings a store to.
"""

from __future__ import annotations

try:
    import psycopg as _psycopg  # noqa: F401  # fail here, with the extra to install
    import psycopg_pool as _psycopg_pool  # noqa: F401
except ImportError as _missing:  # pragma: no cover  # the test environment has both
    raise ImportError(
        "langhooks.integrations.postgres needs psycopg 3 and psycopg-pool: "
        "pip install 'langhooks[postgres]'"
    ) from _missing

from ._postgres._sql import SCHEMA_VERSION
from ._postgres._store_async import AsyncPostgresRunStore
from ._postgres._store_sync import PostgresRunStore

__all__ = ["SCHEMA_VERSION", "AsyncPostgresRunStore", "PostgresRunStore"]

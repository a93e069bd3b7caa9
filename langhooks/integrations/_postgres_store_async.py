"""``AsyncPostgresRunStore``: interrupted runs in PostgreSQL, resumed once (see
``_postgres_sql`` for the tables and statements). (The async module is written by
hand; the sync one is generated from it by ``scripts/unasync.py``.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final, final

import psycopg
import psycopg_pool
from typing_extensions import override

from .._core._messages import LangHooksError
from .._persist._resume import (
    Known,
    Saved,
    Write,
    check_claim_timeout,
)
from .._persist._stores import (
    CallKey,
    PendingRun,
)
from .._persist._stores_async import AsyncStoreBase
from ._postgres_sql import (
    SCHEMA_VERSION,
    Sql,
    call_params,
    checked_conninfo,
    claim_error,
    claim_lost,
    first_value,
    not_set_up,
    pending_query,
    pending_row,
    saved_of,
    scalar,
    settle_params,
    started_outcome,
    storable,
    too_new,
    unknown,
    unreachable,
    write_params,
    wrong_source,
)

__all__ = ["AsyncPostgresRunStore"]


@final
class _AsyncConnections:
    """A conninfo string, a connection or a pool, used one transaction at a time."""

    def __init__(
        self,
        source: str | psycopg.AsyncConnection[Any] | psycopg_pool.AsyncConnectionPool,
    ) -> None:
        self.owned: psycopg_pool.AsyncConnectionPool | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._pool: psycopg_pool.AsyncConnectionPool | None = None
        self._probe: str | None = None  # a conninfo not yet connected to once
        # Bound to a loop at its first contended acquire, not here.  # unasync: remove
        self._lock: Final = asyncio.Lock()
        self._opened = False
        if isinstance(source, str):
            self._probe = conninfo = checked_conninfo(source)
            # The pool opens on first use, once a connection came through (and
            # an async pool opens in a running loop).
            self.owned = self._pool = psycopg_pool.AsyncConnectionPool(
                conninfo,
                min_size=1,
                max_size=8,
                kwargs={"autocommit": True, "prepare_threshold": None},
                open=False,
            )
        elif isinstance(source, psycopg_pool.AsyncConnectionPool):
            self._pool = source
            self._opened = True
        elif isinstance(source, psycopg.AsyncConnection):
            self._conn = source
        else:
            raise wrong_source(source, is_async=True)

    @contextlib.asynccontextmanager
    async def transaction(
        self, *, block: bool = False
    ) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        """A cursor for one statement (``block``: for several, in one
        transaction). An autocommit connection runs a single statement as its own
        transaction: no BEGIN and COMMIT round trips."""
        if self._pool is not None:
            if self._probe is not None:
                await _reach(self._probe)
                self._probe = None
            if not self._opened:
                self._opened = True
                await self._pool.open()
            async with self._pool.connection() as conn, _scope(conn, block):
                yield conn.cursor()
            return
        assert self._conn is not None
        async with self._lock, _scope(self._conn, block):
            yield self._conn.cursor()


async def _reach(conninfo: str) -> None:
    """Connect once: a wrong address fails now, naming where it went, instead of
    after the pool's wait for a connection (30 s)."""
    try:
        conn = await psycopg.AsyncConnection.connect(conninfo)
    except psycopg.OperationalError as error:
        raise unreachable(conninfo, error) from None
    await conn.close()


def _scope(
    conn: psycopg.AsyncConnection[Any], block: bool
) -> contextlib.AbstractAsyncContextManager[Any]:
    if block or not conn.autocommit:
        return conn.transaction()
    return contextlib.nullcontext()


@final
class AsyncPostgresRunStore(AsyncStoreBase):
    """A ``RunStore`` in PostgreSQL: interrupted runs wait in a table, the inbox
    is one index scan, and a resume runs once, even across a crash.

    ``resume`` claims the run with one ``UPDATE`` (waiting → claimed by this
    worker's token) and a heartbeat task renews the claim while the worker
    lives. Each tool call gets a row before it runs and its outcome as soon as it
    returns: a resume that takes over a run whose worker died (no heartbeat for
    ``claim_timeout`` seconds) reuses what ran and never starts a call that had
    started; that call gets an error result saying its worker stopped.

    Call ``await setup()`` once (at deploy, or at start-up: it is idempotent and
    safe when several processes run it at once).

    The asyncio twin of ``PostgresRunStore``, on the same tables: a run saved by
    one is resumed by the other. Every method is awaited.

    Args:
        conninfo_or_pool: a conninfo string (the store opens a pool of
            autocommit connections with prepared statements off, fit for
            PgBouncer's transaction mode, on first use; ``await close()``
            closes it), a ``psycopg.AsyncConnection`` (used one statement at a
            time) or a ``psycopg_pool.AsyncConnectionPool``. Behind PgBouncer in
            transaction mode, give connections ``prepare_threshold=None``. A
            conninfo string connects with ``connect_timeout=5`` unless it says
            otherwise, and the store's first use fails at once (LangHooksError
            "connection", naming host and port) when that connection fails.
        schema: the schema the store's tables live in.
        claim_timeout: seconds without a heartbeat after which a resume's claim
            may be taken over.

    Raises:
        TypeError: ``conninfo_or_pool`` is none of these.
        ValueError: a conninfo libpq cannot read or a URL of another scheme
            (``redis://...``), ``schema`` is not a plain identifier, or a bad
            ``claim_timeout``.
    """

    def __init__(
        self,
        conninfo_or_pool: str
        | psycopg.AsyncConnection[Any]
        | psycopg_pool.AsyncConnectionPool,
        *,
        schema: str = "langhooks",
        claim_timeout: float = 60.0,
    ) -> None:
        self._sql: Final = Sql(schema)
        self._claim_timeout = check_claim_timeout(claim_timeout)
        self._db: Final = _AsyncConnections(conninfo_or_pool)
        self._known = Known()
        self._storage: Final = _AsyncBackend(self)

    async def close(self) -> None:
        """Close the pool the store opened from a conninfo string (a connection
        or pool you passed stays yours to close)."""
        if self._db.owned is not None:
            await self._db.owned.close()

    async def __aenter__(self) -> AsyncPostgresRunStore:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @contextlib.asynccontextmanager
    async def _cursor(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        try:
            async with self._db.transaction() as cursor:
                yield cursor
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as error:
            raise not_set_up(self._sql.schema, error) from error

    async def setup(self) -> int:
        """Create or upgrade the store's schema; idempotent, and safe when several
        processes call it at once (a transaction-scoped advisory lock).

        Returns:
            The schema version now in place (``SCHEMA_VERSION``).

        Raises:
            LangHooksError: "invalid_request" when the schema is newer than this
                langhooks knows.
        """
        sql = self._sql
        async with self._db.transaction(block=True) as cursor:
            await cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (sql.lock_key,),
            )
            await cursor.execute(sql.create_schema)
            await cursor.execute(sql.create_versions)
            await cursor.execute(sql.version)
            current = scalar(await cursor.fetchone())
            if current > SCHEMA_VERSION:
                raise too_new(current, sql.schema)
            for version, statements in sql.migrations:
                if version > current:
                    for statement in statements:
                        await cursor.execute(statement)
                    await cursor.execute(sql.record_version, (version,))
        return SCHEMA_VERSION

    @override
    def _backend(self) -> _AsyncBackend:
        return self._storage

    async def purge(self) -> int:
        """Delete the runs whose expiry has passed (they are never read again,
        whether purged or not); how many there were."""
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.purge)
            return cursor.rowcount


@final
class _AsyncBackend:
    """The storage of ``AsyncPostgresRunStore`` (its ``ClaimBackend``): one
    statement each."""

    def __init__(self, store: AsyncPostgresRunStore) -> None:
        self._store: Final = store
        self._sql: Final = store._sql

    async def write(
        self, write: Write, metadata: Mapping[str, Any], expires_in: float | None
    ) -> bool:
        sql = self._sql
        params = write_params(write, metadata, expires_in)
        async with self._store._cursor() as cursor:
            await cursor.execute(sql.save if write.base is None else sql.append, params)
            return bool(scalar(await cursor.fetchone()))

    async def read(self, run_id: str) -> Saved | None:
        if not storable(run_id):
            return None  # a run id PostgreSQL cannot hold names no run
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.load, (run_id,))
            return saved_of(await cursor.fetchone())

    async def claim(self, run_id: str, token: str) -> Saved:
        store, sql = self._store, self._sql
        if not storable(run_id):
            raise claim_error(run_id, sql.schema, None)
        params = {"id": run_id, "token": token, "timeout": store._claim_timeout}
        async with store._cursor() as cursor:
            await cursor.execute(sql.claim, params)
            row = await cursor.fetchone()
        if row is None:
            # Why not: unknown or expired, being resumed, or done.
            async with store._cursor() as cursor:
                await cursor.execute(sql.status, (run_id,))
                found = await cursor.fetchone()
            raise claim_error(run_id, sql.schema, first_value(found))
        saved = saved_of(row)
        assert saved is not None
        return saved

    async def heartbeat(self, run_id: str, token: str) -> bool:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.heartbeat, (run_id, token))
            return cursor.rowcount > 0

    async def start_call(self, run_id: str, token: str, call: CallKey) -> str | None:
        params = call_params(run_id, token, call)
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.start_call, params)
            row = await cursor.fetchone()
        assert row is not None  # a SELECT of subqueries answers one row
        return started_outcome(run_id, row)

    async def finish_call(
        self, run_id: str, token: str, call: CallKey, outcome: str
    ) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.finish_call, (outcome, run_id, call.text))

    async def settle(self, run_id: str, token: str, write: Write) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.settle, settle_params(token, write))
            settled = scalar(await cursor.fetchone())
        if not settled:
            raise claim_lost(run_id)

    async def release(self, run_id: str, token: str) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.release, (run_id, token))

    async def pending(self, wanted: Mapping[str, Any], limit: int) -> list[PendingRun]:
        query, params = pending_query(self._sql, wanted, limit)
        async with self._store._cursor() as cursor:
            await cursor.execute(query, params)
            return [pending_row(values) for values in await cursor.fetchall()]

    async def waiting(self, run_id: str) -> PendingRun | None:
        if not storable(run_id):
            return None
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.waiting, (run_id,))
            row = await cursor.fetchone()
        return None if row is None else pending_row(row)

    async def delete(self, run_id: str) -> bool:
        if not storable(run_id):
            return False
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.delete, (run_id,))
            return cursor.rowcount > 0

    def unknown(self, run_id: str) -> LangHooksError:
        return unknown(run_id, self._sql.schema)

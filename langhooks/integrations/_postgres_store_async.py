"""``AsyncPostgresRunStore``: the async twin of ``PostgresRunStore``."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, final

import psycopg
import psycopg_pool

from .._core._messages import ToolCall
from .._persist._resume import (
    ResumeCode,
    aresume_once,
    check_claim_timeout,
)
from .._persist._stores import (
    PendingRun,
)

if TYPE_CHECKING:
    from ..chain import Decision, LLMChain, RetryPolicy, RunResult, Tool
    from ..chain._chain import Handler
    from ..models import ChatModel
from ._postgres_sql import (
    SCHEMA_VERSION,
    Sql,
    claim_error,
    claim_lost,
    first_value,
    load_chain,
    not_set_up,
    pending_query,
    pending_row,
    save_params,
    scalar,
    settle_params,
    started_outcome,
    too_new,
)

__all__ = ["AsyncPostgresRunStore"]


@final
class _AsyncConnections:
    """The async twin of ``_Connections``."""

    def __init__(
        self,
        source: str | psycopg.AsyncConnection[Any] | psycopg_pool.AsyncConnectionPool,
    ) -> None:
        self.owned: psycopg_pool.AsyncConnectionPool | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._pool: psycopg_pool.AsyncConnectionPool | None = None
        self._lock: asyncio.Lock | None = None
        self._opened = False
        if isinstance(source, str):
            self.owned = self._pool = psycopg_pool.AsyncConnectionPool(
                source,
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
            raise TypeError(
                f"AsyncPostgresRunStore takes a conninfo str, a "
                f"psycopg.AsyncConnection or a psycopg_pool.AsyncConnectionPool "
                f"(PostgresRunStore takes their sync twins), got {source!r}"
            )

    @contextlib.asynccontextmanager
    async def transaction(
        self, *, block: bool = False
    ) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        """As ``_Connections.transaction``."""
        if self._pool is not None:
            if not self._opened:
                self._opened = True
                await self._pool.open()
            async with self._pool.connection() as conn, _scope(conn, block):
                yield conn.cursor()
            return
        assert self._conn is not None
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock, _scope(self._conn, block):
            yield self._conn.cursor()


def _scope(
    conn: psycopg.AsyncConnection[Any], block: bool
) -> contextlib.AbstractAsyncContextManager[Any]:
    if block or not conn.autocommit:
        return conn.transaction()
    return contextlib.nullcontext()


@final
class AsyncPostgresRunStore:
    """The async twin of ``PostgresRunStore`` (the same tables, so a run saved by
    one is resumed by the other); every method is awaited and the claim's
    heartbeat is a task.

    Args:
        conninfo_or_pool: a conninfo string (the store opens an
            ``AsyncConnectionPool`` on first use; ``await close()`` closes it), a
            ``psycopg.AsyncConnection`` or a ``psycopg_pool.AsyncConnectionPool``.
        schema: as ``PostgresRunStore``; ``claim_timeout`` too.

    Raises:
        TypeError: ``conninfo_or_pool`` is none of these.
        ValueError: as ``PostgresRunStore``.
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
        self._claim_timeout: Final = check_claim_timeout(claim_timeout)
        self._db: Final = _AsyncConnections(conninfo_or_pool)

    async def close(self) -> None:
        """Close the pool the store opened from a conninfo string."""
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
        except psycopg.errors.UndefinedTable as error:
            raise not_set_up(self._sql.schema, error) from error

    async def setup(self) -> int:
        """As ``PostgresRunStore.setup``.

        Raises:
            LangHooksError: as ``PostgresRunStore.setup``.
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

    async def save(
        self,
        chain: LLMChain,
        *,
        metadata: Mapping[str, Any] | None = None,
        expires_in: float | None = None,
    ) -> str:
        """As ``PostgresRunStore.save``.

        Raises:
            ValueError: as ``PostgresRunStore.save``.
            TypeError: as ``PostgresRunStore.save``.
        """
        params = save_params(chain, metadata, expires_in)
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.save, params)
        run_id: str = params["id"]
        return run_id

    async def load(
        self,
        run_id: str,
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
    ) -> LLMChain:
        """As ``PostgresRunStore.load``.

        Raises:
            LangHooksError: as ``PostgresRunStore.load``.
        """
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.load, (run_id,))
            row = await cursor.fetchone()
        state = None if row is None else row[0]
        return load_chain(
            state, self._sql, run_id, model, tools, callbacks, fallbacks, retry
        )

    async def resume(
        self,
        run_id: str,
        decisions: Sequence[Decision] | Mapping[str, Decision],
        model: ChatModel,
        *,
        tools: Sequence[Tool] = (),
        callbacks: Sequence[Handler] = (),
        fallbacks: Sequence[ChatModel] = (),
        retry: RetryPolicy | None = None,
        continue_run: bool = True,
    ) -> RunResult:
        """As ``PostgresRunStore.resume``, with ``arun`` (async tools awaited).

        Raises:
            LangHooksError: as ``PostgresRunStore.resume``.
            ValueError: as ``PostgresRunStore.resume``.
        """
        code = ResumeCode(
            model=model,
            tools=tools,
            callbacks=callbacks,
            fallbacks=fallbacks,
            retry=retry,
            continue_run=continue_run,
        )
        return await aresume_once(
            _AsyncClaims(self),
            run_id,
            decisions,
            code,
            claim_timeout=self._claim_timeout,
        )

    async def pending(
        self, *, metadata: Mapping[str, Any] | None = None, limit: int = 100
    ) -> list[PendingRun]:
        """As ``PostgresRunStore.pending``.

        Raises:
            TypeError: as ``PostgresRunStore.pending``.
            ValueError: as ``PostgresRunStore.pending``.
        """
        query, params = pending_query(self._sql, metadata, limit)
        async with self._cursor() as cursor:
            await cursor.execute(query, params)
            return [pending_row(values) for values in await cursor.fetchall()]

    async def waiting(self, run_id: str) -> PendingRun | None:
        """As ``PostgresRunStore.waiting``."""
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.waiting, (run_id,))
            row = await cursor.fetchone()
        return None if row is None else pending_row(row)

    async def delete(self, run_id: str) -> bool:
        """As ``PostgresRunStore.delete``."""
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.delete, (run_id,))
            return cursor.rowcount > 0

    async def purge(self) -> int:
        """As ``PostgresRunStore.purge``."""
        async with self._cursor() as cursor:
            await cursor.execute(self._sql.purge)
            return cursor.rowcount


@final
class _AsyncClaims:
    """The claim primitives of ``AsyncPostgresRunStore``."""

    def __init__(self, store: AsyncPostgresRunStore) -> None:
        self._store: Final = store
        self._sql: Final = store._sql

    async def claim(self, run_id: str, token: str) -> Mapping[str, Any]:
        store, sql = self._store, self._sql
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
        state: dict[str, Any] = json.loads(row[0])
        return state

    async def heartbeat(self, run_id: str, token: str) -> bool:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.heartbeat, (run_id, token))
            return cursor.rowcount > 0

    async def start_call(self, run_id: str, token: str, call_id: str) -> str | None:
        params = {"id": run_id, "token": token, "call": call_id}
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.start_call, params)
            row = await cursor.fetchone()
        assert row is not None  # a SELECT of subqueries answers one row
        return started_outcome(run_id, row)

    async def finish_call(
        self, run_id: str, token: str, call_id: str, outcome: str
    ) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.finish_call, (outcome, run_id, call_id))

    async def settle(
        self,
        run_id: str,
        token: str,
        state: Mapping[str, Any],
        waiting: Sequence[ToolCall],
    ) -> None:
        params = settle_params(run_id, token, state, waiting)
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.settle, params)
            settled = scalar(await cursor.fetchone())
        if not settled:
            raise claim_lost(run_id)

    async def release(self, run_id: str, token: str) -> None:
        async with self._store._cursor() as cursor:
            await cursor.execute(self._sql.release, (run_id, token))

"""Run stores: where interrupted runs wait for people, and are resumed once.

- ``RunStore`` / ``AsyncRunStore``: the protocol every store satisfies (``save``,
  ``load``, ``resume``, ``pending``, ``delete``), sync and async.
- ``PendingRun``: one run of the approval inbox (``pending()``).
- ``MemoryRunStore``: a store in this process's memory, the web apps' default.

``RedisRunStore`` / ``AsyncRedisRunStore`` live in ``langhooks.integrations.redis``,
``PostgresRunStore`` / ``AsyncPostgresRunStore`` in
``langhooks.integrations.postgres``.
"""

from ._persist._stores import AsyncRunStore, MemoryRunStore, PendingRun, RunStore

__all__ = ["AsyncRunStore", "MemoryRunStore", "PendingRun", "RunStore"]

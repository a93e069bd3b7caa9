"""Reading a run's stream: ``run_entries`` (the records with their stream ids) and
``follow``, which re-drives a local handler with them; each with an async twin.

The async twins are written by hand in ``_redis_follow_async``, and the sync ones
generated from them by ``scripts/unasync.py`` into ``_redis_follow_sync``; what
both share is in ``_redis_entries``. This module gathers them."""

from __future__ import annotations

from ._redis_entries import RunEntry
from ._redis_entries import _Entries as _Entries  # _web_redis reads with it
from ._redis_follow_async import afollow, arun_entries
from ._redis_follow_sync import follow, run_entries

__all__ = ["RunEntry", "afollow", "arun_entries", "follow", "run_entries"]

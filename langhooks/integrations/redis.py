"""Events across processes and machines over Redis Streams (``langhooks[redis]``).

- ``RedisEventPublisher``: a handler that appends each run's ``EventRecord``s to
  the stream ``{prefix}run:{run_id}`` (and to the capped firehose
  ``{prefix}events``), in batches.
- ``follow`` / ``afollow``: re-drive a local handler from a run's stream, in
  another process or on another host; ``run_entries`` / ``arun_entries``: the
  stream's records with their ids (what a web page's event stream sends).
- ``RedisEventConsumer``: consumer groups over the firehose, at least once.
- ``RedisRunStore`` / ``AsyncRedisRunStore``: save an interrupted run, list the
  runs waiting for people, resume one in any worker, once.

One client object is passed in by the caller, never created from a URL here.
"""

from __future__ import annotations

try:
    import redis as _redis  # noqa: F401  # fail here, with the extra to install
except ImportError as _missing:  # pragma: no cover  # the test environment has redis
    raise ImportError(
        "langhooks.integrations.redis needs redis-py: pip install 'langhooks[redis]'"
    ) from _missing

from ._redis._consumer import RedisEventConsumer
from ._redis._entries import RunEntry
from ._redis._follow_async import afollow, arun_entries
from ._redis._follow_sync import follow, run_entries
from ._redis._position import FollowPosition
from ._redis._publisher import RedisEventPublisher
from ._redis._store_async import AsyncRedisRunStore
from ._redis._store_sync import RedisRunStore

__all__ = [
    "AsyncRedisRunStore",
    "FollowPosition",
    "RedisEventConsumer",
    "RedisEventPublisher",
    "RedisRunStore",
    "RunEntry",
    "afollow",
    "arun_entries",
    "follow",
    "run_entries",
]

"""follow() tells a loop whether the run ended (``FollowPosition.ended``), against
the real Redis of ``need_redis()``."""

from __future__ import annotations

import redis
import redis.asyncio

from langhooks.integrations.redis import (
    FollowPosition,
    RedisEventPublisher,
    afollow,
    follow,
)
from langhooks.testing import RecordingChainHandler

from .test_redis_publish import (
    aclient,
    client,
    interrupted_run,
    prefix,
    run_id_of,
    simple_run,
)

__all__ = ["aclient", "client", "prefix"]  # fixtures used here


class TestFollowPosition:
    def test_a_finished_run_says_it_ended(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """Following a finished run returns its last id with ended=True."""
        with RedisEventPublisher(client, prefix=prefix) as publisher:
            result = simple_run(publisher)
        position = follow(
            client, run_id_of(result), RecordingChainHandler(), prefix=prefix
        )
        assert isinstance(position, FollowPosition)
        assert position.ended
        assert position != "0-0"
        assert repr(position) == f"FollowPosition({str(position)!r}, ended=True)"

    def test_a_waiting_run_has_not_ended(
        self, client: redis.Redis, prefix: str
    ) -> None:
        """A run stopped for approval: follow returns after block_ms with
        ended=False, and the loop of the docstring goes on from there."""
        with RedisEventPublisher(client, prefix=prefix) as publisher:
            result = interrupted_run(publisher)
        run_id = run_id_of(result)
        handler = RecordingChainHandler()
        position = follow(client, run_id, handler, prefix=prefix, block_ms=10)
        assert not position.ended
        again = follow(
            client, run_id, handler, prefix=prefix, last_id=position, block_ms=10
        )
        assert (again, again.ended) == (position, False)

    def test_no_stream_has_not_ended(self, client: redis.Redis, prefix: str) -> None:
        """Nothing published yet: "0-0", not ended."""
        position = follow(
            client, "nope", RecordingChainHandler(), prefix=prefix, block_ms=10
        )
        assert (position, position.ended) == ("0-0", False)

    async def test_the_async_twin(
        self, client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str
    ) -> None:
        """afollow returns the same FollowPosition."""
        with RedisEventPublisher(client, prefix=prefix) as publisher:
            result = simple_run(publisher)
        position = await afollow(
            aclient, run_id_of(result), RecordingChainHandler(), prefix=prefix
        )
        assert position.ended

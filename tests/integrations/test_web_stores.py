"""The web app with a run store (``create_app(store=...)``): interrupted runs wait in
the store, appear in its inbox and are resumed through it, once."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

from langhooks.cli.serve import DemoModel, demo_agent
from langhooks.integrations.postgres import PostgresRunStore
from langhooks.integrations.redis import AsyncRedisRunStore
from langhooks.integrations.web import Agent, create_app
from langhooks.stores import MemoryRunStore, RunStore
from tests._services import REDIS_URL

from ._web_harness import serving
from .test_run_stores import Place, place
from .test_web import decide, events, start, text_of, wait_state

APPROVE = {"tool_call_id": "call_weather_1", "decision": "approve"}
ANSWER = "It is 14°C in Paris with light rain until 16:00, so yes: take an umbrella."


@pytest.fixture(params=["memory", "redis", "postgres"])
def where(request: pytest.FixtureRequest) -> Iterator[Place]:
    """Each store kind in turn."""
    with place(request.param) as here:
        yield here


def agent() -> Agent:
    """The demo agent (its model answers from the conversation, in any worker)."""
    return demo_agent(lambda: DemoModel(0.0))


class TestStoreOption:
    def test_an_interrupted_run_waits_in_the_store(self, where: Place) -> None:
        """A run that stops for approval is saved in the store (its inbox lists
        it); an approval resumes it through the store to the answer; a second
        approval is 409."""
        store = where.make()
        app = create_app(agent=agent(), store=store, heartbeat=0.05)
        with serving(app) as base:
            run_id = start(base, "Do I need an umbrella in Paris?")
            wait_state(base, run_id, "interrupted")
            (row,) = store.pending()
            assert row.run_id == run_id
            assert [call.name for call in row.calls] == ["get_weather"]
            answer = decide(base, run_id, APPROVE)
            assert answer.status_code == 202, answer.text
            records = [json.loads(e["data"]) for e in events(base, run_id)]
            assert text_of(records).endswith(ANSWER)
            wait_state(base, run_id, "ok")
            assert store.pending() == []
            assert decide(base, run_id, APPROVE).status_code == 409

    def test_on_redis_streams_with_another_store(self) -> None:
        """With redis= the streams stay in Redis while runs wait in the store
        given (here PostgreSQL)."""
        with place("redis") as streams, place("postgres") as runs:
            store = runs.make()
            client = redis.Redis.from_url(streams.url)
            app = create_app(
                redis=client,
                prefix=streams.namespace,
                agent=agent(),
                store=store,
                heartbeat=0.05,
            )
            with serving(app) as base:
                run_id = start(base, "Do I need an umbrella in Paris?")
                wait_state(base, run_id, "interrupted")
                assert [row.run_id for row in store.pending()] == [run_id]
                assert decide(base, run_id, APPROVE).status_code == 202
                wait_state(base, run_id, "ok")
                assert store.pending() == []
            client.close()

    def test_decisions_for_calls_not_waiting_are_422(self) -> None:
        """A decision for a call that does not wait is 422; the run still waits
        and takes the right decision."""
        store = MemoryRunStore()
        app = create_app(agent=agent(), store=store)
        with serving(app) as base:
            run_id = start(base, "Paris?")
            wait_state(base, run_id, "interrupted")
            wrong = {"tool_call_id": "nope", "decision": "approve"}
            assert decide(base, run_id, wrong).status_code == 422
            wait_state(base, run_id, "interrupted")
            assert decide(base, run_id, APPROVE).status_code == 202
            wait_state(base, run_id, "ok")

    def test_a_run_gone_from_the_store_is_409(self) -> None:
        """A waiting run deleted from the store (expired, say) is refused with the
        store's reason, and stays listed as interrupted."""
        store = MemoryRunStore()
        app = create_app(agent=agent(), store=store)
        with serving(app) as base:
            run_id = start(base, "Paris?")
            wait_state(base, run_id, "interrupted")
            assert store.delete(run_id)
            answer = decide(base, run_id, APPROVE)
            assert answer.status_code == 409
            assert "no saved run" in answer.text
            wait_state(base, run_id, "interrupted")

    def test_a_run_the_store_cannot_save_is_an_error(self) -> None:
        """A store that refuses the save (tables not set up) ends the run as
        "error", logged."""
        with place("postgres") as here:
            store = PostgresRunStore(here.url, schema=here.namespace)  # no setup()
            app = create_app(agent=agent(), store=store)
            with serving(app) as base:
                run_id = start(base, "Paris?")
                wait_state(base, run_id, "error")
            store.close()

    def test_takes_only_a_sync_run_store(self) -> None:
        """store= is a synchronous RunStore."""
        with pytest.raises(TypeError, match="RunStore"):
            create_app(store="postgresql://")  # type: ignore[arg-type]
        async_store = AsyncRedisRunStore(redis.asyncio.Redis.from_url(REDIS_URL))
        with pytest.raises(TypeError, match="synchronous"):
            create_app(store=async_store)  # type: ignore[arg-type]
        assert isinstance(MemoryRunStore(), RunStore)

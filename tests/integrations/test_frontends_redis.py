"""The frontend apps on a shared ``RedisRunStore``: an interrupt taken by one worker
is answered through another (a real Redis server, ``need_redis()``)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import redis
import redis.asyncio
from starlette.applications import Starlette
from starlette.routing import Mount

from langhooks.integrations.agui import create_agui_app
from langhooks.integrations.redis import AsyncRedisRunStore, RedisRunStore
from langhooks.integrations.ui_messages import create_ui_message_app

from .._services import need_redis
from ._frontend_agent import ANSWER, WeatherAgent
from ._web_harness import serving
from .test_agui_app import answers, approve, run_input
from .test_frontend_async import App, AsyncAgent, app_of, approved, ask, text_of
from .test_ui_message_app import USER, answered, assistant_of, chat, chunks


@pytest.fixture
def stores() -> Iterator[tuple[RedisRunStore, RedisRunStore]]:
    """Two workers' stores: their own clients, one key prefix (removed after)."""
    url = need_redis()
    prefix = f"langhooks-test-{uuid.uuid4().hex}:"
    one, two = redis.Redis.from_url(url), redis.Redis.from_url(url)
    try:
        yield RedisRunStore(one, prefix=prefix), RedisRunStore(two, prefix=prefix)
    finally:
        for key in one.scan_iter(f"{prefix}*"):
            one.delete(key)
        one.close()
        two.close()


def test_agui_resume_on_another_worker(
    stores: tuple[RedisRunStore, RedisRunStore],
) -> None:
    """AG-UI: the resume reaches the other worker, runs the tool once, and a
    repeated resume there is a conflict."""
    agent = WeatherAgent()
    with httpx.Client(timeout=30) as client:
        with serving(create_agui_app(agent=agent, store=stores[0])) as one:
            first = answers(client.post(one, json=run_input()))
        with serving(create_agui_app(agent=agent, store=stores[1])) as two:
            body = run_input(run="run-2", resume=approve(first[-1]))
            second = answers(client.post(two, json=body))
            again = answers(client.post(two, json=dict(body, runId="run-3")))
    text = "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == ANSWER
    assert again[-1]["code"] == "conflict"
    assert agent.runs == [{"city": "Paris"}]


def test_ui_message_approval_on_another_worker(
    stores: tuple[RedisRunStore, RedisRunStore],
) -> None:
    """AI SDK: the approval reaches the other worker and runs the tool once; the
    same approval posted again runs nothing."""
    agent = WeatherAgent()
    with httpx.Client(timeout=30) as client:
        with serving(create_ui_message_app(agent=agent, store=stores[0])) as one:
            message = assistant_of(chunks(client.post(one, json=chat([USER]))))
        with serving(create_ui_message_app(agent=agent, store=stores[1])) as two:
            body = chat([USER, answered(message)])
            out = chunks(client.post(two, json=body))
            again = client.post(two, json=body)
    assert "".join(c["delta"] for c in out if c["type"] == "text-delta") == ANSWER
    assert again.status_code == 409
    assert agent.runs == [{"city": "Paris"}]


def _closing(app: Starlette, client: redis.asyncio.Redis) -> Starlette:
    """``app``, closing ``client`` on its own loop when the server stops."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    return Starlette(routes=[Mount("/", app=app)], lifespan=lifespan)


@pytest.mark.parametrize("app", ["agui", "ui"])
def test_an_async_agent_on_async_stores(app: App) -> None:
    """An agent with an async tool, on two workers with their own
    ``AsyncRedisRunStore``: the approval reaches the other worker, whose
    ``arun()`` runs the tool once on its loop."""
    url = need_redis()
    prefix = f"langhooks-test-{uuid.uuid4().hex}:"
    agent = AsyncAgent("tool")

    def worker() -> Starlette:
        client = redis.asyncio.Redis.from_url(url)
        store = AsyncRedisRunStore(client, prefix=prefix)
        return _closing(app_of(app, agent, store=store), client)

    try:
        with httpx.Client(timeout=30) as http:
            with serving(worker()) as one:
                first = ask(http, app, one)
            with serving(worker()) as two:
                second = approved(http, app, two, first)
    finally:
        cleaner = redis.Redis.from_url(url)
        for key in cleaner.scan_iter(f"{prefix}*"):
            cleaner.delete(key)
        cleaner.close()
    assert text_of(app, second) == ANSWER
    assert agent.runs == [{"city": "Paris"}]
    assert len(set(agent.app_loops)) == 2  # two workers, each its own loop
    assert agent.ran_on == [agent.app_loops[-1]]

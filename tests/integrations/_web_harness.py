"""Serving a web app on 127.0.0.1 for the web tests, and the agents they run."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import uvicorn

from langhooks import Message, TokenUsage, ToolCall
from langhooks.chain import LLMChain
from langhooks.cli.demo import SYSTEM, WEATHER_TOOL, ApprovalGate
from langhooks.models import ScriptedChatModel, ScriptedTurn

QUESTION = "What's the weather in Paris? Do I need an umbrella?"
FIRST_TEXT = "Let me check the weather in Paris."
ANSWER = "It is 14°C in Paris with light rain until 16:00, so yes: take an umbrella."


def weather_turns() -> list[ScriptedTurn]:
    """The demo's two turns: a tool call, then the answer."""
    return [
        ScriptedTurn(
            thinking="I should look up the weather before answering.",
            text=FIRST_TEXT,
            tool_calls=[
                ToolCall(
                    call_id="call_1", name="get_weather", arguments={"city": "Paris"}
                )
            ],
            usage=TokenUsage(input_tokens=48, output_tokens=36),
        ),
        ScriptedTurn(text=ANSWER, usage=TokenUsage(input_tokens=97, output_tokens=21)),
    ]


def agent_of(
    turns: Sequence[ScriptedTurn], *, delay: float = 0.0, gate: bool = True
) -> Any:
    """An agent whose runs each get a fresh scripted model of ``turns``."""

    def agent(prompt: str) -> LLMChain:
        callbacks = [ApprovalGate()] if gate else []
        model = ScriptedChatModel(list(turns), delay=delay)
        return LLMChain(model, tools=[WEATHER_TOOL], callbacks=callbacks).add_messages(
            [Message.system(SYSTEM), Message.user(prompt)]
        )

    return agent


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1; yields its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():  # pragma: no cover - a broken server fails here
                raise RuntimeError("uvicorn stopped before it started")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join()
        listener.close()


def sse(lines: Iterator[str]) -> Iterator[dict[str, str]]:
    """The events of a Server-Sent Events body, one dict of fields per event; a
    comment line is yielded as ``{"comment": text}``."""
    fields: dict[str, str] = {}
    for line in lines:
        if line.startswith(":"):
            yield {"comment": line[1:].strip()}
        elif not line:
            if fields:
                yield fields
            fields = {}
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    if fields:
        yield fields

"""Google ADK: an ``LlmAgent`` on ``ScriptedGemini`` with ``LangHooksPlugin``.

The runner streams (``StreamingMode.SSE``); the paused run lives in a
``DatabaseSessionService`` session on a SQLite file in the test's directory, and
the second process resumes it by answering ADK's confirmation request
(``confirmations``) through a new runner on the same file. ``Runner.run`` is the
sync entry point, ``Runner.run_async`` the async one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from tests.bridges._support import need_module

need_module("google.adk", "google-adk")

from google.adk.agents.llm_agent import LlmAgent  # noqa: E402

# ADK's documented import; the module does not re-export StreamingMode.
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions.database_session_service import (  # noqa: E402
    DatabaseSessionService,
)
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402
from sqlalchemy.pool import NullPool  # noqa: E402
from typing_extensions import override  # noqa: E402

from langhooks.chain import Decision  # noqa: E402
from langhooks.integrations.google_adk import (  # noqa: E402
    LangHooksPlugin,
    confirmations,
)

from .._adk_model import ScriptedGemini  # noqa: E402
from .._driver import Place  # noqa: E402
from .._script import PROMPT, TURNS, ScriptTool, script_tools  # noqa: E402

APP = "langhooks_conformance"
USER = "user"


class ScriptedTool(BaseTool):
    """A script tool as an ADK tool, declared with the script's JSON schema."""

    def __init__(self, tool: ScriptTool, place: Place) -> None:
        super().__init__(name=tool.name, description=tool.description)
        self._tool = tool
        self._place = place

    @override
    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=dict(self._tool.parameters),
        )

    @override
    async def run_async(
        self, *, args: dict[str, Any], tool_context: ToolContext
    ) -> Any:
        return self._tool.run(args, self._place.ledger)


def runner(
    place: Place,
    handlers: Sequence[Any],
    *,
    turns: Sequence[Any] = TURNS,
    model: ScriptedGemini | None = None,
) -> Runner:
    """A runner of the script's agent with the bridge attached."""
    agent = LlmAgent(
        name="assistant",
        model=model or ScriptedGemini(turns=list(turns)),
        tools=[ScriptedTool(t, place) for t in script_tools()],
    )
    # No pool: Runner.run drives each run on a loop of its own, and a pooled
    # connection must not outlive the loop it was opened on.
    sessions = DatabaseSessionService(
        f"sqlite+aiosqlite:///{place.directory / 'adk.db'}", poolclass=NullPool
    )
    app = App(name=APP, root_agent=agent, plugins=[LangHooksPlugin(*handlers)])
    return Runner(app=app, session_service=sessions)


STREAM = RunConfig(streaming_mode=StreamingMode.SSE)


def _text(events: Sequence[Any]) -> str:
    final = [e for e in events if not e.partial and e.content and e.content.parts]
    return "".join(p.text or "" for p in final[-1].content.parts if not p.thought)


def _paused(events: Sequence[Any]) -> None:
    asked = [
        c
        for e in events
        for c in e.get_function_calls()
        if c.name == "adk_request_confirmation"
    ]
    assert len(asked) == 1, events
    assert asked[0].args["originalFunctionCall"]["id"] == "call_4", asked


async def _session(run: Runner, place: Place) -> None:
    await run.session_service.create_session(
        app_name=APP, user_id=USER, session_id=place.thread
    )


class GoogleAdkDriver:
    """ADK + LangHooksPlugin (see ``tests/bridges/_driver.py``)."""

    name = "google_adk"

    def start(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> None:
        run = runner(place, handlers)
        asyncio.run(_session(run, place))
        message = types.Content(role="user", parts=[types.Part(text=PROMPT)])
        if use_async:
            events = asyncio.run(_collect(run, place, message))
        else:
            events = list(
                run.run(
                    user_id=USER,
                    session_id=place.thread,
                    new_message=message,
                    run_config=STREAM,
                )
            )
        _paused(events)

    def resume(self, place: Place, handlers: Sequence[Any], *, use_async: bool) -> str:
        run = runner(place, handlers)
        session = asyncio.run(
            run.session_service.get_session(
                app_name=APP, user_id=USER, session_id=place.thread
            )
        )
        assert session is not None
        message = confirmations(session.events, {"call_4": Decision.approve()})
        if use_async:
            events = asyncio.run(_collect(run, place, message))
        else:
            events = list(
                run.run(
                    user_id=USER,
                    session_id=place.thread,
                    new_message=message,
                    run_config=STREAM,
                )
            )
        return _text(events)


async def _collect(run: Runner, place: Place, message: types.Content) -> list[Any]:
    return [
        event
        async for event in run.run_async(
            user_id=USER,
            session_id=place.thread,
            new_message=message,
            run_config=STREAM,
        )
    ]


DRIVER = GoogleAdkDriver()

"""AG-UI (the Agent-User Interaction protocol, core 1.0) for langhooks runs.

- ``create_agui_app(agent=..., store=None, heartbeat=15.0)``: an ASGI app (Starlette)
  whose ``POST /`` takes an AG-UI ``RunAgentInput`` and streams the run as AG-UI
  events, so CopilotKit and every other AG-UI client talk to a langhooks agent,
  human approval included (an interrupt, then a resume on the same thread).
- ``agui_events(records, thread_id=..., run_id=...)``: the translation alone, for
  recorded runs or runs followed from Redis.
- ``shared_state()``: in a tool or handler of a run the app started, the client's
  ``state`` (a ``SharedState``); a change is sent back as ``STATE_DELTA`` and
  ``STATE_SNAPSHOT``.
- ``client_tool(name, description=..., parameters_schema=...)``: a tool the
  client runs; the request's ``tools`` (CopilotKit's frontend tools) become client
  tools by themselves. A run waiting for them finishes with their
  ``pendingToolCallIds``; the results posted back as tool messages resume it.

Needs the web extra: ``pip install 'langhooks[web]'``.
"""

from __future__ import annotations

try:
    import ag_ui.core  # noqa: F401
    import starlette  # noqa: F401
except ImportError as _error:  # pragma: no cover - the web extra installs them
    raise ImportError(
        "langhooks.integrations.agui needs the web extra: pip install 'langhooks[web]'"
    ) from _error

from ._frontends._agui_app import MAX_CONVERSATION_BYTES, create_agui_app
from ._frontends._agui_events import agui_events
from ._frontends._app import Agent
from ._frontends._client_tools import client_tool
from ._frontends._shared_state import SharedState, shared_state

__all__ = [
    "MAX_CONVERSATION_BYTES",
    "Agent",
    "SharedState",
    "agui_events",
    "client_tool",
    "create_agui_app",
    "shared_state",
]

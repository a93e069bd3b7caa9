"""The Vercel AI SDK's UI message stream (protocol v1, as AI SDK 6 speaks it) for
langhooks runs.

- ``create_ui_message_app(agent=..., store=None)``: an ASGI app (Starlette) whose
  ``POST /`` is the endpoint ``useChat`` posts a chat to; it streams the run as
  UI message chunks, tool approval included (``tool-approval-request``, answered by
  re-posting the conversation with the tool part in state ``approval-responded``).
- ``ui_message_chunks(records)``: the translation alone, for recorded runs.
- ``shared_state()``: in a tool or handler of a run the app started, the client's
  state (a ``SharedState``, from the last ``data-state`` part or the body's
  ``"state"``); a change is sent back as a ``data-state`` part.
- ``client_tool(name, description=..., parameters_schema=...)``: a tool the
  client runs (``onToolCall``, answered with ``addToolOutput``): its call goes to
  the client once review allowed it; the output posted back resumes the run.

Needs the web extra: ``pip install 'langhooks[web]'``.
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
except ImportError as _error:  # pragma: no cover - the web extra installs it
    raise ImportError(
        "langhooks.integrations.ui_messages needs the web extra: "
        "pip install 'langhooks[web]'"
    ) from _error

from ._frontends._app import Agent
from ._frontends._client_tools import client_tool
from ._frontends._shared_state import SharedState, shared_state
from ._frontends._ui_message_app import MAX_CONVERSATION_BYTES, create_ui_message_app
from ._frontends._ui_message_chunks import ui_message_chunks

__all__ = [
    "MAX_CONVERSATION_BYTES",
    "Agent",
    "SharedState",
    "client_tool",
    "create_ui_message_app",
    "shared_state",
    "ui_message_chunks",
]

"""MCP servers' tools in the runtime (``langhooks[mcp]``).

- ``amcp_tools`` / ``mcp_tools``: a connected ``mcp.ClientSession``'s tools as
  ``Tool``s, for ``arun()`` on the session's loop or ``run()`` through a portal.
  Progress notifications reach ``on_tool_progress``; a failed call is a classified
  ``LangHooksError``; cancelling the run cancels the request.
- ``elicitation_callback``: pass it to the ``ClientSession``: a server's question
  during a call interrupts the run; ``answer_elicitation`` makes the decision that
  resumes it with the human's answer.
- ``logging_callback``: pass it to the ``ClientSession``: the server's log messages
  go to Python ``logging`` (logger ``langhooks.mcp``).
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401  # fail here, with the extra to install
except ImportError as _missing:  # pragma: no cover  # the test environment has mcp
    raise ImportError(
        "langhooks.integrations.mcp needs the MCP SDK: pip install 'langhooks[mcp]'"
    ) from _missing

from ._mcp._flights import ELICITATION_KEY, elicitation_callback, logging_callback
from ._mcp._tools import (
    DEFAULT_ELICITATION_TIMEOUT,
    amcp_tools,
    answer_elicitation,
    mcp_tools,
)

__all__ = [
    "DEFAULT_ELICITATION_TIMEOUT",
    "ELICITATION_KEY",
    "amcp_tools",
    "answer_elicitation",
    "elicitation_callback",
    "logging_callback",
    "mcp_tools",
]

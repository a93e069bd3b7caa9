"""langhooks handlers on LangChain 1.x and LangGraph runs (extra ``langchain``).

- ``LangHooksCallbackHandler(*handlers)`` / ``AsyncLangHooksCallbackHandler``:
  ``runnable.invoke(input, {"callbacks": [LangHooksCallbackHandler(h)]})`` on any
  Runnable or LangGraph graph; observation only.
- ``LangHooksMiddleware(*handlers)``: ``create_agent(model, tools,
  middleware=[LangHooksMiddleware(h)])``; every event, plus review with allow /
  rewrite / deny / interrupt. ``resume_command`` builds the ``Command`` that
  resumes a paused agent with human ``Decision``s.

See the guide's page "One handler, any framework" for the mapping and the
differences from ``LLMChain``.
"""

from __future__ import annotations

try:
    import langchain.agents  # noqa: F401
    import langgraph  # noqa: F401
except ImportError as _missing:  # pragma: no cover  # tested in a subprocess
    raise ImportError(
        "langhooks.integrations.langchain needs LangChain and LangGraph: "
        "pip install 'langhooks[langchain]'"
    ) from _missing

from ._bridging._warnings import BridgeWarning
from ._langchain._callbacks_async import AsyncLangHooksCallbackHandler
from ._langchain._callbacks_sync import LangHooksCallbackHandler
from ._langchain._convert import FrameworkModel
from ._langchain._middleware import LangHooksMiddleware, resume_command

__all__ = [
    "AsyncLangHooksCallbackHandler",
    "BridgeWarning",
    "FrameworkModel",
    "LangHooksCallbackHandler",
    "LangHooksMiddleware",
    "resume_command",
]

"""Bridge to Strands Agents: langhooks handlers on a Strands agent's invocations.

``Agent(..., hooks=[LangHooksHookProvider(handler)])`` attaches the handlers;
``interrupt_responses(result.interrupts, decisions)`` turns human decisions on
calls a review interrupted into the prompt that resumes the agent.
Needs the ``strands`` extra (``pip install 'langhooks[strands]'``).
"""

try:
    import strands as _strands  # noqa: F401
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        "langhooks.integrations.strands needs strands-agents: "
        "pip install 'langhooks[strands]'"
    ) from _missing

from ._bridging._warnings import BridgeWarning
from ._strands._convert import interrupt_responses
from ._strands._hooks import LangHooksHookProvider

__all__ = ["BridgeWarning", "LangHooksHookProvider", "interrupt_responses"]

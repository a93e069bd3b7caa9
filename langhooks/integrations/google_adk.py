"""Bridge to Google's Agent Development Kit: langhooks handlers on ADK runs.

``Runner(..., plugins=[LangHooksPlugin(handler)])`` attaches the handlers;
``confirmations(session.events, decisions)`` turns human decisions on calls a
review interrupted into the user message that resumes the run.
Needs the ``google-adk`` extra (``pip install 'langhooks[google-adk]'``).
"""

try:
    import google.adk as _google_adk  # noqa: F401
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        "langhooks.integrations.google_adk needs google-adk: "
        "pip install 'langhooks[google-adk]'"
    ) from _missing

from ._bridging._warnings import BridgeWarning
from ._google_adk._convert import confirmations
from ._google_adk._plugin import LangHooksPlugin

__all__ = ["BridgeWarning", "LangHooksPlugin", "confirmations"]

"""Bridge to pydantic-ai: langhooks handlers on a pydantic-ai agent's runs.

``Agent(model, capabilities=[LangHooksCapability(handler)])`` attaches the
handlers; ``deferred_tool_results(decisions)`` turns human decisions on calls a
review interrupted into the ``DeferredToolResults`` that resume the run.
Needs the ``pydantic-ai`` extra (``pip install 'langhooks[pydantic-ai]'``).
"""

try:
    import pydantic_ai as _pydantic_ai  # noqa: F401
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        "langhooks.integrations.pydantic_ai needs pydantic-ai: "
        "pip install 'langhooks[pydantic-ai]'"
    ) from _missing

from ._pydantic_ai._capability import LangHooksCapability
from ._pydantic_ai._messages import deferred_tool_results

__all__ = ["LangHooksCapability", "deferred_tool_results"]

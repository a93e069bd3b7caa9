"""Bridge to the OpenAI Agents SDK: langhooks handlers on an agent's runs.

``hooks = LangHooksRunHooks(handler)``, then
``Runner.run(hooks.install(agent), input, hooks=hooks)`` (or ``hooks.run(agent,
input)``); ``apply_decisions(state, decisions)`` answers the calls a review
interrupted on the run's ``RunState``. Needs the ``openai-agents`` extra
(``pip install 'langhooks[openai-agents]'``).
"""

try:
    import agents as _agents  # noqa: F401
except ImportError as _missing:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        "langhooks.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'langhooks[openai-agents]'"
    ) from _missing

from ._bridging._warnings import BridgeWarning
from ._openai_agents._hooks import LangHooksRunHooks, apply_decisions

__all__ = ["BridgeWarning", "LangHooksRunHooks", "apply_decisions"]

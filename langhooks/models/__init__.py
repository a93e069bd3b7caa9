"""Chat models: the ``ChatModel`` protocol, the scripted model and provider models."""

from ._base import ChatModel, ChatRequest
from ._scripted import ScriptedChatModel, ScriptedTurn

__all__ = ["ChatModel", "ChatRequest"]
__all__ += ["ScriptedChatModel", "ScriptedTurn"]

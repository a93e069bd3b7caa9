"""Chat models: the ``ChatModel`` protocol, the scripted model and provider models."""

from ._base import ChatModel, ChatRequest

__all__ = ["ChatModel", "ChatRequest"]

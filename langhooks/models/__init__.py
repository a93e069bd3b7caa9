"""Chat models: the ``ChatModel`` protocol, the scripted model and provider models."""

from .._core._model import ChatModel, ChatRequest
from ._anthropic import AnthropicChatModel
from ._bedrock import BedrockChatModel
from ._cohere import CohereChatModel
from ._drive_async import AsyncStreamDriver
from ._drive_sync import StreamDriver
from ._formats import STREAM_FORMATS, StreamFormat
from ._gemini import GeminiChatModel
from ._mistral import MistralChatModel
from ._ollama import OllamaChatModel
from ._openai import OpenAIChatModel, OpenAIResponsesModel
from ._replay import replay_stream
from ._scripted import ScriptedChatModel, ScriptedTurn
from ._sse import stream_events

__all__ = ["ChatModel", "ChatRequest"]
__all__ += ["ScriptedChatModel", "ScriptedTurn"]

__all__ += [
    "STREAM_FORMATS",
    "AsyncStreamDriver",
    "StreamDriver",
    "StreamFormat",
    "replay_stream",
    "stream_events",
]

__all__ += [
    "AnthropicChatModel",
    "BedrockChatModel",
    "OllamaChatModel",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
]

__all__ += ["CohereChatModel", "GeminiChatModel", "MistralChatModel"]

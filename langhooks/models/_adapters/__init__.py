"""Pure wire-format adapters, one module per format (see ``_base``); the formats'
registry (``langhooks.models._formats``) names each one's adapter."""

from __future__ import annotations

from ._base import StreamAdapter
from .anthropic import AnthropicAdapter
from .bedrock import BedrockAdapter
from .cohere import CohereAdapter
from .gemini import GeminiAdapter
from .ollama import OllamaAdapter
from .openai_chat import OpenAIChatAdapter
from .openai_responses import OpenAIResponsesAdapter

__all__ = [
    "AnthropicAdapter",
    "BedrockAdapter",
    "CohereAdapter",
    "GeminiAdapter",
    "OllamaAdapter",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "StreamAdapter",
]

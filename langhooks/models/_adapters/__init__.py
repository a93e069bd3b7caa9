"""Pure wire-format adapters, one module per format (see ``_base``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from ._base import StreamAdapter
from .anthropic import AnthropicAdapter
from .bedrock import BedrockAdapter
from .cohere import CohereAdapter
from .gemini import GeminiAdapter
from .ollama import OllamaAdapter
from .openai_chat import OpenAIChatAdapter
from .openai_responses import OpenAIResponsesAdapter

__all__ = [
    "ADAPTERS",
    "AnthropicAdapter",
    "BedrockAdapter",
    "CohereAdapter",
    "GeminiAdapter",
    "OllamaAdapter",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "StreamAdapter",
]

#: Stream format name -> adapter factory.
ADAPTERS: Final[Mapping[str, Callable[[], StreamAdapter]]] = {
    "openai-chat": OpenAIChatAdapter,
    "openai-responses": OpenAIResponsesAdapter,
    "anthropic": AnthropicAdapter,
    "ollama": OllamaAdapter,
    "gemini": GeminiAdapter,
    "cohere": CohereAdapter,
    "bedrock": BedrockAdapter,
}

"""One constructor convention for every provider model (issue 40): the model name
first, positionally or as ``model=``; a missing SDK names the extra to install."""

from __future__ import annotations

import inspect
import sys

import pytest

from langhooks import models
from langhooks.models import (
    AnthropicChatModel,
    BedrockChatModel,
    CohereChatModel,
    GeminiChatModel,
    MistralChatModel,
    OllamaChatModel,
    OpenAIChatModel,
    OpenAIResponsesModel,
)

# Each provider model, the module its constructor imports first, and its extra.
PROVIDERS = [
    (OpenAIChatModel, "openai", "openai"),
    (OpenAIResponsesModel, "openai", "openai"),
    (AnthropicChatModel, "anthropic", "anthropic"),
    (OllamaChatModel, "httpx", "ollama"),
    (GeminiChatModel, "google.genai", "gemini"),
    (CohereChatModel, "cohere", "cohere"),
    (MistralChatModel, "mistralai.client", "mistral"),
    (BedrockChatModel, "boto3", "bedrock"),
]


class TestConvention:
    def test_every_provider_model_is_listed(self) -> None:
        """The table above covers every provider class langhooks.models exports."""
        exported = {
            name
            for name in models.__all__
            if name.endswith("Model") and name not in ("ChatModel", "ScriptedChatModel")
        }
        assert exported == {cls.__name__ for cls, _, _ in PROVIDERS}

    @pytest.mark.parametrize(("cls", "module", "extra"), PROVIDERS)
    def test_the_model_name_comes_first(
        self, cls: type, module: str, extra: str
    ) -> None:
        """The first parameter is ``model``, positional or keyword; the rest are
        keyword-only."""
        parameters = list(inspect.signature(cls).parameters.values())
        assert parameters[0].name == "model"
        assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters[1:])

    @pytest.mark.parametrize(("cls", "module", "extra"), PROVIDERS)
    def test_a_missing_sdk_names_the_extra_either_way(
        self, cls: type, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without its SDK (import blocked), the model named positionally or by
        keyword says which extra to install."""
        monkeypatch.setitem(sys.modules, module, None)
        hint = f'pip install "langhooks[{extra}]"'
        with pytest.raises(ImportError, match=hint.replace("[", r"\[")):
            cls("some-model")
        with pytest.raises(ImportError, match=hint.replace("[", r"\[")):
            cls(model="some-model")

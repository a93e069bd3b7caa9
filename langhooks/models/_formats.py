"""The wire formats: one entry per format, read by every place that lists them.

A provider stream's format is its name (``StreamFormat``), the pure adapter that
turns its events into handler calls, how its body is framed (SSE, NDJSON, the AWS
eventstream), the provider name OpenTelemetry reports for a model speaking it, and
what marks a capture of it, so ``langhooks replay`` can say "this looks like an
anthropic stream" or take a ``.ndjson`` file as Ollama's. The stream driver, the
decoders (``stream_events``), ``replay_stream``, the replay command and the
OpenTelemetry integration all read ``FORMATS``; a new format is its adapter module,
its entry here and its name in ``StreamFormat`` (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

from ._adapters._base import StreamAdapter
from ._adapters.anthropic import AnthropicAdapter
from ._adapters.bedrock import BedrockAdapter
from ._adapters.cohere import CohereAdapter
from ._adapters.gemini import GeminiAdapter
from ._adapters.ollama import OllamaAdapter
from ._adapters.openai_chat import OpenAIChatAdapter
from ._adapters.openai_responses import OpenAIResponsesAdapter

__all__ = [
    "FORMATS",
    "STREAM_FORMATS",
    "Framing",
    "StreamFormat",
    "WireFormat",
    "format_named",
    "looks_like",
    "provider_name",
]

StreamFormat: TypeAlias = Literal[
    "openai-chat",
    "openai-responses",
    "anthropic",
    "ollama",
    "gemini",
    "cohere",
    "bedrock",
]

#: How a format's body is cut into events: server-sent events, one JSON object a
#: line, or AWS's binary eventstream messages.
Framing: TypeAlias = Literal["sse", "ndjson", "eventstream"]


@dataclass(frozen=True, slots=True)
class WireFormat:
    """One wire format: everything langhooks knows about it, in one place."""

    #: The name models, ``replay_stream`` and ``langhooks replay`` use.
    name: StreamFormat
    #: Makes the format's stream adapter (one per stream).
    adapter: Callable[[], StreamAdapter]
    #: How the body is cut into events.
    framing: Framing
    #: ``gen_ai.provider.name`` (OpenTelemetry) of a model speaking this format,
    #: unless the model class says otherwise (``_provider_name``).
    provider: str
    #: Byte strings that mark a capture of this format near its start, any one
    #: enough (an NDJSON format's capture must also start with ``{``).
    marks: tuple[bytes, ...]
    #: File name endings that imply this format (``langhooks replay``).
    suffixes: tuple[str, ...] = ()

    def looks_like(self, head: bytes) -> bool:
        """Whether ``head``, the start of a capture, looks like this format."""
        if self.framing == "ndjson" and not head.lstrip().startswith(b"{"):
            return False
        return any(mark in head for mark in self.marks)


#: The formats, by name, in the order a capture is checked against their marks.
FORMATS: Final[Mapping[str, WireFormat]] = {
    entry.name: entry
    for entry in (
        WireFormat(
            "openai-chat",
            OpenAIChatAdapter,
            "sse",
            "openai",
            (b"chat.completion.chunk", b'"choices"'),
        ),
        WireFormat(
            "openai-responses",
            OpenAIResponsesAdapter,
            "sse",
            "openai",
            (b"response.created", b"response.output_"),
        ),
        WireFormat(
            "anthropic",
            AnthropicAdapter,
            "sse",
            "anthropic",
            (b"message_start", b"content_block_"),
        ),
        WireFormat(
            "ollama",
            OllamaAdapter,
            "ndjson",
            "ollama",
            (b'"done"',),
            suffixes=(".ndjson", ".jsonl"),
        ),
        WireFormat(
            "gemini",
            GeminiAdapter,
            "sse",
            "gcp.gemini",
            (b'"candidates"', b'"usageMetadata"'),
        ),
        WireFormat(
            "cohere",
            CohereAdapter,
            "sse",
            "cohere",
            (b"message-start", b"content-delta"),
        ),
        WireFormat(
            "bedrock",
            BedrockAdapter,
            "eventstream",
            "aws.bedrock",
            (b":event-type",),
        ),
    )
}

#: The wire formats a driver (and ``replay_stream``) understands.
STREAM_FORMATS: Final[tuple[str, ...]] = get_args(StreamFormat)


def format_named(name: object) -> WireFormat:
    """The entry of the format called ``name``.

    Raises:
        ValueError: no format has that name (the message lists them).
    """
    entry = FORMATS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ValueError(f"unknown stream format {name!r}; use one of {list(FORMATS)}")
    return entry


def looks_like(head: bytes) -> WireFormat | None:
    """The format the start of a capture looks like, if its marks say."""
    for entry in FORMATS.values():
        if entry.looks_like(head):
            return entry
    return None


def provider_name(model_class: type) -> str | None:
    """``gen_ai.provider.name`` of a langhooks model class: its ``_provider_name``
    if it sets one (a model speaking another provider's format, such as Mistral's
    OpenAI-compatible stream), else its format's provider; None if it has
    neither."""
    name = getattr(model_class, "_provider_name", None)
    if isinstance(name, str):
        return name
    format = getattr(model_class, "_format", None)
    entry = FORMATS.get(format) if isinstance(format, str) else None
    return None if entry is None else entry.provider

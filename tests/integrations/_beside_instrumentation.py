"""Run langhooks' SDK models with an official GenAI instrumentation active.

Run as ``python -m tests.integrations._beside_instrumentation KIT MODEL`` in a
subprocess (the instrumentation patches the SDK for the whole process), with the
instrumentation's own install directory first on ``PYTHONPATH``. ``KIT`` is
``openai-v2`` or ``genai``; ``MODEL`` is ``chat``, ``responses`` or ``anthropic``.
It streams a recorded answer from a local server through ``traced_stream``,
``atraced_stream`` and ``LLMChain.run()``, and prints one JSON object: what each
call returned, what the handler saw, and the span tree.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any, Final

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from typing_extensions import override

from langhooks import LangHooksError, Message, StreamingChatResponseHandler
from langhooks.chain import LLMChain
from langhooks.integrations.opentelemetry import OpenTelemetryHandler
from langhooks.models import (
    AnthropicChatModel,
    ChatModel,
    ChatRequest,
    OpenAIChatModel,
    OpenAIResponsesModel,
)
from tests.models._server import WEATHER_TOOL, FixtureServer, stream_reply

# The instrumentor each kit offers for each SDK.
_V2: Final = "opentelemetry.instrumentation.openai_v2"
_GENAI: Final = "opentelemetry.instrumentation.genai"
INSTRUMENTORS: Final = {
    ("openai-v2", "openai"): (_V2, "OpenAIInstrumentor"),
    ("genai", "openai"): (f"{_GENAI}.openai", "OpenAIInstrumentor"),
    ("genai", "anthropic"): (f"{_GENAI}.anthropic", "AnthropicInstrumentor"),
}
# The answer after the tool call, for the chain's second model call.
ENDINGS = {
    "chat": "openai_chat_keepalive_crlf.sse",
    "responses": "openai_responses_incomplete.sse",
    "anthropic": "anthropic_refusal.sse",
}
REPLIES = {
    "chat": ("openai_chat_tools.sse", "openai_200_stream_headers.http"),
    "responses": ("openai_responses.sse", None),
    "anthropic": ("anthropic_thinking_tool.sse", "anthropic_200_stream_headers.http"),
}


class Seen(StreamingChatResponseHandler):
    """Counts the partials and keeps the errors the model reported."""

    def __init__(self) -> None:
        self.partials = 0
        self.errors: list[str] = []

    @override
    def on_partial_response(self, partial: Any, context: Any) -> None:
        self.partials += 1

    @override
    def on_error(self, error: LangHooksError) -> None:
        self.errors.append(str(error))


def make_model(name: str, url: str) -> ChatModel:
    if name == "chat":
        return OpenAIChatModel("gpt-4o", base_url=f"{url}/v1", api_key="test")
    if name == "responses":
        return OpenAIResponsesModel("gpt-5", base_url=f"{url}/v1", api_key="test")
    return AnthropicChatModel("claude-sonnet-4-5", base_url=url, api_key="test")


def outcome(call: Any) -> dict[str, Any]:
    """What a call returned, or the type of what it raised."""
    try:
        response = call()
    except Exception as exc:
        return {"raised": type(exc).__name__, "message": str(exc)}
    return {"status": response.message.status}


def span_tree(spans: tuple[ReadableSpan, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": span.name,
            "id": span.context.span_id if span.context else None,
            "parent": span.parent.span_id if span.parent else None,
            "scope": span.instrumentation_scope.name
            if span.instrumentation_scope
            else None,
        }
        for span in spans
    ]


def main(kit: str, name: str) -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sdk = "anthropic" if name == "anthropic" else "openai"
    module, cls = INSTRUMENTORS[(kit, sdk)]
    instrumentor = getattr(importlib.import_module(module), cls)()
    instrumentor.instrument(tracer_provider=provider)
    otel = OpenTelemetryHandler(tracer_provider=provider)
    body, head = REPLIES[name]
    result: dict[str, Any] = {}
    request = ChatRequest([Message.user("What is the weather in Paris?")])
    with FixtureServer() as server:
        model = make_model(name, server.url)
        for label in ("stream", "astream", "chain"):
            server.add(stream_reply(body, headers_from=head))
            seen = Seen()
            if label == "stream":
                got = outcome(lambda s=seen: otel.traced_stream(model, request, s))
            elif label == "astream":
                got = outcome(
                    lambda s=seen: asyncio.run(otel.atraced_stream(model, request, s))
                )
            else:
                server.add(stream_reply(ENDINGS[name]))
                chain = LLMChain(model, tools=[WEATHER_TOOL], callbacks=[otel])
                chain = chain.add_messages(request.messages)
                run = chain.run()
                got = {"run": run.status, "error": str(run.error or "")}
            result[label] = {**got, "partials": seen.partials, "errors": seen.errors}
    result["spans"] = span_tree(exporter.get_finished_spans())
    instrumentor.uninstrument()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

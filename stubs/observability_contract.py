"""Typing contract: the observability handlers as a user wires them (checked by
mypy, never run)."""

from __future__ import annotations

import logging
from typing import assert_type

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from langhooks import ChatResponse, Message, StreamingChatResponseHandler
from langhooks.chain import LLMChain, RunResult
from langhooks.integrations.console import ConsoleHandler
from langhooks.integrations.logging import LoggingHandler
from langhooks.integrations.opentelemetry import CaptureMode, OpenTelemetryHandler
from langhooks.models import ChatRequest, ScriptedChatModel


def wire(model: ScriptedChatModel) -> RunResult:
    """All three handlers in one chain's callbacks."""
    otel = OpenTelemetryHandler(tracer_provider=TracerProvider(), agent_name="a")
    logs = LoggingHandler(logging.getLogger("app"), level=logging.DEBUG)
    chain = LLMChain(model, callbacks=[otel, logs, ConsoleHandler(color=False)])
    return chain.add_message(Message.user("hi")).run()


async def awire(model: ScriptedChatModel) -> RunResult:
    """The same handler goes in arun()'s callbacks, with content in log records."""
    otel = OpenTelemetryHandler(
        logger_provider=LoggerProvider(), capture_content="event_only"
    )
    chain = LLMChain(model, callbacks=[otel])
    assert_type(otel.capture_mode, CaptureMode)
    return await chain.arun()


def bare(model: ScriptedChatModel, handler: StreamingChatResponseHandler) -> None:
    """A chat span around a bare stream; LoggingHandler is a streaming handler too."""
    otel = OpenTelemetryHandler(capture_content=True)
    request = ChatRequest([Message.user("hi")])
    assert_type(otel.traced_stream(model, request, handler), ChatResponse)
    assert_type(otel.traced_stream(model, request, LoggingHandler()), ChatResponse)
    assert_type(otel.capture_content, bool)


def rejected() -> None:
    """Options the contract refuses."""
    OpenTelemetryHandler("langhooks")  # type: ignore[call-arg, arg-type]
    OpenTelemetryHandler(capture_content="yes")  # type: ignore[arg-type]
    OpenTelemetryHandler(capture_content="span")  # type: ignore[arg-type]
    OpenTelemetryHandler(logger_provider=TracerProvider())  # type: ignore[arg-type]
    ConsoleHandler(color="auto")  # type: ignore[arg-type]
    LoggingHandler(level="INFO")  # type: ignore[arg-type]

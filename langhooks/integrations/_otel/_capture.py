"""Content capture as the official GenAI instrumentations do it.

``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (or the handler's
``capture_content``) chooses where prompts, answers, tool arguments and results
go:

- ``span_only`` (and ``true``, its older spelling): span attributes, as JSON text;
- ``event_only``: the ``gen_ai.client.inference.operation.details`` log record of
  each model call, through the OpenTelemetry logs API, and nowhere on spans;
- ``span_and_event``: both;
- ``no_content``, unset or anything else: nowhere.

The log record carries the call's span attributes too (operation, provider,
models, finish reasons, tokens, ``error.type``) and the span's context, so a log
backend links it to the trace; its content attributes are structured values (lists
of objects), not JSON text, as the conventions give for events.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

from opentelemetry import trace
from opentelemetry._logs import Logger, LoggerProvider, LogRecord, get_logger
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from ..._version import __version__
from . import _genai_content as content

if TYPE_CHECKING:
    from opentelemetry.trace import Span
    from opentelemetry.util.types import AttributeValue

    from langhooks.models import ChatRequest

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "CAPTURE_MODES",
    "DETAILS_EVENT",
    "CaptureMode",
    "ContentCapture",
    "request_content",
]

#: The environment variable that chooses where message content goes.
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Where message content goes (see the module docstring).
CaptureMode: TypeAlias = Literal[
    "no_content", "span_only", "event_only", "span_and_event"
]
CAPTURE_MODES: Final[tuple[CaptureMode, ...]] = get_args(CaptureMode)
#: The log record's event name: one per model call, with its content.
DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"

_log: Final = logging.getLogger("langhooks.integrations.opentelemetry")


def _from_environment() -> CaptureMode:
    """The mode the environment variable asks for (``true`` is ``span_only``)."""
    value = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower()
    if value == "true":
        return "span_only"
    for mode in CAPTURE_MODES:
        if value == mode:
            return mode
    if value and value != "false":
        _log.warning(
            "%s=%r is not one of %s (or true): no message content is recorded",
            CAPTURE_CONTENT_ENV,
            value,
            ", ".join(CAPTURE_MODES),
        )
    return "no_content"


def _mode(capture_content: object) -> CaptureMode:
    """The mode for the handler's ``capture_content`` argument.

    Raises:
        TypeError: neither a bool nor one of ``CAPTURE_MODES``.
    """
    if capture_content is True:
        return "span_only"
    if capture_content is False:
        return _from_environment()
    for mode in CAPTURE_MODES:
        if capture_content == mode:
            return mode
    raise TypeError(
        f"capture_content must be True, False or one of {list(CAPTURE_MODES)}, got "
        f"{capture_content!r}"
    )


def _structured(text: str) -> Any:
    """A JSON text attribute as the structured value a log record holds."""
    return json.loads(text)


def request_content(request: ChatRequest) -> dict[str, str]:
    """The request's content attributes, as JSON text (for a span)."""
    attributes: dict[str, str] = {
        gen_ai.GEN_AI_INPUT_MESSAGES: content.input_messages(request.messages)
    }
    system = content.system_instructions(request.messages)
    if system is not None:
        attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS] = system
    tools = content.tool_definitions(request.tools)
    if tools is not None:
        attributes[gen_ai.GEN_AI_TOOL_DEFINITIONS] = tools
    return attributes


class ContentCapture:
    """Where one handler records content, and its logger for the events.

    Args:
        capture_content: True (``span_only``), one of ``CAPTURE_MODES``, or False
            to follow the environment variable.
        logger_provider: where the log records go (default: the global provider).

    Raises:
        TypeError: a ``capture_content`` or ``logger_provider`` of the wrong kind.
    """

    __slots__ = ("_logger", "in_events", "mode", "on_spans")

    def __init__(
        self, capture_content: object, logger_provider: LoggerProvider | None
    ) -> None:
        if logger_provider is not None and not isinstance(
            logger_provider, LoggerProvider
        ):
            raise TypeError(
                f"logger_provider must be an opentelemetry LoggerProvider, got "
                f"{logger_provider!r}"
            )
        self.mode: Final = _mode(capture_content)
        #: Content goes on spans as attributes.
        self.on_spans: Final = self.mode in ("span_only", "span_and_event")
        #: Content goes into the operation-details log record.
        self.in_events: Final = self.mode in ("event_only", "span_and_event")
        self._logger: Final[Logger] = get_logger(
            "langhooks", __version__, logger_provider
        )

    def emit(
        self,
        span: Span,
        attributes: Mapping[str, AttributeValue],
        content_attributes: Mapping[str, str],
    ) -> None:
        """Emit a model call's operation-details record in ``span``'s context
        (called only when ``in_events``).

        Args:
            span: the call's ``chat`` span (its context links the record).
            attributes: the call's span attributes (no content).
            content_attributes: its content attributes, as JSON text.
        """
        record: dict[str, Any] = dict(attributes)
        for key, text in content_attributes.items():
            record[key] = _structured(text)
        self._logger.emit(
            LogRecord(
                event_name=DETAILS_EVENT,
                attributes=record,
                context=trace.set_span_in_context(span),
            )
        )

"""One description per chain and stream event: the fields its observers show.

A row names, for each event of ``ChainCallbackHandler`` and
``StreamingChatResponseHandler``, the fields worth showing: the name observers give
the field, the event argument it comes from (and the attribute of that argument),
and whether it is *content* (words from a model, a tool or a user: prompts,
answers, tool arguments and results, error and progress text) or *data* (names,
ids, numbers, statuses). Content is what ``LoggingHandler`` leaves out of its
records; data is what every observer may show.

Adding an event is its spec method and one row here; ``tests/test_event_fields.py``
fails for an event of either spec without a row, or a row naming an argument its
event does not have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["CHAIN_FIELDS", "STREAM_FIELDS", "Field", "call_index"]


@dataclass(frozen=True, slots=True)
class Field:
    """One field an event carries.

    Attributes:
        name: the name observers give it (``tool``, ``tool_call_id``, ``status``).
        param: the event argument it comes from (the spec method's parameter).
        attribute: the attribute of that argument, or "" for the argument itself.
        content: True for content (a model's, a tool's or a user's words), which
            logging leaves out; False for names, ids, numbers and statuses.
    """

    name: str
    param: str
    attribute: str = ""
    content: bool = False

    def of(self, arguments: Mapping[str, object]) -> object:
        """The field's value among an event's ``arguments`` (by parameter name)."""
        value = arguments[self.param]
        return getattr(value, self.attribute) if self.attribute else value


def _data(name: str, param: str, attribute: str = "") -> Field:
    return Field(name, param, attribute)


def _content(name: str, param: str, attribute: str = "") -> Field:
    return Field(name, param, attribute, content=True)


_CALL: Final = (_data("tool", "call", "name"), _data("tool_call_id", "call", "call_id"))
_MESSAGE: Final = (
    _data("role", "message", "role"),
    _content("text", "message", "text"),
)

#: The chain events' fields, in the spec's order.
CHAIN_FIELDS: Final[Mapping[str, tuple[Field, ...]]] = {
    "on_run_start": (),
    "on_llm_call_start": (_data("model", "model"), _content("request", "request")),
    "on_llm_call_complete": (
        _data("finish_reason", "response", "finish_reason"),
        _data("usage", "response", "token_usage"),
        _content("message", "response", "message"),
    ),
    "on_llm_new_delta": (_content("deltas", "deltas"),),
    "on_llm_new_message": _MESSAGE,
    "on_llm_ratelimit_info": (_data("info", "info"),),
    "on_llm_token_usage": (
        _data("input_tokens", "usage", "input_tokens"),
        _data("output_tokens", "usage", "output_tokens"),
    ),
    "on_llm_response_headers": (_data("headers", "headers"),),
    "on_message_processed": _MESSAGE,
    "on_message_processing_error": _MESSAGE,
    "on_error_message_created": _MESSAGE,
    "on_tool_call_identified": (*_CALL, _data("display_text", "tool", "display_text")),
    "on_tool_call_review": (
        *_CALL,
        _content("arguments", "call", "arguments"),
        _data("human_decision", "review", "human_decision"),
    ),
    "on_tool_execution_started": (*_CALL, _content("arguments", "call", "arguments")),
    "on_tool_pre_execution": _CALL,
    "on_tool_progress": (
        *_CALL,
        _data("progress", "progress", "progress"),
        _data("total", "progress", "total"),
        _content("message", "progress", "message"),
    ),
    "on_tool_execution_completed": (*_CALL, _content("result", "result", "text")),
    "on_tool_execution_failed": (*_CALL, _content("result", "result", "text")),
    "on_tool_execution_exception": (*_CALL, _content("exception", "exception")),
    "on_tool_interrupted": (_data("results", "results"),),
    "on_tool_response_created": (_data("results", "message", "tool_results"),),
    "on_llm_error": (_data("error_type", "error", "type"), _content("error", "error")),
    "on_llm_retry": (
        _data("error_type", "error", "type"),
        _data("retry_delay", "delay"),
    ),
    "on_retries_exceeded": (),
    "on_error": (_data("error_type", "error", "type"), _content("error", "error")),
    "on_run_complete": (_data("status", "result", "status"),),
}

#: The stream events' fields, in the spec's order.
STREAM_FIELDS: Final[Mapping[str, tuple[Field, ...]]] = {
    "on_partial_response": (_content("text", "partial", "text"),),
    "on_partial_thinking": (_content("text", "partial", "text"),),
    "on_partial_tool_call": (
        _data("tool", "partial", "name"),
        _content("arguments", "partial", "partial_arguments"),
    ),
    "on_complete_tool_call": (
        _data("index", "complete", "index"),
        _data("tool", "complete", "tool_call"),
    ),
    "on_unmapped_raw_event": (_data("raw_event", "raw_event"),),
    "on_complete_response": (
        _data("finish_reason", "response", "finish_reason"),
        _data("usage", "response", "token_usage"),
    ),
    "on_error": (_content("error", "error"),),
}


def call_index(event: str, params: tuple[str, ...]) -> int | None:
    """The position of the tool call among a chain event's ``params``, or None for
    an event about no one call (the rows' ``tool`` field from ``call``)."""
    fields = CHAIN_FIELDS.get(event, ())
    if any(field.name == "tool" and field.param == "call" for field in fields):
        return params.index("call")
    return None

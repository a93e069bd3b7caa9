"""Value types shared by streams, handlers and the runtime.

Every type here is a frozen, keyword-only attrs class: build a changed copy with
``attrs.evolve``. Bad values fail at construction with a ``ValueError`` or
``TypeError`` that names the field.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypeAlias, get_args

import attrs
from typing_extensions import override

from ._validators import (
    count,
    instance_of,
    non_empty_str,
    one_of,
    optional_str,
)
from ._values import (
    _EMPTY,
    _T,
    _frozen_mapping,
    _metadata,
    _raw,
    _reduce,
    _value_eq,
    _value_hash,
    _value_repr,
)

__all__ = [
    "ChatResponse",
    "CompleteToolCall",
    "ContentPart",
    "ContentType",
    "ErrorType",
    "FinishReason",
    "LangHooksError",
    "Message",
    "MessageDelta",
    "MessageStatus",
    "PartialResponse",
    "PartialThinking",
    "PartialToolCall",
    "Role",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
    "trusted_partial_response",
]

ContentType: TypeAlias = Literal["text", "thinking", "image_url", "file", "unsupported"]
Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
MessageStatus: TypeAlias = Literal[
    "complete", "length", "cancelled", "content_filtered", "stream_error"
]
ErrorType: TypeAlias = Literal[
    "rate_limited",
    "overloaded",
    "timeout",
    "connection",
    "authentication",
    "invalid_request",
    "stream_error",
    "protocol_error",
    "empty_response",
    "delta_conversion_failed",
    "exceeded_failure_count",
    "exceeded_max_runs",
    "all_fallbacks_failed",
    "handler_error",
    "cancelled",
    "conflict",
]

_CONTENT_TYPES: Final = frozenset(get_args(ContentType))
_ROLES: Final = frozenset(get_args(Role))
_STATUSES: Final = frozenset(get_args(MessageStatus))
_ERROR_TYPES: Final = frozenset(get_args(ErrorType))
_RETRYABLE_TYPES: Final = frozenset(
    {"rate_limited", "overloaded", "timeout", "connection"}
)
# Providers reject other tool names (OpenAI: ^[a-zA-Z0-9_-]{1,64}$).


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ContentPart:
    """One part of a message's content.

    Attributes:
        type: "text", "thinking", "image_url", "file" or "unsupported".
        content: the text, or the URL / reference for media parts.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    type: ContentType = attrs.field(validator=one_of(_CONTENT_TYPES))
    content: str = attrs.field(validator=instance_of(str))

    @classmethod
    def text(cls, content: str) -> ContentPart:
        """A text part."""
        return cls(type="text", content=content)

    @classmethod
    def thinking(cls, content: str) -> ContentPart:
        """A thinking (reasoning) part."""
        return cls(type="thinking", content=content)


def _tuple_of(value: object, kind: type[_T], field: str, what: str) -> tuple[_T, ...]:
    """``value`` (an iterable of ``kind``) as a tuple; else a TypeError saying
    ``{field} must be {what}``."""
    # A mapping iterates its keys: name the mapping, not a key's type.
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{field} must be {what}, got {type(value).__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(
                f"{field} must be {what}, got {type(value).__name__} of "
                f"{type(item).__name__}"
            )
    return items


def _content(value: str | Iterable[ContentPart]) -> tuple[ContentPart, ...]:
    if isinstance(value, str):
        return (ContentPart.text(value),) if value else ()
    return _tuple_of(value, ContentPart, "content", "a str or ContentParts")


def _arguments(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(
            f"arguments must be a mapping (parsed JSON object), got "
            f"{type(value).__name__}"
        )
    for key in value:
        if not isinstance(key, str):
            raise TypeError(
                f"arguments must be a JSON object: its keys must be str, got the "
                f"{type(key).__name__} key {key!r}"
            )
    return dict(value)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolCall:
    """A model's request to run a tool.

    Attributes:
        call_id: the provider's id for the call, echoed back with the result.
        name: the tool's name.
        arguments: the parsed JSON arguments.
        index: the call's position in the model's message.
        display_text: a human-readable label for the call, if any.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    call_id: str = attrs.field(validator=non_empty_str)
    name: str = attrs.field(validator=non_empty_str)
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=_arguments)
    index: int = attrs.field(default=0, validator=count)
    display_text: str | None = attrs.field(default=None, validator=optional_str)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolResult:
    """What running a tool call produced.

    Attributes:
        tool_call_id: the ``call_id`` of the call this answers.
        name: the tool's name.
        content: the result sent to the model (a str is converted to a text part).
        display_text: a human-readable label, if any.
        is_error: the tool failed; the content says why.
        is_interrupt: the call was interrupted for a human; see ``interrupt_data``.
        interrupt_data: data for whoever resumes the run. Never sent to a model.
        processed_content: a structured value the tool returned beside its content.
        exception: the exception the tool raised, if any. Never sent to a model.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    tool_call_id: str = attrs.field(validator=non_empty_str)
    name: str = attrs.field(validator=non_empty_str)
    content: tuple[ContentPart, ...] = attrs.field(default=(), converter=_content)
    display_text: str | None = attrs.field(default=None, validator=optional_str)
    is_error: bool = False
    is_interrupt: bool = False
    interrupt_data: Mapping[str, Any] | None = None
    processed_content: object = None
    exception: BaseException | None = attrs.field(default=None, repr=False)

    @property
    def text(self) -> str:
        """The text parts of ``content``, joined."""
        return "".join(p.content for p in self.content if p.type == "text")


def _tool_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]:
    return _tuple_of(value, ToolCall, "tool_calls", "ToolCalls")


def _tool_results(value: Iterable[ToolResult]) -> tuple[ToolResult, ...]:
    return _tuple_of(value, ToolResult, "tool_results", "ToolResults")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Message:
    """A chat message.

    Attributes:
        role: "system", "user", "assistant" or "tool".
        content: the content parts (a str is converted to one text part).
        tool_calls: the calls an assistant message asks for.
        tool_results: the results a tool message carries.
        status: "complete", "length", "cancelled", "content_filtered" or
            "stream_error".
        metadata: provider details (response id, headers, signatures, ...).
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    role: Role = attrs.field(validator=one_of(_ROLES))
    content: tuple[ContentPart, ...] = attrs.field(default=(), converter=_content)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tool_calls)
    tool_results: tuple[ToolResult, ...] = attrs.field(
        default=(), converter=_tool_results
    )
    status: MessageStatus = attrs.field(default="complete", validator=one_of(_STATUSES))
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_metadata)

    __reduce__ = _reduce

    def __attrs_post_init__(self) -> None:
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"tool_calls need role 'assistant', got {self.role!r}")
        if self.tool_results and self.role != "tool":
            raise ValueError(f"tool_results need role 'tool', got {self.role!r}")

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message."""
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str, tool_calls: Sequence[ToolCall] = ()) -> Message:
        """An assistant message, optionally asking for tool calls."""
        return cls(role="assistant", content=text, tool_calls=tool_calls)

    @classmethod
    def tool(cls, results: Sequence[ToolResult]) -> Message:
        """A tool message carrying the results of a batch of tool calls."""
        return cls(role="tool", tool_results=results)

    @property
    def text(self) -> str:
        """The text parts, joined."""
        return "".join(p.content for p in self.content if p.type == "text")

    @property
    def thinking(self) -> str:
        """The thinking parts, joined."""
        return "".join(p.content for p in self.content if p.type == "thinking")


def _partial_text(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(
            f"{attribute.name} must be a non-empty str (a stream never delivers an "
            f"empty partial), got {value!r}"
        )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialResponse:
    """A streamed piece of response text (never empty)."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    text: str = attrs.field(validator=_partial_text)


def trusted_partial_response(text: str) -> PartialResponse:
    """``PartialResponse(text=text)`` without re-running its validator.

    For the stream drivers' hot path, where an adapter has already checked that
    ``text`` is a non-empty str and this is the one object built per chunk
    (validation doubles its cost). Kept beside the class so a new field cannot be
    missed here.
    """
    partial = object.__new__(PartialResponse)
    object.__setattr__(partial, "text", text)
    return partial


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialThinking:
    """A streamed piece of thinking (reasoning) text (never empty)."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    text: str = attrs.field(validator=_partial_text)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PartialToolCall:
    """A streamed fragment of a tool call's arguments.

    Attributes:
        index: the call's position; all fragments of one call share it.
        id: the call id, when the provider has sent it (it may be None).
        name: the tool's name.
        partial_arguments: the next piece of the JSON arguments text (may be empty
            on the fragment that announces the call).
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    index: int = attrs.field(validator=count)
    id: str | None = attrs.field(validator=optional_str)
    name: str = attrs.field(validator=non_empty_str)
    partial_arguments: str = attrs.field(validator=instance_of(str))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CompleteToolCall:
    """A tool call whose arguments have all arrived and parsed."""

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    index: int = attrs.field(validator=count)
    tool_call: ToolCall = attrs.field(validator=instance_of(ToolCall))


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TokenUsage:
    """Token counts reported by a provider.

    Attributes:
        input_tokens: prompt tokens.
        output_tokens: completion tokens (thinking included).
        raw: the provider's own usage object, for details such as cached tokens.
        cumulative: the counts are running totals for the response so far (as
            Anthropic's ``message_delta`` reports them), so merging replaces.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    input_tokens: int = attrs.field(default=0, validator=count)
    output_tokens: int = attrs.field(default=0, validator=count)
    raw: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_raw)
    cumulative: bool = False

    __reduce__ = _reduce

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        """Merge a later report into this one.

        A cumulative ``other`` replaces the counts it carries (a zero count keeps
        this one's, since cumulative reports may omit input tokens); otherwise the
        counts are summed.
        """
        if not isinstance(other, TokenUsage):
            return NotImplemented
        if other.cumulative:
            return TokenUsage(
                input_tokens=other.input_tokens or self.input_tokens,
                output_tokens=other.output_tokens or self.output_tokens,
                raw={**self.raw, **other.raw},
                cumulative=True,
            )
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            raw={**self.raw, **other.raw},
            cumulative=self.cumulative,
        )


def _optional_status(
    _instance: Any, attribute: attrs.Attribute[Any], value: Any
) -> None:
    if value is not None and value not in _STATUSES:
        raise ValueError(
            f"{attribute.name} must be None or one of {sorted(_STATUSES)}, "
            f"got {value!r}"
        )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class MessageDelta:
    """One streamed increment of an assistant message, as chain handlers see it.

    Attributes:
        text: response text in this increment.
        thinking: thinking text in this increment.
        tool_call: a tool-call fragment, if this increment carries one.
        usage: token usage reported with this increment.
        status: the message's status when this increment ends it.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    text: str = attrs.field(default="", validator=instance_of(str))
    thinking: str = attrs.field(default="", validator=instance_of(str))
    tool_call: PartialToolCall | None = attrs.field(
        default=None,
        validator=instance_of(PartialToolCall, optional=True),
    )
    usage: TokenUsage | None = attrs.field(
        default=None,
        validator=instance_of(TokenUsage, optional=True),
    )
    status: MessageStatus | None = attrs.field(default=None, validator=_optional_status)

    def __attrs_post_init__(self) -> None:
        if not (
            self.text or self.thinking or self.tool_call or self.usage or self.status
        ):
            raise ValueError(
                "a MessageDelta must carry text, thinking, tool_call, usage or status"
            )


def trusted_text_delta(text: str, *, thinking: bool = False) -> MessageDelta:
    """``MessageDelta(text=text)`` (``thinking=text`` when ``thinking``) without
    re-running its validators.

    For a bridge's per-token path, where ``text`` is a non-empty str already (the
    validators double the cost of the one delta built per token). Kept beside the
    class so a new field cannot be missed here.
    """
    delta = object.__new__(MessageDelta)
    setattr_ = object.__setattr__
    setattr_(delta, "text", "" if thinking else text)
    setattr_(delta, "thinking", text if thinking else "")
    setattr_(delta, "tool_call", None)
    setattr_(delta, "usage", None)
    setattr_(delta, "status", None)
    return delta


class FinishReason(enum.StrEnum):
    """Why a model stopped generating.

    A ``str``: each member equals its value (``FinishReason.STOP == "stop"``) and
    ``json.dumps`` writes it as that string.
    """

    STOP = "stop"
    LENGTH = "length"
    TOOL_EXECUTION = "tool_execution"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ChatResponse:
    """A model's complete (or, when cancelled, partial) answer.

    Attributes:
        message: the assistant message.
        id: the provider's response id.
        model_name: the model that answered.
        token_usage: the usage the provider reported.
        finish_reason: why generation stopped.
        metadata: provider details; ``response_headers`` and ``ratelimit`` when
            the model saw them.
    """

    __repr__ = _value_repr
    __eq__ = _value_eq
    __hash__ = _value_hash

    message: Message = attrs.field(validator=instance_of(Message))
    id: str | None = attrs.field(default=None, validator=optional_str)
    model_name: str | None = attrs.field(default=None, validator=optional_str)
    token_usage: TokenUsage | None = attrs.field(
        default=None,
        validator=instance_of(TokenUsage, optional=True),
    )
    finish_reason: FinishReason | None = attrs.field(
        default=None,
        validator=instance_of(FinishReason, optional=True),
    )
    metadata: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_metadata)

    __reduce__ = _reduce


def _is_seconds(value: object) -> bool:
    """A finite non-negative int or float (NaN, infinity and bool are not durations)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 <= value < math.inf
    )


class LangHooksError(Exception):
    """An error from a model, a stream or the runtime, classified by ``type``.

    Args:
        type: what went wrong (see ``ErrorType``).
        message: a sentence for a person.
        original: the exception or provider error object behind it.
        retryable: whether trying again may succeed; by default true for
            rate_limited, overloaded, timeout and connection.
        retry_after: seconds the provider asked to wait, if it said.
        metadata: provider details such as ``response_headers``, ``ratelimit``
            and ``status_code``.

    Raises:
        ValueError: ``type`` is not a known error type.
    """

    type: ErrorType
    message: str
    original: object | None
    retryable: bool
    retry_after: float | None
    metadata: Mapping[str, Any]

    def __init__(
        self,
        type: ErrorType,
        message: str,
        *,
        original: object | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if type not in _ERROR_TYPES:
            raise ValueError(
                f"type must be one of {sorted(_ERROR_TYPES)}, got {type!r}"
            )
        if not isinstance(message, str):
            raise TypeError(f"message must be a str, got {message!r}")
        if retry_after is not None and not _is_seconds(retry_after):
            raise ValueError(
                f"retry_after must be a number of seconds >= 0 and finite, or None, "
                f"got {retry_after!r}"
            )
        if retryable is not None and not isinstance(retryable, bool):
            raise TypeError(f"retryable must be a bool or None, got {retryable!r}")
        super().__init__(type, message)
        self.type = type
        self.message = message
        self.original = original
        self.retryable = type in _RETRYABLE_TYPES if retryable is None else retryable
        self.retry_after = retry_after
        self.metadata = _frozen_mapping(metadata, "metadata")

    @override
    def __str__(self) -> str:
        return f"{self.type}: {self.message}"

    @override
    def __repr__(self) -> str:
        return f"LangHooksError({self.type!r}, {self.message!r})"

    @override
    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_error,
            (
                self.type,
                self.message,
                self.original,
                self.retryable,
                self.retry_after,
                dict(self.metadata),
            ),
        )


def _rebuild_error(
    type: ErrorType,
    message: str,
    original: object | None,
    retryable: bool,
    retry_after: float | None,
    metadata: Mapping[str, Any],
) -> LangHooksError:
    return LangHooksError(
        type,
        message,
        original=original,
        retryable=retryable,
        retry_after=retry_after,
        metadata=metadata,
    )


def message_tuple(value: Sequence[Message]) -> tuple[Message, ...]:
    """Validate and freeze a sequence of messages."""
    return _tuple_of(value, Message, "messages", "Messages")

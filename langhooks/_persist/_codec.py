"""JSON for langhooks' value types: hand-written encoders and decoders.

``encode(value)`` gives a dict of JSON types whose ``"type"`` key names the value's
class and whose ``"version"`` key is the schema version; fields follow, nested value
types as plain dicts (their class is known from the field). Fields that hold caller
data (tool arguments, metadata, custom context, ...) must already be JSON: anything
else is refused with the path to it, never turned into a string.

Why hand-written (not cattrs): the value types are few and fixed, the runtime
dependencies are attrs and typing-extensions only, and the contract asks for things a
generic converter does not give for free (a type tag beside a field named ``type``,
a schema version, the path to an unencodable value, JSON-only data fields). Written
out, each class is one small encoder and one decoder, and the hot path (an event
record per streamed token) does no reflection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .._core._chain_callbacks import (
    Allow,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)
from .._core._invocation import Invocation
from .._core._messages import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from .._core._tools import ToolProgress
from ..chain._decision import Decision
from ._codec_fields import (
    _d_call,
    _d_decision,
    _d_delta,
    _d_error,
    _d_invocation,
    _d_message,
    _d_part,
    _d_partial_call,
    _d_record,
    _d_response,
    _d_result,
    _d_usage,
    _data,
    _e_call,
    _e_delta,
    _e_error,
    _e_invocation,
    _e_message,
    _e_part,
    _e_partial_call,
    _e_record,
    _e_response,
    _e_result,
    _e_usage,
    _each,
    _nested,
    _str,
)
from ._jsondata import (
    MAX_DEPTH,
    Unencodable,
    json_data,
    json_text,
    parse_json,
)
from ._records import EventRecord

if TYPE_CHECKING:
    from ..chain._chain import LLMChain

__all__ = [
    "MAX_DEPTH",
    "SCHEMA_VERSION",
    "STATE_TAG",
    "check_version",
    "decode",
    "decode_fields",
    "decode_state",
    "dumps",
    "encode",
    "encode_fields",
    "encode_state",
    "is_value_type",
    "json_data",
    "json_text",
    "loads",
    "message_from_data",
    "parse_json",
]

#: The schema version ``encode`` writes; ``decode`` reads it and every older one.
SCHEMA_VERSION: Final[int] = 1

_T = TypeVar("_T")


# --- the registry -----------------------------------------------------------------

_Encoder = Callable[[Any], dict[str, Any]]
_Decoder = Callable[[Mapping[str, Any]], Any]

# class -> (tag, encoder); tag -> decoder. The tag is the public class name.
_ENCODERS: Final[dict[type, tuple[str, _Encoder]]] = {}
_DECODERS: Final[dict[str, _Decoder]] = {}


def _register(cls: type[_T], encoder: _Encoder, decoder: _Decoder) -> None:
    _ENCODERS[cls] = (cls.__name__, encoder)
    _DECODERS[cls.__name__] = decoder


_register(ContentPart, _e_part, _d_part)
_register(ToolCall, _e_call, _d_call)
_register(ToolResult, _e_result, _d_result)
_register(Message, _e_message, _d_message)
_register(MessageDelta, _e_delta, _d_delta)
_register(TokenUsage, _e_usage, _d_usage)
_register(
    FinishReason,
    lambda reason: {"value": reason.value},
    lambda data: FinishReason(data["value"]),
)
_register(ChatResponse, _e_response, _d_response)
_register(LangHooksError, _e_error, _d_error)
_register(Invocation, _e_invocation, _d_invocation)
_register(
    PartialResponse,
    lambda partial: {"text": partial.text},
    lambda data: PartialResponse(text=data["text"]),
)
_register(
    PartialThinking,
    lambda partial: {"text": partial.text},
    lambda data: PartialThinking(text=data["text"]),
)
_register(PartialToolCall, _e_partial_call, _d_partial_call)
_register(
    CompleteToolCall,
    lambda complete: {
        "index": complete.index,
        "tool_call": _nested(complete.tool_call, _e_call, "tool_call"),
    },
    lambda data: CompleteToolCall(
        index=data["index"], tool_call=_d_call(data["tool_call"])
    ),
)
_register(
    ToolProgress,
    lambda report: {
        "progress": report.progress,
        "total": report.total,
        "message": report.message,
    },
    lambda data: ToolProgress(data["progress"], data["total"], data["message"]),
)
_register(Allow, lambda _decision: {}, lambda _data: Allow())
_register(
    UpdateArguments,
    lambda decision: {"arguments": _data(decision.arguments, "arguments")},
    lambda data: UpdateArguments(data["arguments"]),
)
_register(
    Deny,
    lambda decision: {"reason": decision.reason},
    lambda data: Deny(data["reason"]),
)
_register(
    Interrupt,
    lambda decision: {
        "message": decision.message,
        "data": _data(decision.data, "data"),
    },
    lambda data: Interrupt(data["message"], data["data"]),
)
_register(
    ReviewContext,
    lambda review: {
        "human_decision": review.human_decision,
        "custom_context": _data(review.custom_context, "custom_context"),
    },
    lambda data: ReviewContext(
        human_decision=data["human_decision"], custom_context=data["custom_context"]
    ),
)
_register(
    Decision,
    lambda decision: {
        "kind": decision.kind,
        "arguments": _data(decision.arguments, "arguments"),
        "reason": decision.reason,
    },
    _d_decision,
)
_register(EventRecord, _e_record, _d_record)


# --- the public functions ---------------------------------------------------------


def is_value_type(kind: type) -> bool:
    """Whether ``encode`` takes instances of ``kind``."""
    return kind in _ENCODERS


def encode_fields(value: Any) -> tuple[str, dict[str, Any]]:
    """``value``'s tag and fields, without the tag and version keys.

    Raises:
        TypeError: ``value`` is not a value type, or a part of it is not JSON
            data (the message names its path).
        ValueError: a float in it is NaN or infinite.
    """
    entry = _ENCODERS.get(type(value))
    if entry is None:
        known = ", ".join(sorted(_DECODERS))
        raise TypeError(
            f"cannot encode a {type(value).__qualname__}: langhooks.codec encodes "
            f"its value types ({known})"
        )
    tag, encoder = entry
    try:
        return tag, encoder(value)
    except Unencodable as error:
        error.raise_public()
        raise  # pragma: no cover  # raise_public always raises


def encode(value: Any) -> dict[str, Any]:
    """``value`` as a dict of JSON types, tagged with its type and schema version.

    Args:
        value: a langhooks value type (``Message``, ``ToolCall``, ``EventRecord``,
            ...). ``ToolResult.exception`` and ``LangHooksError.original`` are not
            encoded (they are never sent anywhere); tuples in caller data come back
            as lists.

    Returns:
        ``{"type": <class name>, "version": SCHEMA_VERSION, <fields>...}``.

    Raises:
        TypeError: ``value`` is not a value type, or caller data in it (tool
            arguments, metadata, custom context, ...) is not JSON: the message
            names the path, as ``tool_calls[0].arguments["when"]``.
        ValueError: a float in caller data is NaN or infinite.
    """
    tag, fields = encode_fields(value)
    out: dict[str, Any] = {"type": tag, "version": SCHEMA_VERSION}
    out.update(fields)
    return out


def decode_fields(tag: str, data: Mapping[str, Any]) -> Any:
    """The value of class ``tag`` from its fields (no version check).

    Raises:
        ValueError: an unknown tag, or fields that do not make a valid value.
    """
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise ValueError(
            f"unknown type tag {tag!r}: langhooks.codec knows "
            f"{', '.join(sorted(_DECODERS))} (was it written by a newer langhooks?)"
        )
    try:
        return decoder(data)
    except KeyError as error:
        raise ValueError(
            f"not a valid encoded {tag}: the field {error} is missing"
        ) from None
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"not a valid encoded {tag}: {error}") from error


def check_version(data: Mapping[str, Any], what: str) -> None:
    """Check ``data["version"]`` is a schema version this code reads.

    Raises:
        ValueError: the version is missing, not an int, or newer than
            ``SCHEMA_VERSION``.
    """
    version = data.get("version")
    if type(version) is not int or version < 1:
        raise ValueError(
            f"{what} has no valid schema version (an int >= 1 under 'version'), "
            f"got {version!r}"
        )
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{what} has schema version {version}, newer than this langhooks reads "
            f"({SCHEMA_VERSION}): upgrade langhooks to read it"
        )


def decode(data: Mapping[str, Any]) -> Any:
    """The value ``encode`` made ``data`` from (equal to the original).

    Args:
        data: a dict as ``encode`` returns it (for instance from ``json.loads``).

    Returns:
        The value (a ``Message``, ``ToolCall``, ``EventRecord``, ...).

    Raises:
        TypeError: ``data`` is not a mapping.
        ValueError: an unknown type tag, a schema version newer than this code
            reads, or fields that do not make a valid value.
    """
    if not isinstance(data, Mapping):
        raise TypeError(
            f"decode takes a mapping as encode returns it, got {type(data).__name__}"
        )
    tag = data.get("type")
    if not isinstance(tag, str):
        raise ValueError(f"no type tag (a str under 'type') in {_preview(data)}")
    check_version(data, f"the encoded {tag}")
    return decode_fields(tag, data)


def _preview(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."


def dumps(value: Any) -> str:
    """``encode(value)`` as JSON text (ASCII: lone surrogates are escaped, so any
    str round-trips).

    Raises:
        TypeError: as ``encode``.
        ValueError: as ``encode``; also an int too long for ``int`` to ``str``
            conversion (see ``sys.set_int_max_str_digits``).
    """
    return json_text(encode(value))


def loads(text: str | bytes) -> Any:
    """The value ``dumps`` wrote as ``text``.

    Raises:
        ValueError: the text is not JSON (or nests too deeply for Python's JSON
            parser), or as ``decode``.
        TypeError: the JSON is not an object.
    """
    return decode(parse_json(text))


# --- messages as data, for run state and event records ------------------------------


def message_from_data(data: Mapping[str, Any]) -> Message:
    """The message whose fields (as ``encode_fields`` gives them) are ``data``.

    Raises:
        ValueError: fields that do not make a valid message.
    """
    return decode_fields("Message", data)  # type: ignore[no-any-return]


# --- run state --------------------------------------------------------------------

#: The tag of ``LLMChain.to_state()``'s dict.
STATE_TAG: Final = "LLMChainState"


def encode_state(chain: LLMChain) -> dict[str, Any]:
    """``chain.to_state()``: what a run needs to go on elsewhere, as JSON types.

    Raises:
        TypeError: caller data in the chain is not JSON (the message names its
            path, as ``messages[3].tool_calls[0].arguments["when"]``).
        ValueError: a float in caller data is NaN or infinite.
    """
    current = chain.invocation
    try:
        return {
            "type": STATE_TAG,
            "version": SCHEMA_VERSION,
            "messages": _each(chain.messages, _e_message, "messages"),
            "custom_context": _data(chain.custom_context, "custom_context"),
            "max_retry_count": chain.max_retry_count,
            "current_failure_count": chain.current_failure_count,
            "invocation": _nested(current, _e_invocation, "invocation"),
            "tools": [tool.name for tool in chain.tools],
            "pending_tool_calls": _each(
                chain.pending_tool_calls, _e_call, "pending_tool_calls"
            ),
        }
    except Unencodable as error:
        error.raise_public()
        raise  # pragma: no cover  # raise_public always raises


def decode_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """The saved fields of ``state`` as ``LLMChain`` keyword arguments (messages,
    custom_context, max_retry_count, current_failure_count, invocation), and the
    saved tool names and pending calls under ``"tools"`` and
    ``"pending_tool_calls"``.

    Raises:
        TypeError: ``state`` is not a mapping.
        ValueError: not a saved chain, a newer schema version, or fields that do
            not make valid values (the message names the first bad one).
    """
    if not isinstance(state, Mapping):
        raise TypeError(
            f"from_state takes the dict chain.to_state() returned, got "
            f"{type(state).__name__}"
        )
    if state.get("type") != STATE_TAG:
        raise ValueError(
            f"not a saved chain: the type tag is {state.get('type')!r}, not "
            f"{STATE_TAG!r} (save one with chain.to_state())"
        )
    check_version(state, "the saved chain")
    try:
        fields = {
            "custom_context": state["custom_context"],
            "max_retry_count": state["max_retry_count"],
            "current_failure_count": state["current_failure_count"],
            "tools": [_str(name, "tools[]") for name in state["tools"]],
        }
        current = state["invocation"]
        fields["invocation"] = None if current is None else _d_invocation(current)
    except KeyError as error:
        raise ValueError(f"not a valid saved chain: {error} is missing") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"not a valid saved chain: {error}") from error
    fields["messages"] = _decode_each(state, "messages", _d_message)
    fields["pending_tool_calls"] = _decode_each(state, "pending_tool_calls", _d_call)
    return fields


def _decode_each(
    state: Mapping[str, Any], field: str, decoder: Callable[[Any], _T]
) -> list[_T]:
    items = state.get(field)
    if not isinstance(items, list):
        raise ValueError(f"not a valid saved chain: {field} must be a list")
    out: list[_T] = []
    for position, item in enumerate(items):
        try:
            out.append(decoder(item))
        except KeyError as error:
            raise ValueError(
                f"not a valid saved chain: {field}[{position}] has no {error}"
            ) from None
        except (TypeError, ValueError, AttributeError) as error:
            raise ValueError(
                f"not a valid saved chain: {field}[{position}]: {error}"
            ) from error
    return out

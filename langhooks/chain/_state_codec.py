"""The chain's saved state as JSON types: what ``LLMChain.to_state`` writes and
``LLMChain.from_state`` reads.

The runtime imports it plainly, on the first save or load (so that importing the
runtime does not load the codec): the values a state holds have their codec in
``_core._json_messages``, beside their types, which ``langhooks.codec`` uses too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from .._core._json_fields import (
    SCHEMA_VERSION,
    check_version,
    data_field,
    each_field,
    nested_field,
    str_field,
)
from .._core._json_messages import (
    decode_call,
    decode_invocation,
    decode_message,
    encode_call,
    encode_invocation,
    encode_message,
)
from .._core._jsondata import Unencodable

if TYPE_CHECKING:
    from .._core._messages import Message
    from ._snapshot import ChainSnapshot

__all__ = ["STATE_TAG", "decode_state", "encode_state"]

_T = TypeVar("_T")

#: The tag of ``LLMChain.to_state()``'s dict.
STATE_TAG: Final = "LLMChainState"


def encode_state(chain: ChainSnapshot, since: int = 0) -> dict[str, Any]:
    """``chain.to_state()``: what a run needs to go on elsewhere, as JSON types
    (with the messages from position ``since`` on: ``chain.state_since``).

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
            "messages": _messages_from(chain.messages, since),
            "custom_context": data_field(chain.custom_context, "custom_context"),
            "max_retry_count": chain.max_retry_count,
            "current_failure_count": chain.current_failure_count,
            "invocation": nested_field(current, encode_invocation, "invocation"),
            "tools": [tool.name for tool in chain.tools],
            "pending_tool_calls": each_field(
                chain.pending_tool_calls, encode_call, "pending_tool_calls"
            ),
        }
    except Unencodable as error:
        error.raise_public()
        raise  # pragma: no cover  # raise_public always raises


def _messages_from(messages: Sequence[Message], since: int) -> list[Any]:
    # each_field for the messages from ``since`` on, the path naming their
    # positions in the whole conversation.
    out: list[Any] = []
    try:
        for position in range(since, len(messages)):
            out.append(encode_message(messages[position]))
    except Unencodable as error:
        error.path.append(f"[{since + len(out)}]")
        error.path.append(".messages")
        raise
    return out


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
            "tools": [str_field(name, "tools[]") for name in state["tools"]],
        }
        current = state["invocation"]
        fields["invocation"] = None if current is None else decode_invocation(current)
    except KeyError as error:
        raise ValueError(f"not a valid saved chain: {error} is missing") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"not a valid saved chain: {error}") from error
    fields["messages"] = _decode_each(state, "messages", decode_message)
    fields["pending_tool_calls"] = _decode_each(
        state, "pending_tool_calls", decode_call
    )
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

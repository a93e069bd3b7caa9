"""Message processors: check or transform a model's answer before the chain keeps it.

A message processor is a function ``(chain, message) -> Message | Reject``. The
runtime runs a chain's processors in order on each complete assistant answer (one
without tool calls) before it is added. Each processor receives the message as the
previous one left it and returns it (possibly changed), or ``Reject(reply)``: the
answer is kept in the conversation as rejected, ``reply`` is sent back to the model
as a user message, and the run counts a failure (Elixir LangChain's
``message_processors``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeAlias

import attrs

from .._core._messages import Message

__all__ = [
    "PROCESSED_CONTENT",
    "MessageProcessor",
    "Reject",
    "json_processor",
    "processor_tuple",
]

#: The metadata key where ``json_processor`` puts the parsed value.
PROCESSED_CONTENT: Final = "processed_content"
# The first fenced block, with or without a language tag (```json ... ```).
_FENCE: Final = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.DOTALL | re.I)


def _reply(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{attribute.name} must be a non-empty str (what the model is told "
            f"about its answer), got {value!r}"
        )


@attrs.frozen
class Reject:
    """A message processor's verdict that the model's answer is not acceptable.

    The runtime keeps the answer (``on_message_processing_error``), adds ``reply``
    as a user message (``on_error_message_created``) and counts a failure; the
    default mode then asks the model again.

    Attributes:
        reply: what the model is told: the problem, and what to do instead.
    """

    reply: str = attrs.field(validator=_reply)


MessageProcessor: TypeAlias = Callable[[Any, Message], "Message | Reject"]
"""``(chain, message) -> Message | Reject``: keep (a changed) message, or reject it.

The chain is the runtime's own (an ``LLMChain``): a processor may annotate it so."""


def processor_tuple(values: Iterable[MessageProcessor]) -> tuple[MessageProcessor, ...]:
    """The processors as a tuple, each checked to be callable.

    Raises:
        TypeError: an item is not callable.
    """
    processors = tuple(values)
    for processor in processors:
        if not callable(processor):
            raise TypeError(
                f"message_processors must be functions (chain, message) -> "
                f"Message | Reject, got {processor!r}"
            )
    return processors


def json_processor(*, fenced: bool = False) -> MessageProcessor:
    """A processor that requires the answer to be JSON and parses it.

    The parsed value goes to ``message.metadata["processed_content"]``; the text is
    kept as it is. Text that does not parse is rejected with a reply quoting the
    parser's complaint, so the model can correct itself.

    Args:
        fenced: parse the first fenced code block (three backticks, tagged
            ``json`` or not) when the answer has one, so that the model may
            comment around it; without a fence the whole text is parsed.

    Returns:
        The processor, for ``LLMChain(message_processors=[...])``.
    """

    def process_json(chain: object, message: Message) -> Message | Reject:
        text, where = message.text, "your answer"
        found = _FENCE.search(text) if fenced else None
        if found is not None:
            text, where = found.group(1), "the ```json block of your answer"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            return Reject(
                f"ERROR: {where} is not valid JSON: {error.msg} (line {error.lineno}, "
                f"column {error.colno}). Answer again with valid JSON only."
            )
        metadata = {**message.metadata, PROCESSED_CONTENT: value}
        return attrs.evolve(message, metadata=metadata)

    return process_json

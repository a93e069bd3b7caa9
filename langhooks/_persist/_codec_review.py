"""The codec of tool review: the reviewers' decisions, what a reviewer is told, and
a human's decision; each type's decoder, and their rows of the codec's table (their
fields: see ``_core._codec_rows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._chain_callbacks import (
    Allow,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)
from .._core._codec_rows import DATA, OPT_STR, SCALAR, STR, ValueCodec
from .._core._json_fields import mapping_or_none
from ..chain._decision import Decision

__all__ = ["CODECS"]


def decode_allow(_data: Mapping[str, Any]) -> Allow:
    return Allow()


def decode_update(data: Mapping[str, Any]) -> UpdateArguments:
    return UpdateArguments(data["arguments"])


def decode_deny(data: Mapping[str, Any]) -> Deny:
    return Deny(data["reason"])


def decode_interrupt(data: Mapping[str, Any]) -> Interrupt:
    return Interrupt(data["message"], data["data"])


def decode_review(data: Mapping[str, Any]) -> ReviewContext:
    return ReviewContext(
        human_decision=data["human_decision"], custom_context=data["custom_context"]
    )


def decode_decision(data: Mapping[str, Any]) -> Decision:
    return Decision(
        kind=data["kind"],
        arguments=mapping_or_none(data["arguments"], "arguments"),
        reason=data["reason"],
    )


#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = (
    ValueCodec(Allow, decode_allow),
    ValueCodec(UpdateArguments, decode_update, ("arguments", DATA)),
    ValueCodec(Deny, decode_deny, ("reason", SCALAR)),
    ValueCodec(Interrupt, decode_interrupt, ("message", SCALAR), ("data", DATA)),
    ValueCodec(
        ReviewContext,
        decode_review,
        ("human_decision", SCALAR),
        ("custom_context", DATA),
    ),
    ValueCodec(
        Decision,
        decode_decision,
        ("kind", STR),
        ("arguments", DATA),
        ("reason", OPT_STR),
    ),
)

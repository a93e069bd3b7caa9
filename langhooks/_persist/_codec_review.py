"""The codec of tool review: the reviewers' decisions, what a reviewer is told, and
a human's decision; each type's encoder beside its decoder, and their rows of the
codec's table.
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
from .._core._json_fields import ValueCodec, data_field, mapping_or_none
from ..chain._decision import Decision

__all__ = ["CODECS"]


def encode_allow(_decision: Allow) -> dict[str, Any]:
    return {}


def decode_allow(_data: Mapping[str, Any]) -> Allow:
    return Allow()


def encode_update(decision: UpdateArguments) -> dict[str, Any]:
    return {"arguments": data_field(decision.arguments, "arguments")}


def decode_update(data: Mapping[str, Any]) -> UpdateArguments:
    return UpdateArguments(data["arguments"])


def encode_deny(decision: Deny) -> dict[str, Any]:
    return {"reason": decision.reason}


def decode_deny(data: Mapping[str, Any]) -> Deny:
    return Deny(data["reason"])


def encode_interrupt(decision: Interrupt) -> dict[str, Any]:
    return {"message": decision.message, "data": data_field(decision.data, "data")}


def decode_interrupt(data: Mapping[str, Any]) -> Interrupt:
    return Interrupt(data["message"], data["data"])


def encode_review(review: ReviewContext) -> dict[str, Any]:
    return {
        "human_decision": review.human_decision,
        "custom_context": data_field(review.custom_context, "custom_context"),
    }


def decode_review(data: Mapping[str, Any]) -> ReviewContext:
    return ReviewContext(
        human_decision=data["human_decision"], custom_context=data["custom_context"]
    )


def encode_decision(decision: Decision) -> dict[str, Any]:
    return {
        "kind": decision.kind,
        "arguments": data_field(decision.arguments, "arguments"),
        "reason": decision.reason,
    }


def decode_decision(data: Mapping[str, Any]) -> Decision:
    return Decision(
        kind=data["kind"],
        arguments=mapping_or_none(data["arguments"], "arguments"),
        reason=data["reason"],
    )


#: This concept's rows of the codec's table.
CODECS: Final[tuple[ValueCodec, ...]] = (
    (Allow, encode_allow, decode_allow),
    (UpdateArguments, encode_update, decode_update),
    (Deny, encode_deny, decode_deny),
    (Interrupt, encode_interrupt, decode_interrupt),
    (ReviewContext, encode_review, decode_review),
    (Decision, encode_decision, decode_decision),
)

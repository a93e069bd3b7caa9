"""Chain handler interfaces, review decisions and the review context."""

from __future__ import annotations

import inspect
from typing import Any, get_args

import attrs
import pytest

from langhooks import (
    Allow,
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    ChainEventName,
    Deny,
    Interrupt,
    ReviewContext,
    UpdateArguments,
)

EVENTS = sorted(get_args(ChainEventName))
"""Every chain event, from the public ``Literal`` that ``filtered`` takes."""


def _arguments_for(method: Any) -> list[object]:
    """Placeholder positional arguments for a bound event method."""
    return [object()] * len(inspect.signature(method).parameters)


class TestDecisions:
    def test_allow(self) -> None:
        """Allow carries nothing; two are equal."""
        assert Allow() == Allow()

    def test_update_arguments_copies(self) -> None:
        """UpdateArguments keeps a copy of the new arguments."""
        given = {"q": "x"}
        decision = UpdateArguments(given)
        given["q"] = "y"
        assert decision.arguments == {"q": "x"}

    def test_update_arguments_must_be_mapping(self) -> None:
        """Arguments that are not a mapping fail naming the field."""
        with pytest.raises(TypeError, match="arguments must be a mapping"):
            UpdateArguments(5)  # type: ignore[arg-type]

    def test_deny_reason_must_be_str(self) -> None:
        """A Deny needs a str reason for the model."""
        assert Deny("not allowed").reason == "not allowed"
        with pytest.raises(TypeError, match="reason"):
            Deny(None)  # type: ignore[arg-type]

    def test_interrupt(self) -> None:
        """An Interrupt carries a message and read-only data."""
        decision = Interrupt("approve the transfer?", data={"amount": 5})
        assert (decision.message, decision.data) == (
            "approve the transfer?",
            {"amount": 5},
        )
        assert Interrupt("m").data == {}
        with pytest.raises(TypeError):
            decision.data["amount"] = 6  # type: ignore[index]

    def test_interrupt_validation(self) -> None:
        """A non-str message or non-mapping data fails naming the field."""
        with pytest.raises(TypeError, match="message"):
            Interrupt(1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="data must be a mapping"):
            Interrupt("m", data=[1])  # type: ignore[arg-type]

    def test_decisions_frozen(self) -> None:
        """Decisions are immutable values."""
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            Deny("x").reason = "y"  # type: ignore[misc]


class TestReviewContext:
    def test_defaults(self) -> None:
        """No human decision and an empty custom context by default."""
        review = ReviewContext()
        assert (review.human_decision, review.custom_context) == (None, {})

    @pytest.mark.parametrize("decision", ["approve", "edit"])
    def test_human_decisions(self, decision: Any) -> None:
        """approve and edit are the human decisions a resumed run reports."""
        assert ReviewContext(human_decision=decision).human_decision == decision

    def test_unknown_human_decision_rejected(self) -> None:
        """Any other human decision fails naming the field."""
        with pytest.raises(ValueError, match="human_decision"):
            ReviewContext(human_decision="reject")  # type: ignore[arg-type]

    def test_custom_context(self) -> None:
        """custom_context is a read-only copy; a non-mapping names the field."""
        given = {"user": "ada"}
        review = ReviewContext(custom_context=given)
        given["user"] = "bob"
        assert review.custom_context == {"user": "ada"}
        with pytest.raises(TypeError, match="custom_context must be a mapping"):
            ReviewContext(custom_context="ada")  # type: ignore[arg-type]


class TestInterfaces:
    def test_sync_events(self) -> None:
        """The sync interface declares Elixir's events plus run start/complete."""
        names = sorted(n for n in vars(ChainCallbackHandler) if n.startswith("on_"))
        assert names == EVENTS

    def test_async_twin(self) -> None:
        """The async twin declares the same events, each a coroutine function."""
        names = sorted(
            n for n in vars(AsyncChainCallbackHandler) if n.startswith("on_")
        )
        assert names == EVENTS
        for name in names:
            assert inspect.iscoroutinefunction(getattr(AsyncChainCallbackHandler, name))

    def test_every_method_documented(self) -> None:
        """Every event method has a docstring saying when it fires."""
        for base in (ChainCallbackHandler, AsyncChainCallbackHandler):
            for name in EVENTS:
                assert getattr(base, name).__doc__, f"{base.__name__}.{name}"

    def test_same_parameters(self) -> None:
        """Each async method takes the same parameters as its sync twin."""
        for name in EVENTS:
            sync = inspect.signature(getattr(ChainCallbackHandler, name))
            async_ = inspect.signature(getattr(AsyncChainCallbackHandler, name))
            assert list(sync.parameters) == list(async_.parameters), name

    @pytest.mark.parametrize("name", EVENTS)
    def test_sync_methods_are_no_ops(self, name: str) -> None:
        """Every base method accepts its arguments and returns None."""
        method = getattr(ChainCallbackHandler(), name)
        assert method(*_arguments_for(method)) is None

    @pytest.mark.parametrize("name", EVENTS)
    async def test_async_methods_are_no_ops(self, name: str) -> None:
        """Every async base method can be awaited and returns None."""
        method = getattr(AsyncChainCallbackHandler(), name)
        assert await method(*_arguments_for(method)) is None

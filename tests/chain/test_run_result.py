"""RunResult: three classes, one per status, built and matched through RunResult."""

from __future__ import annotations

import copy

import attrs
import pytest

from langhooks import LangHooksError, Message
from langhooks.chain import (
    ErrorResult,
    InterruptedResult,
    LLMChain,
    OkResult,
    RunResult,
)
from langhooks.models import ScriptedChatModel, ScriptedTurn

CHAIN = LLMChain(ScriptedChatModel([]))
ERROR = LangHooksError("timeout", "too slow")


def describe(result: RunResult) -> str:
    """What a user writes: match on the class, or compare the status."""
    match result:
        case OkResult():
            return "ok"
        case InterruptedResult(interrupt_data=data):
            return f"waits for {data['tool_call_id']}"
        case ErrorResult(error=error):
            return f"failed: {error.type}"
    raise AssertionError(result)  # pragma: no cover  # the match is exhaustive


class TestConstruction:
    @pytest.mark.parametrize(
        ("kwargs", "cls"),
        [
            ({"status": "ok"}, OkResult),
            ({"status": "interrupted", "interrupt_data": {"x": 1}}, InterruptedResult),
            ({"status": "error", "error": ERROR}, ErrorResult),
        ],
    )
    def test_run_result_builds_the_class_of_its_status(
        self, kwargs: dict[str, object], cls: type
    ) -> None:
        """RunResult(status=...) is an instance of the class the status names."""
        result = RunResult(chain=CHAIN, **kwargs)  # type: ignore[operator]
        assert type(result) is cls
        assert isinstance(result, RunResult)
        assert result == cls(chain=CHAIN, **kwargs)

    def test_status_defaults_from_the_class(self) -> None:
        """Each class knows its status; the fields it has no use for are None."""
        ok = OkResult(chain=CHAIN)
        error = ErrorResult(chain=CHAIN, error=ERROR)
        assert (ok.status, ok.interrupt_data, ok.error) == ("ok", None, None)
        assert (error.status, error.interrupt_data) == ("error", None)

    @pytest.mark.parametrize("status", ["done", None, 3])
    def test_unknown_status_is_rejected(self, status: object) -> None:
        """A status other than the three is a ValueError naming them."""
        with pytest.raises(ValueError, match="'ok', 'interrupted' or 'error'"):
            RunResult(status=status, chain=CHAIN)  # type: ignore[operator]

    def test_a_status_its_class_does_not_have_is_rejected(self) -> None:
        """An OkResult cannot say it is an error."""
        with pytest.raises(ValueError, match="status must be 'ok'"):
            OkResult(status="error", chain=CHAIN)  # type: ignore[arg-type]

    def test_fields_of_another_status_are_rejected(self) -> None:
        """An ok result carries no error, an error result no interrupt data."""
        with pytest.raises(ValueError, match="only status 'error' has one"):
            OkResult(chain=CHAIN, error=ERROR)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="only status 'interrupted' has one"):
            ErrorResult(chain=CHAIN, error=ERROR, interrupt_data={})  # type: ignore[arg-type]

    def test_an_error_result_needs_its_error(self) -> None:
        """The error of an error result is a LangHooksError, and required."""
        with pytest.raises(TypeError, match="error"):
            RunResult(status="error", chain=CHAIN)  # type: ignore[operator]
        with pytest.raises(TypeError, match="must be a LangHooksError"):
            ErrorResult(chain=CHAIN, error=ValueError("x"))  # type: ignore[arg-type]

    def test_interrupt_data_is_a_mapping(self) -> None:
        """The interrupt data of an interrupted result is a mapping."""
        with pytest.raises(TypeError, match="must be a Mapping"):
            InterruptedResult(chain=CHAIN, interrupt_data=["x"])  # type: ignore[arg-type]


class TestUse:
    def test_match_by_class(self) -> None:
        """A match statement tells the three apart and binds their fields."""
        assert describe(OkResult(chain=CHAIN)) == "ok"
        interrupted = InterruptedResult(
            chain=CHAIN, interrupt_data={"tool_call_id": "c"}
        )
        assert describe(interrupted) == "waits for c"
        assert describe(ErrorResult(chain=CHAIN, error=ERROR)) == "failed: timeout"

    def test_repr_names_the_class(self) -> None:
        """The repr says which result it is; the base is shown as RunResult."""
        assert repr(OkResult(chain=CHAIN)).startswith("OkResult(status='ok'")
        base = OkResult.__mro__[1]
        assert (base.__module__, base.__qualname__) == ("langhooks.chain", "RunResult")

    def test_evolve_and_copy_keep_the_class(self) -> None:
        """attrs.evolve and copy (pickle's protocol) give back the same class."""
        result = ErrorResult(chain=CHAIN, error=ERROR)
        other = LangHooksError("overloaded", "busy")
        assert attrs.evolve(result, error=other) == ErrorResult(
            chain=CHAIN, error=other
        )
        copied = copy.copy(result)
        assert type(copied) is ErrorResult
        assert copied.error.type == "timeout"

    def test_a_run_returns_the_class_of_its_status(self) -> None:
        """chain.run() returns an OkResult for an answered run, and its status
        narrows the type (checked by mypy and pyright in stubs/)."""
        chain = LLMChain(ScriptedChatModel([ScriptedTurn(text="hi")]))
        result = chain.add_message(Message.user("hello")).run()
        assert type(result) is OkResult
        assert result.status == "ok"

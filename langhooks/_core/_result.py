"""How a run ended: ``RunResult``, one class per status, and ``run_result``.

In the core, generic in the chain the run left, so ``on_run_complete`` is typed
without the runtime: ``langhooks.chain.RunResult`` is ``RunResult[LLMChain]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, Self, TypeAlias, cast

import attrs
from typing_extensions import TypeVar

from ._messages import LangHooksError
from ._tools import ChainView
from ._validators import instance_of

__all__ = [
    "ErrorResult",
    "InterruptedResult",
    "OkResult",
    "RunResult",
    "RunStatus",
    "run_result",
]

RunStatus = Literal["ok", "interrupted", "error"]

#: The chain a result carries (``LLMChain`` for the reference runtime).
ChainT_co = TypeVar("ChainT_co", bound=ChainView, covariant=True, default=Any)
_Chain = TypeVar("_Chain", bound=ChainView)


def _none_unless(status: str) -> Any:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            raise ValueError(
                f"a RunResult with status {instance.status!r} has no "
                f"{attribute.name} (only status {status!r} has one), got {value!r}"
            )

    return check


def _status_is(status: str) -> Any:
    def check(_instance: Any, _attribute: attrs.Attribute[Any], value: Any) -> None:
        if value != status:
            raise ValueError(f"status must be {status!r}, got {value!r}")

    return check


class _RunResultBase:
    """How a run ended: an ``OkResult``, ``InterruptedResult`` or ``ErrorResult``.

    For type checkers ``RunResult`` is the union of the three, so comparing
    ``status`` narrows it: after ``if result.status == "error":``,
    ``result.error`` is a ``LangHooksError``, and after ``"interrupted"``,
    ``result.interrupt_data`` is a mapping. At runtime it is their base class:
    ``RunResult(status=..., chain=..., ...)`` builds the class the status names,
    and ``isinstance(x, RunResult)`` holds for all three.

    Attributes:
        status: "ok", "interrupted" (calls wait for a human) or "error".
        chain: the chain as the run left it.
        interrupt_data: for "interrupted": one call's interrupt data plus its
            ``tool_call_id``; several calls: ``{"interrupts": (data, ...)}``.
        error: for "error": why the run gave up.
    """

    __slots__ = ()

    def __new__(cls, *_args: object, **kwargs: object) -> Self:
        if cls is not _RunResultBase:
            return object.__new__(cls)
        status = kwargs.get("status")
        chosen = _BY_STATUS.get(status) if isinstance(status, str) else None
        if chosen is None:
            raise ValueError(
                f"status must be 'ok', 'interrupted' or 'error', got {status!r}"
            )
        # A subclass of the class called: what a constructor call gives.
        return cast(Self, object.__new__(chosen))

    def __class_getitem__(cls, _chain: object) -> Any:
        """``RunResult[C]`` at run time (as ``typing.get_type_hints`` evaluates
        it) is ``RunResult``: the chain type is for type checkers."""
        return cls


# The runtime base is documented and shown (in reprs, "Bases:" lines) under its
# public name.
_RunResultBase.__name__ = _RunResultBase.__qualname__ = "RunResult"
_RunResultBase.__module__ = "langhooks.chain"


@attrs.frozen(kw_only=True)
class OkResult(_RunResultBase, Generic[ChainT_co]):
    """A run that ended with the model's answer.

    Attributes:
        status: "ok".
        chain: the chain as the run left it.
        interrupt_data: always None.
        error: always None.
    """

    status: Literal["ok"] = attrs.field(default="ok", validator=_status_is("ok"))
    chain: ChainT_co
    interrupt_data: None = attrs.field(
        default=None, validator=_none_unless("interrupted")
    )
    error: None = attrs.field(default=None, validator=_none_unless("error"))


@attrs.frozen(kw_only=True)
class InterruptedResult(_RunResultBase, Generic[ChainT_co]):
    """A run that stopped because tool calls wait for a human decision.

    Attributes:
        status: "interrupted".
        chain: the chain as the run left it (``chain.pending_tool_calls`` wait).
        interrupt_data: one call's interrupt data plus its ``tool_call_id``;
            several calls: ``{"interrupts": (data, ...)}``.
        error: always None.
    """

    status: Literal["interrupted"] = attrs.field(
        default="interrupted", validator=_status_is("interrupted")
    )
    chain: ChainT_co
    interrupt_data: Mapping[str, Any] = attrs.field(validator=instance_of(Mapping))
    error: None = attrs.field(default=None, validator=_none_unless("error"))


@attrs.frozen(kw_only=True)
class ErrorResult(_RunResultBase, Generic[ChainT_co]):
    """A run that gave up (``on_error`` has fired).

    Attributes:
        status: "error".
        chain: the chain as the run left it.
        interrupt_data: always None.
        error: why the run gave up.
    """

    status: Literal["error"] = attrs.field(
        default="error", validator=_status_is("error")
    )
    chain: ChainT_co
    interrupt_data: None = attrs.field(
        default=None, validator=_none_unless("interrupted")
    )
    error: LangHooksError = attrs.field(validator=instance_of(LangHooksError))


_BY_STATUS: dict[str, type[_RunResultBase]] = {
    "ok": OkResult,
    "interrupted": InterruptedResult,
    "error": ErrorResult,
}

if TYPE_CHECKING:
    RunResult: TypeAlias = (
        OkResult[ChainT_co] | InterruptedResult[ChainT_co] | ErrorResult[ChainT_co]
    )
else:
    RunResult = _RunResultBase


def run_result(
    *,
    status: RunStatus,
    chain: _Chain,
    interrupt_data: Mapping[str, Any] | None = None,
    error: LangHooksError | None = None,
) -> RunResult[_Chain]:
    """``RunResult(status=..., ...)`` for code whose status is not a literal: the
    class the status names, typed as the union (a type checker cannot call one).

    Raises:
        ValueError: an unknown status, or a field the status has no use for.
        TypeError: a field of the wrong type, or one the status needs is missing.
    """
    result = _RunResultBase(
        status=status, chain=chain, interrupt_data=interrupt_data, error=error
    )
    # The class the status names, one member of the union.
    return cast("RunResult[_Chain]", result)

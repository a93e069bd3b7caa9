"""A tool call's invocation, current while the framework runs the tool.

A framework calls a bridge before a tool runs and again after, with the tool's
own code in between; the call's ``Invocation`` (a child of the run's) is made
current at the first hook and the previous one restored at the second, so what
the tool does — a nested agent run above all — sees it as
``current_invocation()`` and becomes its child, as under ``LLMChain``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Final, final

from ..._core._invocation import Invocation, entered

__all__ = ["ToolScopes"]


@final
class ToolScopes:
    """The open tool invocations of one bridged run, by call id."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: Final[dict[str, AbstractContextManager[Invocation]]] = {}

    def open(
        self,
        call_id: str,
        name: str,
        run: Invocation,
        custom_context: Mapping[str, Any],
    ) -> Invocation:
        """Make call ``call_id``'s invocation (a child of ``run``) current."""
        scope = entered(
            Invocation(name=name, parent_id=run.id, custom_context=custom_context)
        )
        self._open[call_id] = scope
        return scope.__enter__()

    def close(self, call_id: str) -> None:
        """Restore what was current before ``open`` (nothing if it was not open).

        Called from the same task as ``open``: the framework's after-tool hook
        follows its before-tool hook in the call's own task.
        """
        scope = self._open.pop(call_id, None)
        if scope is not None:
            scope.__exit__(None, None, None)

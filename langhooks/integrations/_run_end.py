"""Which event record ends its run for good: one rule for the Redis publisher and the
web app, which both mark that record so a reader knows nothing of the run follows."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final, final

from typing_extensions import override

from .._core._chain_callbacks import ChainCallbackHandler

if TYPE_CHECKING:
    from ..chain import LLMChain, RunResult

__all__ = ["EndMarker"]

# Records that end their run (a chain's on_error) or stream for good.
_ENDS: Final = frozenset({"on_error", "on_complete_response"})


@final
class EndMarker(ChainCallbackHandler):
    """Tells, for the record being made on this thread, whether it ends its run.

    ``on_error`` (and a stream's ``on_complete_response``) always does;
    ``on_run_complete`` does when the run ended for good: status "ok" and the model
    answered (not a resume whose tool results still wait for the model). Call
    ``on_run_complete`` (or add the marker to the chain before the recorder) just
    before that event is recorded.
    """

    def __init__(self) -> None:
        self._ending = threading.local()

    def ends(self, event: str) -> bool:
        """Whether the record of ``event`` being made on this thread ends its run."""
        return event in _ENDS or (
            event == "on_run_complete" and getattr(self._ending, "value", False)
        )

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult) -> None:
        messages = result.chain.messages
        self._ending.value = result.status == "ok" and not (
            messages and messages[-1].role == "tool"
        )

"""The reference chain runtime: ``LLMChain``, tools, run modes and decisions."""

from .._core._messages import Tool
from ._chain import LLMChain
from ._decision import Decision, RetryPolicy
from ._processors import MessageProcessor, Reject, json_processor
from ._result import ErrorResult, InterruptedResult, OkResult, RunResult

__all__ = [
    "Decision",
    "ErrorResult",
    "InterruptedResult",
    "LLMChain",
    "MessageProcessor",
    "OkResult",
    "Reject",
    "RetryPolicy",
    "RunResult",
    "Tool",
    "json_processor",
]

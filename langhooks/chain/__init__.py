"""The reference chain runtime: ``LLMChain``, tools, run modes and decisions."""

from .._core._messages import Tool
from .._core._result import ErrorResult, InterruptedResult, OkResult
from ._chain import LLMChain, RunResult
from ._decision import Decision, RetryPolicy
from ._processors import MessageProcessor, Reject, json_processor

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

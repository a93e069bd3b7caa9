"""The reference chain runtime: ``LLMChain``, tools, run modes and decisions."""

from .._messages import Tool
from ._chain import LLMChain, RunResult
from ._decision import Decision, RetryPolicy

__all__ = ["Decision", "LLMChain", "RetryPolicy", "RunResult", "Tool"]

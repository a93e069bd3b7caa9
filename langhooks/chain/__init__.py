"""The reference chain runtime."""

from .._messages import Tool
from ._chain import LLMChain, RunResult

__all__ = ["LLMChain", "RunResult", "Tool"]

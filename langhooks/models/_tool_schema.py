"""Tools as the providers' requests describe them: shared by every provider model.

``tool_schema`` is a tool's arguments schema; ``function_tools`` is the
``{"type": "function", "function": {...}}`` list Chat Completions and Ollama's
``/api/chat`` both take.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._core._tools import Tool

__all__ = ["function_tools", "tool_schema"]

_EMPTY_SCHEMA: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}


def tool_schema(tool: Tool) -> dict[str, Any]:
    """A tool's JSON Schema for its arguments (an empty object schema if none)."""
    return dict(tool.parameters_schema or _EMPTY_SCHEMA)


def function_tools(tools: tuple[Tool, ...]) -> list[dict[str, Any]]:
    """``tools`` as function tools (Chat Completions' and Ollama's shape)."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool_schema(tool),
            },
        }
        for tool in tools
    ]

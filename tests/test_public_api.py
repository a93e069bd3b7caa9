"""The public surface: what ``from langhooks import *`` gives, pinned."""

from __future__ import annotations

import importlib
import inspect
import re
import types
from pathlib import Path

import pytest

import langhooks
import langhooks.chain
import langhooks.models

PUBLIC = [
    "Allow",
    "AsyncChainCallbackHandler",
    "AsyncChainStreamingHandler",
    "AsyncCompositeChainHandler",
    "AsyncCompositeStreamingHandler",
    "AsyncStreamingChatResponseHandler",
    "ChainCallbackHandler",
    "ChainEventName",
    "ChainStreamingHandler",
    "ChainView",
    "ChatResponse",
    "CoalescingDeltas",
    "CompleteToolCall",
    "CompositeChainHandler",
    "CompositeStreamingHandler",
    "ContentPart",
    "Deny",
    "FinishReason",
    "HandlerWithoutInvocation",
    "Interrupt",
    "Invocation",
    "LangHooksError",
    "Message",
    "MessageDelta",
    "PartialResponse",
    "PartialResponseContext",
    "PartialThinking",
    "PartialThinkingContext",
    "PartialToolCall",
    "PartialToolCallContext",
    "ReviewContext",
    "ReviewDecision",
    "StreamEvent",
    "StreamingChatResponseHandler",
    "StreamingEventName",
    "StreamingHandle",
    "Synchronized",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolProgress",
    "ToolResult",
    "UpdateArguments",
    "__version__",
    "achain_callbacks",
    "aiterate_stream",
    "astreaming_callbacks",
    "chain_callbacks",
    "current_invocation",
    "filtered",
    "in_background",
    "invocation",
    "isolate",
    "iterate_stream",
    "streaming_callbacks",
]


class TestTopLevel:
    def test_all_pinned(self) -> None:
        """langhooks.__all__ is exactly the documented public names."""
        assert langhooks.__all__ == PUBLIC

    def test_all_sorted(self) -> None:
        """__all__ is kept sorted."""
        assert langhooks.__all__ == sorted(langhooks.__all__)

    @pytest.mark.parametrize("name", PUBLIC)
    def test_importable(self, name: str) -> None:
        """Each public name imports from the top-level package."""
        namespace: dict[str, object] = {}
        exec(f"from langhooks import {name}", namespace)
        assert namespace[name] is getattr(langhooks, name)

    def test_nothing_public_left_out(self) -> None:
        """Every public attribute of the package (not a submodule) is in __all__."""
        public = {
            name
            for name, value in vars(langhooks).items()
            if not name.startswith("_") and not isinstance(value, types.ModuleType)
        }
        assert public <= set(langhooks.__all__)

    def test_implementations_private(self) -> None:
        """Public classes and functions live in private modules."""
        for name in PUBLIC:
            value = getattr(langhooks, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert value.__module__.split(".")[-1].startswith("_"), name

    def test_version(self) -> None:
        """__version__ is a non-empty str."""
        assert isinstance(langhooks.__version__, str)
        assert langhooks.__version__


class TestSubpackages:
    @pytest.mark.parametrize(
        ("module", "names"),
        [
            ("langhooks.models", {"ChatModel", "ChatRequest"}),
            ("langhooks.chain", {"LLMChain", "RunResult", "Tool"}),
            ("langhooks.codec", {"Encodable", "decode", "dumps", "encode", "loads"}),
            (
                "langhooks.events",
                {"EventRecord", "EventRecorder", "read_events", "replay_events"},
            ),
            (
                "langhooks.stores",
                {"AsyncRunStore", "MemoryRunStore", "PendingRun", "RunStore"},
            ),
            (
                "langhooks.integrations.web",
                {"Action", "Authorize", "create_app", "owner_only"},
            ),
        ],
    )
    def test_contains_contract_names(self, module: str, names: set[str]) -> None:
        """The subpackages export at least the contract's names, all importable."""
        imported = importlib.import_module(module)
        assert names <= set(imported.__all__)
        for name in imported.__all__:
            assert hasattr(imported, name), f"{module}.{name}"

    def test_chain_tool_is_the_value_type(self) -> None:
        """langhooks.chain.Tool is the same class as langhooks.Tool."""
        assert langhooks.chain.Tool is langhooks.Tool


CONCEPTS = Path(__file__).resolve().parent.parent / "docs" / "concepts.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", CONCEPTS.read_text(), re.S)


class TestConceptsPage:
    @pytest.mark.parametrize("index", range(len(EXAMPLES)))
    def test_example_runs(self, index: int) -> None:
        """Every python example of docs/concepts.md runs as written."""
        code = compile(EXAMPLES[index], f"concepts.md example {index}", "exec")
        exec(code, {"__name__": "concepts"})

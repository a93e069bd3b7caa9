"""langhooks: typed, class-based event handlers for LLM applications."""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from ._core._chain_callbacks import (
    Allow,
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    ChainEventName,
    Deny,
    Interrupt,
    ReviewContext,
    ReviewDecision,
    UpdateArguments,
)
from ._core._chain_streaming import AsyncChainStreamingHandler, ChainStreamingHandler
from ._core._invocation import Invocation, current_invocation, invocation
from ._core._messages import (
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    FinishReason,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialThinking,
    PartialToolCall,
    TokenUsage,
    ToolCall,
    ToolResult,
)
from ._core._streaming import (
    AsyncStreamingChatResponseHandler,
    PartialResponseContext,
    PartialThinkingContext,
    PartialToolCallContext,
    StreamingChatResponseHandler,
    StreamingEventName,
    StreamingHandle,
)
from ._version import __version__

if TYPE_CHECKING:
    from ._core._functions import (
        achain_callbacks,
        astreaming_callbacks,
        chain_callbacks,
        streaming_callbacks,
    )
    from ._core._tools import ChainView, Tool, ToolContext, ToolProgress
    from ._wrap._background import in_background
    from ._wrap._coalesce import CoalescingDeltas
    from ._wrap._compose import (
        AsyncCompositeChainHandler,
        AsyncCompositeStreamingHandler,
        CompositeChainHandler,
        CompositeStreamingHandler,
    )
    from ._wrap._iterate import StreamEvent, aiterate_stream, iterate_stream
    from ._wrap._wrappers import (
        HandlerWithoutInvocation,
        Synchronized,
        filtered,
        isolate,
    )
__all__ = [
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

# Names loaded on first use, so that ``import langhooks`` loads only the handler
# interfaces, the value types and the invocation context. The modules of the
# composites, the wrappers, the coalescer and the function layer build handler
# classes when imported (checked events, fan-out tables); those of ``in_background``
# and the stream iterators also need asyncio (and its ssl, socket, subprocess and
# concurrent.futures); the tools' builds two attrs classes that only a run or a model
# needs (the interfaces name ``Tool`` and ``ChainView`` in annotations only). Type
# checkers read the imports above.
_LAZY: dict[str, str] = {
    "AsyncCompositeChainHandler": "._wrap._compose",
    "AsyncCompositeStreamingHandler": "._wrap._compose",
    "ChainView": "._core._tools",
    "CoalescingDeltas": "._wrap._coalesce",
    "CompositeChainHandler": "._wrap._compose",
    "CompositeStreamingHandler": "._wrap._compose",
    "HandlerWithoutInvocation": "._wrap._wrappers",
    "StreamEvent": "._wrap._iterate",
    "Synchronized": "._wrap._wrappers",
    "Tool": "._core._tools",
    "ToolContext": "._core._tools",
    "ToolProgress": "._core._tools",
    "achain_callbacks": "._core._functions",
    "aiterate_stream": "._wrap._iterate",
    "astreaming_callbacks": "._core._functions",
    "chain_callbacks": "._core._functions",
    "filtered": "._wrap._wrappers",
    "in_background": "._wrap._background",
    "isolate": "._wrap._wrappers",
    "iterate_stream": "._wrap._iterate",
    "streaming_callbacks": "._core._functions",
}


if not TYPE_CHECKING:  # pragma: no branch - the interpreter always enters
    # Defined for the interpreter only: a type checker seeing a module
    # ``__getattr__`` would accept any name (``langhooks.Toool``) as ``object``;
    # it reads the typed imports above instead.

    def __getattr__(name: str) -> object:
        """Import a lazily loaded public name on first use (PEP 562).

        Args:
            name: The attribute looked up on the package.

        Returns:
            The public object of that name.

        Raises:
            AttributeError: ``name`` is not a lazily loaded public name.
        """
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'langhooks' has no attribute {name!r}")
        value = getattr(_import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The package's attributes, lazily loaded public names included.

    Returns:
        Every attribute name, sorted.
    """
    return sorted({*globals(), *__all__})


del TYPE_CHECKING

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
from ._core._functions import (
    achain_callbacks,
    astreaming_callbacks,
    chain_callbacks,
    streaming_callbacks,
)
from ._core._invocation import Invocation, current_invocation, invocation
from ._core._messages import (
    ChainView,
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
    Tool,
    ToolCall,
    ToolContext,
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
from ._wrap._coalesce import CoalescingDeltas
from ._wrap._compose import (
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    CompositeChainHandler,
    CompositeStreamingHandler,
)
from ._wrap._wrappers import (
    HandlerWithoutInvocation,
    Synchronized,
    filtered,
    isolate,
)

if TYPE_CHECKING:
    from ._wrap._background import in_background
    from ._wrap._iterate import StreamEvent, aiterate_stream, iterate_stream
del TYPE_CHECKING

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

# Names whose modules need asyncio (and its ssl, socket, subprocess and
# concurrent.futures): loaded on first use, so ``import langhooks`` and a plain sync
# handler do not pay for them. Type checkers read the imports above.
_LAZY: dict[str, str] = {
    "StreamEvent": "._wrap._iterate",
    "aiterate_stream": "._wrap._iterate",
    "in_background": "._wrap._background",
    "iterate_stream": "._wrap._iterate",
}


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

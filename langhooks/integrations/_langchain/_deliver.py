"""The handlers a bridge calls, split by interface, and the delivery of events.

As under ``LLMChain``: a chain handler's events come through
``HandlerWithoutInvocation`` except ``on_tool_pre_execution``, which runs with the
tool's invocation current; a handler that is only a streaming handler hears each
model call's stream. A handler of both kinds hears the chain events (as in
``LLMChain(callbacks=[...])``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, final

from ..._core._chain_callbacks import AsyncChainCallbackHandler, ChainCallbackHandler
from ..._core._handler import overridden_events
from ..._core._invocation import entered
from ..._core._streaming import (
    AsyncStreamingChatResponseHandler,
    StreamingChatResponseHandler,
)
from ..._wrap._compose import (
    AsyncCompositeChainHandler,
    AsyncCompositeStreamingHandler,
    CompositeChainHandler,
    CompositeStreamingHandler,
)
from ..._wrap._wrappers import HandlerWithoutInvocation
from ._run import PRE, BridgedRun, Event

__all__ = ["Handlers"]

_CHAIN_KINDS = (ChainCallbackHandler, AsyncChainCallbackHandler)
_STREAM_KINDS = (StreamingChatResponseHandler, AsyncStreamingChatResponseHandler)
_ASYNC_KINDS = (AsyncChainCallbackHandler, AsyncStreamingChatResponseHandler)


def _checked(handlers: Iterable[object], owner: str, *, allow_async: bool) -> list[Any]:
    checked = list(handlers)
    for handler in checked:
        if not isinstance(handler, _CHAIN_KINDS + _STREAM_KINDS):
            raise TypeError(
                f"{owner} takes langhooks handlers (chain or streaming, sync or "
                f"async), got {handler!r}"
            )
        if not allow_async and isinstance(handler, _ASYNC_KINDS):
            raise TypeError(
                f"{owner} calls its handlers synchronously, and {handler!r} is an "
                f"async handler: use AsyncLangHooksCallbackHandler for ainvoke/astream"
            )
    return checked


@final
class Handlers:
    """A bridge's handlers: a composite per interface, sync or async."""

    def __init__(
        self, handlers: Sequence[object], owner: str, *, allow_async: bool
    ) -> None:
        checked = _checked(handlers, owner, allow_async=allow_async)
        chain = [h for h in checked if isinstance(h, _CHAIN_KINDS)]
        stream = [h for h in checked if not isinstance(h, _CHAIN_KINDS)]
        self.is_async: Final = any(isinstance(h, _ASYNC_KINDS) for h in checked)
        if allow_async:
            self.chain: Any = AsyncCompositeChainHandler(
                [HandlerWithoutInvocation.wrap(h) for h in chain]
            )
            self.pre: Any = AsyncCompositeChainHandler(chain)
            self.stream: Any = AsyncCompositeStreamingHandler(
                [HandlerWithoutInvocation.wrap(h) for h in stream]
            )
        else:
            # _checked refused the async handlers
            sync = [h for h in chain if isinstance(h, ChainCallbackHandler)]
            self.chain = CompositeChainHandler(
                [HandlerWithoutInvocation.wrap(h) for h in sync]
            )
            self.pre = CompositeChainHandler(sync)
            self.stream = CompositeStreamingHandler(
                [HandlerWithoutInvocation.wrap(h) for h in stream]
            )
        self.targets: Final = (self.chain, self.stream, self.pre)
        #: The events some handler overrides (a composite takes them all).
        self.hears: Final = frozenset().union(*map(overridden_events, checked))
        #: Whether a handler overrides ``on_tool_call_review`` (a reviewer, or an
        #: observer of reviews such as ``EventRecorder``).
        self.reviews: Final = "on_tool_call_review" in self.hears

    def deliver(self, run: BridgedRun, events: list[Event], key: Any = None) -> None:
        """Call each event on its handlers, in order (sync handlers only)."""
        targets = self.targets
        for target, name, args in events:
            if target == PRE:
                with entered(run.tool_invocation(key) or run.invocation):
                    getattr(targets[target], name)(*args)
            else:
                getattr(targets[target], name)(*args)

    async def adeliver(
        self, run: BridgedRun, events: list[Event], key: Any = None
    ) -> None:
        """Call each event on its handlers, in order, awaiting async ones."""
        targets = self.targets  # async composites: every event is awaited
        for target, name, args in events:
            if target == PRE:
                with entered(run.tool_invocation(key) or run.invocation):
                    await getattr(targets[target], name)(*args)
            else:
                await getattr(targets[target], name)(*args)

    def review(self, event: Event) -> Any:
        """Ask the reviewers about one call (sync): the settled decision."""
        _, name, args = event
        assert name == "on_tool_call_review"
        return self.chain.on_tool_call_review(*args)

    async def areview(self, event: Event) -> Any:
        """Ask the reviewers about one call, awaiting async ones."""
        _, name, args = event
        assert name == "on_tool_call_review"
        return await self.chain.on_tool_call_review(*args)

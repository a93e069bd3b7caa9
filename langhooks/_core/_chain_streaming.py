"""One class for a handler of both a chain's and a stream's events.

``ChainCallbackHandler.on_error(chain, error)`` and
``StreamingChatResponseHandler.on_error(error)`` share a name, so a class that
simply subclasses both is rejected by mypy and pyright (the two definitions
conflict). These bases declare ``on_error`` as the two overloads for the type
checkers and add nothing at run time: ``on_error`` stays the interfaces' no-op
(uncalled) unless a subclass overrides it, with both overloads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from typing_extensions import override

from ._chain_callbacks import (
    AsyncChainCallbackHandler,
    ChainCallbackHandler,
    ChainT_contra,
)
from ._streaming import AsyncStreamingChatResponseHandler, StreamingChatResponseHandler

if TYPE_CHECKING:
    from ._messages import LangHooksError

__all__ = ["AsyncChainStreamingHandler", "ChainStreamingHandler"]


class ChainStreamingHandler(
    ChainCallbackHandler[ChainT_contra], StreamingChatResponseHandler
):
    """A ``ChainCallbackHandler`` that is a ``StreamingChatResponseHandler`` too.

    Subclass it instead of both interfaces: the class then checks with mypy and
    pyright as written. It goes in ``LLMChain(callbacks=[...])`` and in
    ``model.stream(request, handler)`` alike. Like ``ChainCallbackHandler``, it is
    generic in the chain its events receive: ``ChainStreamingHandler[LLMChain]``
    says so for every chain event (the default takes any chain).

    To handle failures of both kinds, override ``on_error`` with both overloads::

        @overload
        def on_error(self, error: LangHooksError, /) -> None: ...
        @overload
        def on_error(self, chain: LLMChain, error: LangHooksError, /) -> None: ...
        @override
        def on_error(self, *args: Any) -> None: ...
    """

    if TYPE_CHECKING:  # the run-time method is the interfaces' no-op

        @overload
        def on_error(self, error: LangHooksError, /) -> None: ...
        @overload
        def on_error(self, chain: ChainT_contra, error: LangHooksError, /) -> None: ...
        @override
        def on_error(self, *args: Any) -> None:
            """A stream's ``on_error(error)`` or a run's ``on_error(chain, error)``."""


class AsyncChainStreamingHandler(
    AsyncChainCallbackHandler[ChainT_contra], AsyncStreamingChatResponseHandler
):
    """The ``async def`` twin of ``ChainStreamingHandler``."""

    if TYPE_CHECKING:

        @overload
        async def on_error(self, error: LangHooksError, /) -> None: ...
        @overload
        async def on_error(
            self, chain: ChainT_contra, error: LangHooksError, /
        ) -> None: ...
        @override
        async def on_error(self, *args: Any) -> None:
            """A stream's ``on_error(error)`` or a run's ``on_error(chain, error)``."""

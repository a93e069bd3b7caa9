"""The handler contract without the runtime: ``ChainView`` and generic interfaces.

Checked by mypy and pyright, never run. A handler may annotate its chain parameter
with the runtime's ``LLMChain`` (unparameterized interface), say so once
(``ChainCallbackHandler[LLMChain]``), or stay portable (``[ChainView]``); all fit
``LLMChain(callbacks=[...])`` and the composites.
"""

from __future__ import annotations

from typing import assert_type

from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncCompositeChainHandler,
    ChainCallbackHandler,
    ChainView,
    CompositeChainHandler,
    Message,
    chain_callbacks,
)
from langhooks.chain import LLMChain, RunResult
from langhooks.models import ScriptedChatModel


class Natural(ChainCallbackHandler):
    """Unparameterized: an override annotates the chain with the runtime's class."""

    @override
    def on_run_start(self, chain: LLMChain, /) -> None:
        chain.to_state()

    @override
    def on_run_complete(self, chain: LLMChain, result: RunResult, /) -> None:
        assert_type(result.chain, LLMChain)


class Portable(ChainCallbackHandler[ChainView]):
    """Written for any runtime: it reads only what ChainView offers."""

    @override
    def on_message_processed(self, chain: ChainView, message: Message, /) -> None:
        assert_type(len(chain.messages) + chain.current_failure_count, int)


class Exact(ChainCallbackHandler[LLMChain]):
    """Parameterized with the runtime's chain: every event takes an LLMChain."""

    @override
    def on_run_start(self, chain: LLMChain, /) -> None:
        chain.to_state()


class AsyncExact(AsyncChainCallbackHandler[LLMChain]):
    """The async interface is generic the same way."""

    @override
    async def on_run_start(self, chain: LLMChain, /) -> None:
        chain.to_state()


def saw(chain: LLMChain) -> None:
    """A plain function for chain_callbacks may take an LLMChain too."""


model = ScriptedChatModel([])
chain = LLMChain(
    model, callbacks=[Natural(), Portable(), Exact(), chain_callbacks(on_run_start=saw)]
)
CompositeChainHandler([Natural(), Portable(), Exact()])
AsyncCompositeChainHandler([AsyncExact()])
view: ChainView = chain
assert_type(chain.run().chain, LLMChain)

# --- rejected -------------------------------------------------------------------------


class Narrowed(ChainCallbackHandler[ChainView]):
    """A portable handler cannot ask for more than ChainView."""

    @override
    def on_run_start(self, chain: LLMChain, /) -> None: ...  # type: ignore[override]


class Reader(ChainCallbackHandler[ChainView]):
    """ChainView has no runtime methods."""

    @override
    def on_run_start(self, chain: ChainView, /) -> None:
        chain.to_state()  # type: ignore[attr-defined]


not_a_chain: ChainView = model  # type: ignore[assignment]

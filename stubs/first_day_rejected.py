"""Typing contract: first-day misuse that mypy and pyright must reject (issue 40).

Checked by both (see ``rejected.py`` for how the ignores are kept needed); never run.
"""

from __future__ import annotations

from typing_extensions import override

import langhooks
from langhooks import (
    ChainCallbackHandler,
    ChainStreamingHandler,
    ChainView,
    Message,
    ToolResult,
)
from langhooks import CompositeStreamHandler as CompositeStreamHandler  # type: ignore[attr-defined]
from langhooks.chain import LLMChain
from langhooks.codec import decode, dumps, encode, loads
from langhooks.models import (
    BedrockChatModel,
    CohereChatModel,
    GeminiChatModel,
    MistralChatModel,
    ScriptedChatModel,
)

# --- a misspelled lazy name is not an object ------------------------------------------

langhooks.Toool  # type: ignore[attr-defined]
langhooks.in_backround  # type: ignore[attr-defined]
langhooks.CompositeStreamHandler  # type: ignore[attr-defined]

# --- the codec decodes value types only -----------------------------------------------

text = dumps(Message.user("hi"))
loads(text, type=str)  # type: ignore[type-var]
decode(encode(Message.user("hi")), type=dict)  # type: ignore[type-var]
loads(text).role  # type: ignore[union-attr]
decode(encode(Message.user("hi"))).text  # type: ignore[union-attr]

# --- no bare Any where a value is declared --------------------------------------------

ToolResult(tool_call_id="c", name="f").processed_content["rows"]  # type: ignore[index]

# --- a handler written for another runtime's chain ------------------------------------


class OtherChain(ChainView):
    """Another runtime's chain type."""


class ForOtherChain(ChainCallbackHandler[OtherChain]):
    @override
    def on_run_start(self, chain: OtherChain, /) -> None: ...


class BothForOtherChain(ChainStreamingHandler[OtherChain]):
    pass


chain = LLMChain(ScriptedChatModel([]))
LLMChain(ScriptedChatModel([]), callbacks=[ForOtherChain()])  # type: ignore[list-item]
LLMChain(ScriptedChatModel([]), callbacks=[BothForOtherChain()])  # type: ignore[list-item]
chain.add_callback(ForOtherChain())  # type: ignore[arg-type]
LLMChain.from_state({}, chain.model, callbacks=[ForOtherChain()])  # type: ignore[list-item]

# --- the provider models take their SDK's client --------------------------------------

GeminiChatModel("gemini-2.5-flash", client="not a client")  # type: ignore[arg-type]
CohereChatModel("command-a-03-2025", client=object())  # type: ignore[arg-type]
MistralChatModel("mistral-small-latest", client=42)  # type: ignore[arg-type]
BedrockChatModel("m", client=object())  # type: ignore[arg-type]
BedrockChatModel("m").client.invoke_model()  # type: ignore[attr-defined]

"""A scripted, streaming LangChain chat model with ``bind_tools``.

LangChain's own fakes drop tool calls when streaming; this one streams each turn
as LangChain providers do: reasoning blocks, text word by word, then tool-call
chunks (name and id first, arguments after), with usage on the last chunk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field
from typing_extensions import override

from ._script import Turn, retryable


class ScriptedChatModel(BaseChatModel):
    """Answers ``turns`` in order, one per call; ``fail_first`` fails once.

    Streams when made with ``streaming=True`` (else LangChain asks for whole
    answers, unless a streaming consumer such as ``stream_mode="messages"`` listens).
    """

    turns: list[Any] = Field(default_factory=list)
    streaming: bool = False
    failed: set[int] = Field(default_factory=set)  # the turns that failed once

    @property
    @override
    def _llm_type(self) -> str:
        return "scripted"

    @override
    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    @override
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        *a: Any,
        **k: Any,
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop))

    @override
    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # The turn is the number of answers so far: a run resumed in another
        # process continues the script where it paused.
        number = sum(isinstance(m, AIMessage) for m in messages)
        turn: Turn = self.turns[number]
        if turn.fail_first and number not in self.failed:
            self.failed.add(number)
            raise retryable(turn.fail_first)
        pieces: list[AIMessageChunk] = []
        if turn.thinking:
            block = {"type": "reasoning", "reasoning": turn.thinking}
            pieces.append(AIMessageChunk(content=[block]))
        pieces += [AIMessageChunk(content=w) for w in _words(turn.text)]
        for index, call in enumerate(turn.calls):
            head = tool_call_chunk(
                name=call.name, id=call.call_id, args="", index=index
            )
            body = tool_call_chunk(args=json.dumps(dict(call.arguments)), index=index)
            pieces += [
                AIMessageChunk(content="", tool_call_chunks=[c]) for c in (head, body)
            ]
        usage = turn.usage
        pieces.append(
            AIMessageChunk(
                content="",
                usage_metadata={
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.total_tokens,
                },
                response_metadata={"model_name": "scripted"},
                chunk_position="last",
            )
        )
        for piece in pieces:  # LangChain reports each chunk to the callbacks
            yield ChatGenerationChunk(message=piece)


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]] if text else []

"""A scripted ADK model (``BaseLlm``) that answers like Gemini does.

Each turn is sent as Gemini's ``GenerateContentResponse`` chunks (thinking as a
``thought`` part, text word by word, each function call whole in a chunk of its
own, then the finish reason with the usage) and, when ADK asks for a stream (SSE
mode), put through ADK's own ``StreamingResponseAggregator``, as ADK's ``Gemini``
model does: partial responses, then the aggregated one. Which turn to answer is
read from the request (the number of model contents so far), so a run resumed
in another process gets the next turn.

A turn with ``fail_first`` fails and is retried inside the model, as the
google-genai client retries a rate-limited request (``HttpRetryOptions``) below
ADK: ADK never hears of the failed attempt.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.utils.streaming_utils import StreamingResponseAggregator
from google.genai import types
from pydantic import ConfigDict
from typing_extensions import override

__all__ = ["ScriptedGemini", "gemini_chunks"]


def _chunk(
    *parts: types.Part, finish: bool = False, usage: Any = None
) -> types.GenerateContentResponse:
    candidate = types.Candidate(
        content=types.Content(role="model", parts=list(parts)),
        finish_reason=types.FinishReason.STOP if finish else None,
    )
    metadata = None
    if usage is not None:
        metadata = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=usage.input_tokens,
            candidates_token_count=usage.output_tokens,
            total_token_count=usage.input_tokens + usage.output_tokens,
        )
    return types.GenerateContentResponse(
        candidates=[candidate], usage_metadata=metadata
    )


def _call(call: Any, ids: bool) -> types.Part:
    return types.Part(
        function_call=types.FunctionCall(
            id=call.call_id if ids else None, name=call.name, args=dict(call.arguments)
        )
    )


def gemini_chunks(
    turn: Any, *, ids: bool = True
) -> Iterator[types.GenerateContentResponse]:
    """A script turn as Gemini's stream of chunks (``ids``: the calls carry ids,
    as Gemini 3 sends them; older models send none)."""
    if turn.thinking:
        yield _chunk(types.Part(text=turn.thinking, thought=True))
    words = turn.text.split(" ") if turn.text else []
    for i, word in enumerate(words):
        yield _chunk(types.Part(text=word if i == 0 else f" {word}"))
    for call in turn.calls:
        yield _chunk(_call(call, ids))
    yield _chunk(finish=True, usage=turn.usage)


def _whole(turn: Any, ids: bool) -> LlmResponse:
    parts: list[types.Part] = []
    if turn.thinking:
        parts.append(types.Part(text=turn.thinking, thought=True))
    if turn.text:
        parts.append(types.Part(text=turn.text))
    parts.extend(_call(call, ids) for call in turn.calls)
    response = _chunk(*parts, finish=True, usage=turn.usage)
    return LlmResponse.create(response)


class ScriptedGemini(BaseLlm):
    """Answers ``turns`` in order (see the module)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "scripted-gemini"
    turns: Sequence[Any] = ()
    #: Raised by every attempt when set (a model that fails for good).
    error: Exception | None = None
    #: How many attempts failed and were retried inside the model.
    hidden_retries: int = 0
    #: Whether function calls carry ids.
    ids: bool = True

    @override
    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if self.error is not None:
            raise self.error
        answered = sum(1 for content in llm_request.contents if content.role == "model")
        turn = self.turns[answered]
        if turn.fail_first:
            self.hidden_retries += 1
        if not stream:
            yield _whole(turn, self.ids)
            return
        aggregator = StreamingResponseAggregator()
        for chunk in gemini_chunks(turn, ids=self.ids):
            async for response in aggregator.process_response(chunk):
                yield response
        closed = aggregator.close()
        if closed is not None:
            yield closed

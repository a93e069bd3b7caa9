"""A scripted Strands ``Model`` that streams like Bedrock's Converse stream.

Each turn is sent as Strands' ``StreamEvent`` chunks: ``messageStart``, a
reasoning block (``reasoningContent`` text, then its signature), a text block
word by word, each tool call as a ``toolUse`` block whose input arrives in two
JSON fragments, ``messageStop`` with the stop reason and ``metadata`` with the
usage. Which turn to answer is read from the messages (the assistant messages so
far), so an agent resumed in another process gets the next turn. A turn with
``fail_first`` raises ``ModelThrottledException`` on its first attempt, which
Strands' retry strategy retries.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Any

from strands.models.model import Model
from strands.types.exceptions import ModelThrottledException
from typing_extensions import override

__all__ = ["ScriptedStrandsModel", "strands_chunks"]


def strands_chunks(turn: Any) -> Iterator[dict[str, Any]]:
    """A script turn as Strands' stream events."""
    yield {"messageStart": {"role": "assistant"}}
    index = 0
    if turn.thinking:
        yield {"contentBlockStart": {"start": {}, "contentBlockIndex": index}}
        yield {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"text": turn.thinking}},
                "contentBlockIndex": index,
            }
        }
        yield {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"signature": "c2lnbmF0dXJl"}},
                "contentBlockIndex": index,
            }
        }
        yield {"contentBlockStop": {"contentBlockIndex": index}}
        index += 1
    if turn.text:
        yield {"contentBlockStart": {"start": {}, "contentBlockIndex": index}}
        for i, word in enumerate(turn.text.split(" ")):
            text = word if i == 0 else f" {word}"
            yield {
                "contentBlockDelta": {
                    "delta": {"text": text},
                    "contentBlockIndex": index,
                }
            }
        yield {"contentBlockStop": {"contentBlockIndex": index}}
        index += 1
    for call in turn.calls:
        start = {"toolUse": {"name": call.name, "toolUseId": call.call_id}}
        yield {"contentBlockStart": {"start": start, "contentBlockIndex": index}}
        text = json.dumps(dict(call.arguments))
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            yield {
                "contentBlockDelta": {
                    "delta": {"toolUse": {"input": piece}},
                    "contentBlockIndex": index,
                }
            }
        yield {"contentBlockStop": {"contentBlockIndex": index}}
        index += 1
    yield {"messageStop": {"stopReason": "tool_use" if turn.calls else "end_turn"}}
    usage = turn.usage
    yield {
        "metadata": {
            "usage": {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "totalTokens": usage.input_tokens + usage.output_tokens,
            },
            "metrics": {"latencyMs": 0},
        }
    }


class ScriptedStrandsModel(Model):
    """Answers ``turns`` in order (see the module)."""

    def __init__(self, turns: Sequence[Any], *, error: Exception | None = None) -> None:
        self.turns = list(turns)
        self.error = error
        self.failed: set[int] = set()
        self.config: dict[str, Any] = {"model_id": "scripted-strands"}

    @override
    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    @override
    def get_config(self) -> Any:
        return self.config

    @override
    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the script has no structured output")

    @override
    async def stream(
        self,
        messages: Any,
        tool_specs: Any = None,
        system_prompt: Any = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        if self.error is not None:
            raise self.error
        answered = sum(1 for message in messages if message["role"] == "assistant")
        turn = self.turns[answered]
        if turn.fail_first and answered not in self.failed:
            self.failed.add(answered)
            raise ModelThrottledException("scripted: slow down")
        for chunk in strands_chunks(turn):
            yield chunk

"""Conformance: every stream of the real-world corpus replays as the wire says.

The corpus (``<repo>/../shared/realworld``: streams recorded from live providers
by other projects) is not part of this repository. It is found beside the
checkout (or at ``$LANGHOOKS_REALWORLD``, for a checkout elsewhere); without it
these tests skip with the reason, and with
``LANGHOOKS_REALWORLD_REQUIRED=1`` (set by ``.ci/run`` when the folder exists) a
missing or unreadable corpus fails instead.

What each capture should produce is derived here from the JSON itself, by a tiny
reference decoder written for this test (not langhooks' adapters): the text and
thinking the provider sent, the tool calls the fragments spell, the finish reason
and usage reported (the last report wins), and which events carry nothing a
typed callback covers (those, and only those, go to ``on_unmapped_raw_event``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import pytest

import langhooks as lh
from langhooks.models import StreamFormat, replay_stream

from . import Recorder
from ._realworld_bedrock import expect_bedrock

# tests/models/test_realworld.py -> parents[2] is the repository root.
REALWORLD: Final = Path(
    os.environ.get("LANGHOOKS_REALWORLD")
    or Path(__file__).resolve().parents[2].parent / "shared" / "realworld"
)
REQUIRED: Final = os.environ.get("LANGHOOKS_REALWORLD_REQUIRED") == "1"
_ABSENT: Final = (
    f"the real-world corpus is not at {REALWORLD}: streams recorded from live "
    "providers (OpenAI, Anthropic, Ollama, ...) in their wire formats, kept outside "
    "the repository; point LANGHOOKS_REALWORLD at a copy to run these tests (the "
    "replay tests of tests/models/ cover the same adapters on fixtures meanwhile)"
)


#: The file extensions of captures (the corpus README's rule): SSE bodies, Ollama's
#: NDJSON, Bedrock's binary eventstream.
SUFFIXES: Final = (".sse", ".ndjson", ".bin")


def _captures() -> list[str]:
    if not REALWORLD.is_dir():
        return []
    return sorted(path.name for path in REALWORLD.iterdir() if path.suffix in SUFFIXES)


CAPTURES: Final = _captures()


def _corpus_or_skip() -> None:
    """Skip (or, when the corpus is required, fail) if the corpus is absent."""
    if REALWORLD.is_dir():
        return
    if REQUIRED:
        pytest.fail(f"LANGHOOKS_REALWORLD_REQUIRED=1 but {_ABSENT}")
    pytest.skip(_ABSENT)


def wire_format(name: str) -> str:
    """The wire format a capture's name gives (the corpus README's rule)."""
    if name.endswith(".ndjson"):
        return "ollama"
    if name.endswith(".bin"):
        return "bedrock"
    for marker, format in (
        ("_gemini_", "gemini"),
        ("_cohere_", "cohere"),
        ("_bedrock_", "bedrock"),
        ("_anthropic_", "anthropic"),
        ("_responses_", "openai-responses"),
        ("_chat_", "openai-chat"),
    ):
        if marker in name:
            return format
    raise AssertionError(f"no wire format in the capture name {name!r}")


# --- the reference decoder ----------------------------------------------------

DONE: Final = "[DONE]"


def sse_events(body: str) -> Iterator[object]:
    """The decoded events of an SSE body (JSON objects, or ``"[DONE]"``)."""
    blocks: list[list[str]] = [[]]
    for line in re.split(r"\r\n|\n|\r", body):
        if line:
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])  # a blank line ends an event
    for block in blocks:
        data: list[str] = []
        name = None
        for line in block:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
        if not data:
            continue
        text = "\n".join(data)
        if text.strip() == DONE:
            yield DONE
            continue
        event = json.loads(text)
        if name is not None and "type" not in event:
            event["type"] = name
        yield event


def ndjson_events(body: str) -> Iterator[object]:
    """The decoded lines of an NDJSON body."""
    for line in body.splitlines():
        if line.strip():
            yield json.loads(line)


@attrs.define
class Call:
    """A tool call as the wire spells it."""

    id: str | None
    name: str
    arguments: str = ""
    restated: str | None = None

    def parsed(self) -> dict[str, Any]:
        text = self.restated if self.restated is not None else self.arguments
        return json.loads(text) if text.strip() else {}


@attrs.define
class Expected:
    """What a capture should replay to."""

    text: str = ""
    thinking: str = ""
    calls: list[Call] = attrs.field(factory=list)
    finish: str | None = None  # the FinishReason value
    usage: tuple[int, int] | None = None
    unmapped: list[object] = attrs.field(factory=list)
    error_code: str | None = None
    id: str | None = None


_CHAT_FINISH: Final = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_execution",
    "function_call": "tool_execution",
    "content_filter": "content_filter",
}
_CHAT_FRAMING: Final = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "choices",
        "usage",
        "system_fingerprint",
        "service_tier",
        "obfuscation",
        "provider",
        "citations",
        "search_results",
    }
)
_CHAT_DELTA: Final = frozenset(
    {
        "role",
        "content",
        "refusal",
        "tool_calls",
        "reasoning_content",
        "reasoning",
        "reasoning_details",
    }
)


def _chat_usage(usage: Mapping[str, Any]) -> tuple[int, int]:
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    details = usage.get("completion_tokens_details") or {}
    reasoning = details.get("reasoning_tokens") or 0
    # Some servers (xAI) leave the reasoning out of completion_tokens; the total
    # then shows it, and output tokens include thinking.
    if reasoning and usage.get("total_tokens") == prompt + completion + reasoning:
        completion += reasoning
    return prompt, completion


def expect_chat(events: list[object]) -> Expected:
    out = Expected()
    by_index: dict[int, Call] = {}
    for event in events:
        if event == DONE:
            break
        assert isinstance(event, dict)
        if event.get("error"):
            error = event["error"]
            out.error_code = error.get("code") or error.get("type")
            break
        out.id = out.id or event.get("id") or None
        typed = bool(event.get("usage")) or any(
            event.get(key) for key in ("citations", "search_results")
        )
        extra = any(value for key, value in event.items() if key not in _CHAT_FRAMING)
        if event.get("usage"):
            out.usage = _chat_usage(event["usage"])
        for choice in event.get("choices") or ():
            if choice.get("index", 0) != 0:
                extra = True
                continue
            delta = choice.get("delta") or {}
            thinking = delta.get("reasoning_content")
            if thinking is None:
                thinking = delta.get("reasoning")
            if thinking:
                out.thinking += thinking
                typed = True
            content = delta.get("content")
            if isinstance(content, list):
                for part in content:
                    if part.get("type") == "text":
                        out.text += part["text"]
                        typed = True
                    elif part.get("type") == "thinking":
                        inner = part["thinking"]
                        out.thinking += (
                            inner
                            if isinstance(inner, str)
                            else "".join(p.get("text", "") for p in inner)
                        )
                        typed = True
                    else:
                        extra = True
            elif content:
                out.text += content
                typed = True
            if delta.get("refusal"):
                out.text += delta["refusal"]
                typed = True
            if delta.get("reasoning_details"):
                typed = True
            for fragment in delta.get("tool_calls") or ():
                typed = True
                function = fragment.get("function") or {}
                index = fragment.get("index")
                call_id = fragment.get("id") or None
                name = function.get("name") or None
                if index is None:
                    call = out.calls[-1] if name is None and out.calls else None
                else:
                    call = by_index.get(index)
                if call is None or (
                    call_id is not None and call.id is not None and call_id != call.id
                ):
                    assert name is not None
                    call = Call(call_id, name)
                    out.calls.append(call)
                    if index is not None:
                        by_index[index] = call
                elif call.id is None:
                    call.id = call_id
                call.arguments += function.get("arguments") or ""
            if any(
                value is not None
                for key, value in delta.items()
                if key not in _CHAT_DELTA
            ):
                extra = True
            if choice.get("finish_reason") is not None:
                out.finish = _CHAT_FINISH.get(choice["finish_reason"], "other")
                typed = True
        if extra and not typed:
            out.unmapped.append(event)
    return out


_RESPONSES_TYPED: Final = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.completed",
        "response.incomplete",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.refusal.delta",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
    }
)
_RESPONSES_ITEMS: Final = frozenset(
    {"message", "reasoning", "function_call", "custom_tool_call"}
)


def expect_responses(events: list[object]) -> Expected:
    out = Expected()
    calls: dict[str, Call] = {}
    custom: set[str] = set()
    for event in events:
        assert isinstance(event, dict)
        kind = event["type"]
        if kind == "error":
            error = event.get("error") or event
            out.error_code = error.get("code") or error.get("type")
            break
        if kind == "response.failed":
            out.error_code = (event["response"].get("error") or {}).get("code")
            break
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            out.text += event["delta"]
        elif kind in (
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ):
            out.thinking += event["delta"]
        elif kind in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            calls[event["item_id"]].arguments += event["delta"]
        elif kind == "response.function_call_arguments.done":
            calls[event["item_id"]].restated = event["arguments"]
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = event["item"]
            if item["type"] not in _RESPONSES_ITEMS:
                out.unmapped.append(event)
            elif item["type"] in ("function_call", "custom_tool_call"):
                key = item.get("id") or item["call_id"]
                if kind.endswith("added"):
                    calls[key] = Call(item["call_id"], item["name"])
                    out.calls.append(calls[key])
                    if item["type"] == "custom_tool_call":
                        custom.add(key)
                elif item["type"] == "function_call":
                    calls[key].restated = item["arguments"]
                else:
                    calls[key].restated = json.dumps({"input": item["input"]})
        elif kind in ("response.completed", "response.incomplete"):
            response = event["response"]
            usage = response.get("usage")
            if usage:
                out.usage = (usage["input_tokens"], usage["output_tokens"])
            out.id = response["id"]
            if kind == "response.completed":
                out.finish = "stop"
            else:
                why = str((response.get("incomplete_details") or {}).get("reason"))
                out.finish = {
                    "max_output_tokens": "length",
                    "content_filter": "content_filter",
                }.get(why, "other")
        elif kind not in _RESPONSES_TYPED:
            out.unmapped.append(event)
    for key in custom:
        call = calls[key]
        if call.restated is None:
            call.restated = json.dumps({"input": call.arguments})
        call.arguments = json.dumps({"input": call.arguments})
    return out


_ANTHROPIC_STOP: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_execution",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_ANTHROPIC_BLOCKS: Final = frozenset(
    {"text", "thinking", "redacted_thinking", "tool_use"}
)
_ANTHROPIC_DELTAS: Final = frozenset(
    {"text_delta", "thinking_delta", "signature_delta", "input_json_delta"}
)


def expect_anthropic(events: list[object]) -> Expected:
    out = Expected()
    blocks: dict[int, str] = {}
    tools: dict[int, Call] = {}
    usage: dict[str, Any] = {}
    for event in events:
        assert isinstance(event, dict)
        kind = event["type"]
        if kind == "error":
            out.error_code = event["error"]["type"]
            break
        if kind == "message_start":
            out.id = event["message"]["id"]
            usage.update(
                {k: v for k, v in event["message"]["usage"].items() if v is not None}
            )
        elif kind == "message_delta":
            reason = event["delta"].get("stop_reason")
            if reason is not None:
                out.finish = _ANTHROPIC_STOP.get(reason, "other")
            usage.update({k: v for k, v in event["usage"].items() if v is not None})
        elif kind == "content_block_start":
            block = event["content_block"]
            blocks[event["index"]] = block["type"]
            if block["type"] not in _ANTHROPIC_BLOCKS:
                out.unmapped.append(event)
            elif block["type"] == "text":
                out.text += block.get("text", "")
            elif block["type"] == "thinking":
                out.thinking += block.get("thinking", "")
            elif block["type"] == "tool_use":
                call = tools[event["index"]] = Call(block["id"], block["name"])
                if block.get("input"):
                    call.arguments = json.dumps(block["input"])
                out.calls.append(call)
        elif kind == "content_block_delta":
            delta = event["delta"]
            if (
                blocks[event["index"]] not in _ANTHROPIC_BLOCKS
                or delta["type"] not in _ANTHROPIC_DELTAS
            ):
                out.unmapped.append(event)
            elif delta["type"] == "text_delta":
                out.text += delta["text"]
            elif delta["type"] == "thinking_delta":
                out.thinking += delta["thinking"]
            elif delta["type"] == "input_json_delta":
                tools[event["index"]].arguments += delta["partial_json"]
        elif kind == "content_block_stop":
            if blocks[event["index"]] not in _ANTHROPIC_BLOCKS:
                out.unmapped.append(event)
        elif kind != "message_stop":
            out.unmapped.append(event)
    if usage:
        out.usage = (
            usage.get("input_tokens", 0)
            + usage.get("cache_read_input_tokens", 0)
            + usage.get("cache_creation_input_tokens", 0),
            usage.get("output_tokens", 0),
        )
    return out


def expect_ollama(events: list[object]) -> Expected:
    out = Expected()
    for event in events:
        assert isinstance(event, dict)
        if event.get("error"):
            out.error_code = None
            break
        message = event.get("message") or {}
        out.thinking += message.get("thinking") or ""
        out.text += message.get("content") or ""
        for call in message.get("tool_calls") or ():
            function = call["function"]
            arguments = function.get("arguments")
            out.calls.append(
                Call(
                    call.get("id"),
                    function["name"],
                    arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments or {}),
                )
            )
        if event.get("done"):
            out.finish = {"stop": "stop", "length": "length"}.get(
                event.get("done_reason") or "stop", "other"
            )
            out.usage = (event.get("prompt_eval_count", 0), event.get("eval_count", 0))
    return out


_GEMINI_FINISH: Final = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}
_GEMINI_KEPT: Final = ("groundingMetadata", "urlContextMetadata", "citationMetadata")


def expect_gemini(events: list[object]) -> Expected:
    out = Expected()
    for event in events:
        assert isinstance(event, dict)
        if event.get("error") is not None:
            out.error_code = event["error"].get("status")
            break
        out.id = out.id or event.get("responseId")
        usage = event.get("usageMetadata")
        if usage is not None:
            out.usage = (
                usage.get("promptTokenCount", 0),
                usage.get("candidatesTokenCount", 0)
                + usage.get("thoughtsTokenCount", 0),
            )
        typed = extra = False
        for candidate in event.get("candidates") or ():
            if candidate.get("index", 0) != 0:
                extra = True
                continue
            for part in (candidate.get("content") or {}).get("parts") or ():
                if "functionCall" in part:
                    call = part["functionCall"]
                    out.calls.append(
                        Call(call.get("id"), call["name"], json.dumps(call.get("args")))
                    )
                    typed = True
                elif "text" in part:
                    if part.get("thought") is True:
                        out.thinking += part["text"]
                    else:
                        out.text += part["text"]
                    typed = True
                else:
                    extra = True
            if any(candidate.get(key) for key in _GEMINI_KEPT):
                extra = True
            if candidate.get("finishReason"):
                out.finish = _GEMINI_FINISH.get(candidate["finishReason"], "other")
                typed = True
        if (event.get("promptFeedback") or {}).get("blockReason"):
            out.finish = "content_filter"
            typed = True
        if extra and not typed:
            out.unmapped.append(event)
        if out.finish is not None:
            break
    return out


_COHERE_FINISH: Final = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_execution",
}


def expect_cohere(events: list[object]) -> Expected:
    out = Expected()
    calls: dict[int, Call] = {}
    for event in events:
        assert isinstance(event, dict)
        kind = event["type"]
        message = (event.get("delta") or {}).get("message") or {}
        if kind == "message-start":
            out.id = event["id"]
        elif kind in ("content-start", "content-delta"):
            content = message.get("content") or {}
            out.thinking += content.get("thinking") or ""
            out.text += content.get("text") or ""
        elif kind == "tool-plan-delta":
            out.thinking += message.get("tool_plan") or ""
        elif kind == "tool-call-start":
            call = message["tool_calls"]
            function = call["function"]
            calls[event["index"]] = Call(
                call.get("id"), function["name"], function.get("arguments") or ""
            )
            out.calls.append(calls[event["index"]])
        elif kind == "tool-call-delta":
            function = message["tool_calls"]["function"]
            calls[event["index"]].arguments += function.get("arguments") or ""
        elif kind == "message-end":
            delta = event["delta"]
            if delta.get("finish_reason") in ("ERROR", "TIMEOUT"):
                out.error_code = delta["finish_reason"]
                break
            out.finish = _COHERE_FINISH.get(delta.get("finish_reason"), "other")
            usage = delta.get("usage")
            if usage is not None:
                tokens = usage.get("tokens") or {}
                out.usage = (
                    tokens.get("input_tokens", 0),
                    tokens.get("output_tokens", 0),
                )
            break
        elif kind not in ("content-end", "tool-call-end"):
            out.unmapped.append(event)
    return out


def _text(body: bytes) -> str:
    return body.decode("utf-8-sig")


#: Each wire format's reference decoder: a capture's body -> what it should
#: replay to. A format that gets a decoder adds one line here.
REFERENCE: Final[dict[str, Callable[[bytes], Expected]]] = {
    "ollama": lambda body: expect_ollama(list(ndjson_events(_text(body)))),
    "openai-chat": lambda body: expect_chat(list(sse_events(_text(body)))),
    "openai-responses": lambda body: expect_responses(list(sse_events(_text(body)))),
    "anthropic": lambda body: expect_anthropic(list(sse_events(_text(body)))),
    "gemini": lambda body: expect_gemini(list(sse_events(_text(body)))),
    "cohere": lambda body: expect_cohere(list(sse_events(_text(body)))),
    "bedrock": expect_bedrock,
}


def _format(name: str) -> StreamFormat:
    """The capture's wire format, which has a reference decoder."""
    format = wire_format(name)
    assert format in REFERENCE, f"no reference decoder for {format!r}"
    return format  # type: ignore[return-value]  # a format with a decoder


def expected(name: str) -> Expected:
    """What the capture ``name`` says, read by the reference decoder."""
    return REFERENCE[_format(name)]((REALWORLD / name).read_bytes())


# --- the checks ---------------------------------------------------------------


def replay(
    name: str, *, bytewise: bool = False
) -> tuple[Recorder, lh.ChatResponse | lh.LangHooksError]:
    """Replay a capture (whole, or one byte at a time) into a new recorder."""
    path = REALWORLD / name
    recorder = Recorder()
    source: object = path
    if bytewise:
        data = path.read_bytes()
        source = [data[i : i + 1] for i in range(len(data))]
    try:
        result: lh.ChatResponse | lh.LangHooksError = replay_stream(
            source,  # type: ignore[arg-type]  # a path or a list of bytes
            format=_format(name),
            handler=recorder,
        )
    except lh.LangHooksError as error:
        result = error
    return recorder, result


def _check_tool_calls(recorder: Recorder, want: list[Call]) -> None:
    fragments: dict[int, str] = {}
    completed: dict[int, lh.ToolCall] = {}
    for event, payload in recorder.events:
        if event == "partial_tool_call":
            assert payload.index not in completed, "a fragment after its completion"
            fragments[payload.index] = (
                fragments.get(payload.index, "") + payload.partial_arguments
            )
        elif event == "complete_tool_call":
            index = payload.index
            assert index not in completed, f"tool call {index} completed twice"
            completed[index] = payload.tool_call
            spelled = fragments.get(index, "")
            assert (json.loads(spelled) if spelled.strip() else {}) == dict(
                payload.tool_call.arguments
            ), f"the fragments of call {index} do not spell its arguments"
    assert sorted(completed) == list(range(len(want)))
    for index, call in enumerate(want):
        got = completed[index]
        assert got.name == call.name
        assert dict(got.arguments) == call.parsed()
        assert got.call_id == (call.id or f"call_{index}")


def _comparable(recorder: Recorder) -> list[tuple[str, object]]:
    """The recorded events, errors as (type, message) (they compare by identity)."""
    return [
        (name, (payload.type, payload.message) if name == "error" else payload)
        for name, payload in recorder.events
    ]


@pytest.mark.parametrize("name", CAPTURES or ["(no corpus)"])
class TestCorpus:
    """Each capture replays with the invariants users rely on."""

    def test_replays_as_the_wire_says(self, name: str) -> None:
        """Text, thinking, tool calls, finish, usage and unmapped events match."""
        _corpus_or_skip()
        want = expected(name)
        recorder, result = replay(name)
        assert recorder.violations == []
        assert len(recorder.terminal_calls) == 1
        assert recorder.text == want.text
        assert recorder.thinking == want.thinking
        _check_tool_calls(recorder, want.calls)
        assert recorder.payloads("unmapped_raw_event") == want.unmapped
        if want.finish is None:
            assert isinstance(result, lh.LangHooksError)
            assert recorder.terminal_calls == [("error", result)]
            if want.error_code is not None:
                assert result.metadata["error_code"] == want.error_code
            return
        assert isinstance(result, lh.ChatResponse), result
        assert recorder.terminal_calls == [("complete_response", result)]
        finish = "tool_execution" if want.calls else want.finish
        assert result.finish_reason is lh.FinishReason(finish)
        if want.usage is None:
            assert result.token_usage is None
        else:
            assert result.token_usage is not None
            assert (
                result.token_usage.input_tokens,
                result.token_usage.output_tokens,
            ) == want.usage
        assert result.message.text == want.text
        assert result.message.thinking == want.thinking
        if want.id is not None:
            assert result.id == want.id

    def test_one_byte_pieces_replay_the_same(self, name: str) -> None:
        """Bytes arriving one at a time give identical callbacks and result."""
        _corpus_or_skip()
        whole, result = replay(name)
        pieces, piecewise = replay(name, bytewise=True)
        assert _comparable(pieces) == _comparable(whole)
        if isinstance(result, lh.LangHooksError):
            assert isinstance(piecewise, lh.LangHooksError)
            assert (piecewise.type, piecewise.message) == (result.type, result.message)
        else:
            assert piecewise == result


class TestCorpusIndex:
    """The corpus is whole, and what it documents is where the docs say."""

    def test_every_listed_capture_is_replayed(self) -> None:
        """The captures present are exactly the ones the corpus README lists."""
        _corpus_or_skip()
        readme = (REALWORLD / "README.md").read_text(encoding="utf-8")
        listed = sorted(
            set(re.findall(r"^\| `([^`]+\.(?:sse|ndjson|bin))` \|", readme, re.M))
        )
        assert listed == CAPTURES
        assert len(CAPTURES) == 107

    def test_perplexity_citations_are_kept(self) -> None:
        """Perplexity's citations and search results reach the response metadata."""
        _corpus_or_skip()
        name = "vercel_chat_perplexity_citations.sse"
        _, result = replay(name)
        assert isinstance(result, lh.ChatResponse)
        last = [
            event
            for event in sse_events((REALWORLD / name).read_text(encoding="utf-8"))
            if isinstance(event, dict)
        ][-1]
        assert result.metadata["citations"] == last["citations"]

    def test_openrouter_signature_is_kept(self) -> None:
        """OpenRouter's signature-only reasoning detail is kept to send back."""
        _corpus_or_skip()
        _, result = replay("fantasy_chat_openrouter_claude_reasoning_tool.sse")
        assert isinstance(result, lh.ChatResponse)
        (detail,) = result.message.metadata["reasoning_details"]
        assert detail["type"] == "reasoning.text"
        assert detail["signature"].startswith("Eq0ECkgIDRABGAIqQM")
        assert detail["text"] == result.message.thinking

    def test_custom_tool_call_is_a_tool_call(self) -> None:
        """A Responses custom tool call is a tool call, its input under "input"."""
        _corpus_or_skip()
        _, result = replay("vercel_responses_custom_tool.sse")
        assert isinstance(result, lh.ChatResponse)
        assert result.finish_reason is lh.FinishReason.TOOL_EXECUTION
        (call,) = result.message.tool_calls
        assert dict(call.arguments) == {"input": "SELECT * FROM users WHERE age > 25"}
        assert result.message.metadata["custom_tool_calls"] == ("call_custom_sql_001",)

    def test_gemini_signatures_are_kept(self) -> None:
        """A Gemini call's thoughtSignature is kept by call id, the text's apart."""
        _corpus_or_skip()
        _, result = replay("vercel_gemini_text_then_call_with_id.sse")
        assert isinstance(result, lh.ChatResponse)
        (call,) = result.message.tool_calls
        signatures = result.message.metadata["thought_signatures"]
        assert list(signatures) == [call.call_id]
        assert signatures[call.call_id]
        _, text = replay("vercel_gemini_text.sse")
        assert isinstance(text, lh.ChatResponse)
        assert text.message.metadata["thinking_signature"].startswith("EqsFCqgFAb4")

    def test_gemini_grounding_is_kept(self) -> None:
        """Gemini's grounding metadata reaches the response metadata."""
        _corpus_or_skip()
        _, result = replay("pydanticai_gemini_search_grounding.sse")
        assert isinstance(result, lh.ChatResponse)
        assert result.metadata["grounding_metadata"]["groundingChunks"]

    def test_cohere_tool_plan_is_kept(self) -> None:
        """Cohere's tool plan is thinking, and kept whole to send back."""
        _corpus_or_skip()
        _, result = replay("vercel_cohere_tool_plan_two_calls.sse")
        assert isinstance(result, lh.ChatResponse)
        assert result.message.metadata["tool_plan"] == result.message.thinking
        assert result.token_usage is not None
        assert result.token_usage.raw["billed_units"]

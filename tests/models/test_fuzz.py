"""Fuzzing each format: mutated and truncated fixtures never break the contract.

Whatever the bytes, a replay either returns a valid ``ChatResponse`` after exactly
one ``on_complete_response``, or raises exactly one ``LangHooksError`` after exactly
one ``on_error`` with that error, and never calls the handler after its terminal
call. Nothing else escapes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import langhooks as lh
from langhooks.models import replay_stream

from . import Recorder, local_fixture

FIXTURES: dict[str, list[Path]] = {
    "openai-chat": [
        local_fixture("openai_chat_tools.sse"),
        local_fixture("openai_compat_reasoning_content.sse"),
        local_fixture("openai_chat_error_midstream.sse"),
        local_fixture("openai_chat_interleaved_tools.sse"),
        local_fixture("openai_chat_whole_tool_call.sse"),
        local_fixture("openai_chat_keepalive_crlf.sse"),
    ],
    "openai-responses": [
        local_fixture("openai_responses.sse"),
        local_fixture("openai_responses_error_nested.sse"),
        local_fixture("openai_responses_incomplete.sse"),
    ],
    "anthropic": [
        local_fixture("anthropic_thinking_tool.sse"),
        local_fixture("anthropic_max_tokens_tool.sse"),
        local_fixture("anthropic_refusal.sse"),
    ],
    "ollama": [
        local_fixture("ollama_chat.ndjson"),
        local_fixture("ollama_chat_tools.ndjson"),
        local_fixture("ollama_error_midstream.ndjson"),
    ],
}
FORMATS = list(FIXTURES)

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 300)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["[DONE]", "tool_use", "function_call", "stop", "length"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "index", "delta", "id"]), inner, max_size=3
        )
    ),
    max_leaves=6,
)


def _check(format: str, chunks: list[bytes]) -> None:
    """Replay ``chunks`` and assert the contract held."""
    recorder = Recorder()
    outcome: lh.ChatResponse | lh.LangHooksError
    try:
        outcome = replay_stream(
            chunks,
            format=format,  # type: ignore[arg-type]
            handler=recorder,
        )
    except lh.LangHooksError as error:
        outcome = error
    if isinstance(outcome, lh.LangHooksError):
        assert recorder.terminal_calls == [("error", outcome)]
        assert recorder.events[-1] == ("error", outcome)
    else:
        response = outcome
        assert isinstance(response, lh.ChatResponse)
        assert recorder.terminal_calls == [("complete_response", response)]
        assert recorder.events[-1] == ("complete_response", response)
        assert response.message.text == recorder.text
        assert response.message.thinking == recorder.thinking
        completed = [c.tool_call for c in recorder.payloads("complete_tool_call")]
        assert list(response.message.tool_calls) == completed
    assert recorder.violations == []


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(max(c, 0), len(data)) for c in cuts})
    return [data[i:j] for i, j in zip([0, *points], [*points, len(data)], strict=True)]


def _events(format: str, path: Path) -> list[tuple[str | None, Any]]:
    """The fixture as (event name, JSON or raw data) pairs."""
    text = path.read_bytes().decode()
    if format == "ollama":
        return [(None, json.loads(line)) for line in text.splitlines() if line]
    events: list[tuple[str | None, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            raw = "\n".join(data)
            events.append((name, raw if raw == "[DONE]" else json.loads(raw)))
    return events


def _encode(format: str, events: list[tuple[str | None, Any]]) -> bytes:
    parts = []
    for name, value in events:
        payload = value if isinstance(value, str) else json.dumps(value)
        if format == "ollama":
            parts.append(payload + "\n")
        else:
            parts.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(parts).encode()


def _slots(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) inside a JSON value."""
    found: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((value, key))
            found.extend(_slots(item))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append((value, index))
            found.extend(_slots(item))
    return found


class TestFuzz:
    """One property per format, over byte-level and structural mutations."""

    @pytest.mark.parametrize("format", FORMATS)
    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(data=st.data())
    def test_byte_mutations(self, format: str, data: st.DataObject) -> None:
        """Truncated, cut, spliced or corrupted bytes keep the contract."""
        path = data.draw(st.sampled_from(FIXTURES[format]))
        body = bytearray(path.read_bytes())
        for _ in range(data.draw(st.integers(0, 3))):
            at = data.draw(st.integers(0, len(body)))
            action = data.draw(st.sampled_from(["cut", "insert", "replace", "dup"]))
            size = data.draw(st.integers(1, 40))
            if action == "cut":
                del body[at : at + size]
            elif action == "insert":
                body[at:at] = data.draw(st.binary(min_size=1, max_size=size))
            elif action == "replace":
                body[at : at + size] = data.draw(st.binary(max_size=size))
            else:
                body[at:at] = body[at : at + size * 8]
        if data.draw(st.booleans()):
            body = body[: data.draw(st.integers(0, len(body)))]
        cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=8))
        _check(format, _split(bytes(body), cuts))

    @pytest.mark.parametrize("format", FORMATS)
    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(data=st.data())
    def test_structural_mutations(self, format: str, data: st.DataObject) -> None:
        """Events with values of the wrong type, missing keys, dropped or repeated
        events, in any order, keep the contract."""
        path = data.draw(st.sampled_from(FIXTURES[format]))
        events = copy.deepcopy(_events(format, path))
        for _ in range(data.draw(st.integers(1, 4))):
            if not events:
                break
            index = data.draw(st.integers(0, len(events) - 1))
            action = data.draw(
                st.sampled_from(
                    ["value", "delete", "drop", "repeat", "swap", "replace"]
                )
            )
            name, value = events[index]
            slots = _slots(value)
            if action == "value" and slots:
                container, key = data.draw(st.sampled_from(slots))
                container[key] = data.draw(_json)
            elif action == "delete" and slots:
                container, key = data.draw(st.sampled_from(slots))
                del container[key]
            elif action == "drop":
                del events[index]
            elif action == "repeat":
                events.insert(index, copy.deepcopy(events[index]))
            elif action == "swap":
                other = data.draw(st.integers(0, len(events) - 1))
                events[index], events[other] = events[other], events[index]
            else:
                events[index] = (name, data.draw(_json))
        if data.draw(st.booleans()) and events:
            events = events[: data.draw(st.integers(0, len(events)))]
        _check(format, [_encode(format, events)])

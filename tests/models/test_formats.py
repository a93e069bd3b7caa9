"""The wire-format registry: one entry per format, read by every place that lists them.

A format added to ``FORMATS`` (and nowhere else) must be taken by the driver, the
decoders, ``replay_stream``, the ``langhooks replay`` command (its help, the file
names that imply a format, the "this looks like" hint) and the OpenTelemetry
provider name: these tests add one and look for it in each.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from langhooks.cli import main
from langhooks.integrations._otel import _calls as otel_calls
from langhooks.models import (
    STREAM_FORMATS,
    OllamaChatModel,
    OpenAIChatModel,
    ScriptedChatModel,
    StreamDriver,
    StreamFormat,
    replay_stream,
    stream_events,
)
from langhooks.models._adapters.openai_chat import OpenAIChatAdapter
from langhooks.models._formats import (
    FORMATS,
    WireFormat,
    format_named,
    looks_like,
    provider_name,
)

from . import Recorder, local_fixture

# A format nobody else lists: OpenAI's chat stream under another name and marks.
_NEW = WireFormat(
    "example-chat",  # type: ignore[arg-type]  # a name StreamFormat does not know
    OpenAIChatAdapter,
    "sse",
    "example.provider",
    (b"example-mark",),
    suffixes=(".examplesse",),
)


@pytest.fixture
def new_format(monkeypatch: pytest.MonkeyPatch) -> WireFormat:
    """``_NEW`` in the registry, for one test."""
    monkeypatch.setitem(FORMATS, _NEW.name, _NEW)
    return _NEW


def _capture(tmp_path: Path, name: str) -> Path:
    """An OpenAI chat capture saved as ``name``."""
    data = local_fixture("openai_chat_interleaved_tools.sse").read_bytes()
    path = tmp_path / name
    path.write_bytes(data)
    return path


class TestRegistry:
    def test_names_match_the_literal(self) -> None:
        """``StreamFormat``, ``STREAM_FORMATS`` and the registry name the same
        formats in the same order, each under its own name."""
        assert tuple(FORMATS) == get_args(StreamFormat) == STREAM_FORMATS
        assert all(name == entry.name for name, entry in FORMATS.items())

    def test_provider_names_are_the_conventions(self) -> None:
        """Each provider name is OpenTelemetry's value for it (Ollama has none in
        the conventions: its own name)."""
        known = {value.value for value in gen_ai.GenAiProviderNameValues}
        for entry in FORMATS.values():
            assert entry.provider in known | {"ollama"}, entry.name

    def test_each_capture_is_recognised(self) -> None:
        """A capture of each format with a fixture looks like its own format."""
        fixtures = {
            "openai-chat": "openai_chat_tools.sse",
            "openai-responses": "openai_responses.sse",
            "anthropic": "anthropic_thinking_tool.sse",
            "ollama": "ollama_chat.ndjson",
            "gemini": "gemini_text.sse",
            "cohere": "cohere_thinking_text.sse",
        }
        for format, name in fixtures.items():
            entry = looks_like(local_fixture(name).read_bytes()[:65536])
            assert entry is not None, name
            assert entry.name == format, name
        assert looks_like(b"data: nothing known\n\n") is None

    def test_ndjson_marks_need_a_json_line(self) -> None:
        """An NDJSON format's mark counts only in a capture that starts with ``{``."""
        assert looks_like(b'data: {"done": true}\n\n') is None
        entry = looks_like(b'  {"done": true}\n')
        assert entry is not None
        assert entry.name == "ollama"

    def test_unknown_name(self) -> None:
        """An unknown name is a ValueError listing the known ones."""
        with pytest.raises(
            ValueError, match=r"unknown stream format 'grpc'.*anthropic"
        ):
            format_named("grpc")
        with pytest.raises(ValueError, match="unknown stream format 3"):
            format_named(3)

    def test_provider_name_of_a_class(self) -> None:
        """A model class's own ``_provider_name`` wins over its format's; a class
        with neither has none."""
        assert provider_name(OpenAIChatModel) == "openai"
        assert provider_name(OllamaChatModel) == "ollama"
        assert provider_name(ScriptedChatModel) == "langhooks.scripted"
        assert provider_name(object) is None

        class Unknown:
            _format = "grpc"

        assert provider_name(Unknown) is None


class TestANewFormatNeedsNoOtherEdit:
    """A format added to the registry only is known everywhere formats are."""

    def test_driver_decoder_and_replay(self, new_format: WireFormat) -> None:
        recorder = Recorder()
        path = local_fixture("openai_chat_interleaved_tools.sse")
        response = replay_stream(path, format=new_format.name, handler=recorder)
        assert response.message.tool_calls
        assert recorder.violations == []
        driver = StreamDriver(new_format.name, Recorder())
        assert driver.format is new_format.name
        assert stream_events(new_format.name).feed(b'data: {"a": 1}\n\n') == [{"a": 1}]

    def test_cli_help_and_suffix(
        self,
        new_format: WireFormat,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """The help lists it, its file ending implies it."""
        with pytest.raises(SystemExit):
            main(["replay", "--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert "example-chat" in help_text
        assert "example-chat for a .examplesse file" in help_text
        assert main(["replay", str(_capture(tmp_path, "turn.examplesse"))]) == 0
        assert "on_complete_tool_call" in capsys.readouterr().out
        assert main(["replay", str(_capture(tmp_path, "turn.sse"))]) == 2
        error = capsys.readouterr().err
        assert "example-chat" in error
        assert ".examplesse" in error

    def test_cli_hint(
        self,
        new_format: WireFormat,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A failed replay whose capture carries its mark hints at it."""
        path = tmp_path / "turn.sse"
        path.write_bytes(b": example-mark\n\ndata: {}\n\n")
        assert main(["replay", str(path), "--format", "anthropic"]) == 1
        assert "try --format example-chat" in capsys.readouterr().err

    def test_opentelemetry_provider(self, new_format: WireFormat) -> None:
        """A langhooks model speaking it reports its provider name."""

        class ExampleModel:
            _format = "example-chat"

        ExampleModel.__module__ = "langhooks.models._example"
        assert otel_calls.provider(ExampleModel()) == "example.provider"
        assert otel_calls.provider(ScriptedChatModel([])) == "langhooks.scripted"


def test_unknown_format_in_the_driver() -> None:
    """The driver rejects an unknown format by the registry's message."""
    with pytest.raises(ValueError, match="unknown stream format"):
        StreamDriver("grpc", Recorder())  # type: ignore[arg-type]  # the wrong name on purpose

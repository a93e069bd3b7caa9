"""``replay_stream``: drive a handler with a recorded or captured provider stream."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

from .._core._messages import ChatResponse, LangHooksError
from .._core._streaming import StreamingChatResponseHandler, StreamingHandle
from ._drive_sync import StreamDriver
from ._formats import StreamFormat, format_named
from ._run_sync import pump
from ._sse import stream_events

__all__ = ["replay_stream"]

# Read a recorded file in socket-sized pieces: memory stays flat for any size.
_READ_SIZE: Final = 64 * 1024


def replay_stream(
    source: str | os.PathLike[str] | Iterable[str | bytes],
    *,
    format: StreamFormat,
    handler: StreamingChatResponseHandler,
    handle: StreamingHandle | None = None,
) -> ChatResponse:
    """Replay a provider stream into ``handler``, exactly as a live one would.

    Args:
        source: a path to a recorded body (``.sse`` or ``.ndjson``), or an
            iterable of str or bytes chunks of the body, split anywhere (as read
            from a socket).
        format: one of ``STREAM_FORMATS``: "openai-chat" (also Mistral),
            "openai-responses", "anthropic", "ollama", "gemini", "cohere", ...
        handler: the handler to drive.
        handle: a cancel handle to hold before the stream starts; one is created
            otherwise (each partial's context carries it).

    Returns:
        The assembled response; its message has status "cancelled" when the
        handle was cancelled (and then no further callback was made).

    Raises:
        LangHooksError: an error event in the stream, malformed data, or a stream
            that ends before its terminal event; ``handler.on_error`` was called
            once first.
        ValueError: ``format`` is unknown.
        TypeError: ``source`` or ``handler`` has the wrong type.
        OSError: the file cannot be read.
    """
    format_named(format)  # ValueError for an unknown one
    given: object = source
    if isinstance(given, bytes | bytearray):
        raise TypeError("source must be a path or an iterable of chunks, got bytes")
    driver = StreamDriver(format, handler, handle=handle)
    decoder = stream_events(format)
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as file:
            chunks = iter(lambda: file.read(_READ_SIZE), b"")
            return driver.guard(lambda: pump(driver, chunks, decoder, _read_error))
    try:
        pieces = iter(source)
    except TypeError:
        raise TypeError(
            f"source must be a path or an iterable of chunks, got "
            f"{type(source).__name__}"
        ) from None
    return driver.guard(lambda: pump(driver, pieces, decoder, _read_error))


def _read_error(exc: Exception) -> LangHooksError:
    # The source failed, as a connection can.
    return LangHooksError(
        "stream_error",
        f"reading the stream failed: {type(exc).__name__}: {exc}",
        original=exc,
    )

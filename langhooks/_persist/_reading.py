"""``read_events``: a recording (JSON Lines an ``EventRecorder`` wrote) read back."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from typing import Any, Final

from . import _codec
from ._records import EventRecord

__all__ = ["read_events", "read_numbered_events"]

_logger: Final = logging.getLogger("langhooks")


def read_events(
    source: str | os.PathLike[str] | Iterable[str | bytes],
) -> Iterator[EventRecord]:
    """The records of a recording, lazily, in order.

    A last line that does not parse (a writer that crashed mid-record) is reported
    with a warning on the ``langhooks`` logger and skipped; the records before it
    are all delivered. Blank lines are skipped.

    Args:
        source: a path to a JSON Lines file an ``EventRecorder`` wrote, or an
            iterable of such lines (str or bytes).

    Returns:
        An iterator of ``EventRecord``.

    Raises:
        ValueError: a line other than the last is not a valid record (the message
            gives its line number).
        OSError: the path cannot be read.
    """
    return (record for _number, record in read_numbered_events(source))


def read_numbered_events(
    source: str | os.PathLike[str] | Iterable[str | bytes],
) -> Iterator[tuple[int, EventRecord]]:
    """``read_events``, each record with the number of its line (from 1).

    Raises:
        ValueError: as ``read_events``.
        OSError: as ``read_events``.
    """
    if isinstance(source, str | os.PathLike):
        return _read_path(source)
    return _read_lines(source, "the recording")


def _read_path(path: str | os.PathLike[str]) -> Iterator[tuple[int, EventRecord]]:
    with open(path, encoding="utf-8") as file:
        yield from _read_lines(file, os.fspath(path))


def _read_lines(
    lines: Iterable[str | bytes], where: str
) -> Iterator[tuple[int, EventRecord]]:
    pending: tuple[int, str | bytes] | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if pending is not None:
            yield pending[0], _parse(*pending, where)
        pending = (number, line)
    if pending is None:
        return
    number, line = pending
    try:
        data = _codec.parse_json(line)
    except ValueError:
        _logger.warning(
            "langhooks: %s: line %d, the last line, is incomplete (a writer stopped "
            "mid-record?); it was skipped",
            where,
            number,
        )
        return
    yield number, _record_from(data, number, where)


def _parse(number: int, line: str | bytes, where: str) -> EventRecord:
    try:
        data = _codec.parse_json(line)
    except ValueError as error:
        raise ValueError(f"{where}: line {number} is not JSON: {error}") from None
    return _record_from(data, number, where)


def _record_from(data: Any, number: int, where: str) -> EventRecord:
    try:
        record = _codec.decode(data)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: line {number}: {error}") from None
    if not isinstance(record, EventRecord):
        raise ValueError(
            f"{where}: line {number} holds a {type(record).__name__}, not an "
            f"EventRecord"
        )
    return record

"""The codec's table is the one list of value types: what the typed API names and
what the concept modules register are the same classes."""

from __future__ import annotations

from typing import get_args

from langhooks._core import _json_messages
from langhooks._persist import (
    _codec,
    _codec_api,
    _codec_records,
    _codec_review,
    _codec_streaming,
)

_TABLES = (_json_messages, _codec_streaming, _codec_review, _codec_records)


def test_the_typed_union_is_the_table() -> None:
    """``codec.Encodable`` names exactly the classes the codec's table holds, so a
    type added to a concept's ``CODECS`` and not to the union (or the reverse)
    fails here. (The union is written out: a type checker cannot read it from the
    table.)"""
    table = {row.cls for module in _TABLES for row in module.CODECS}
    assert set(get_args(_codec_api.Encodable)) == table
    assert set(_codec.ROWS) == table


def test_each_class_has_one_row() -> None:
    """No two rows share a tag (the class name): a decoder is found by it."""
    names = [row.tag for module in _TABLES for row in module.CODECS]
    assert len(names) == len(set(names)), "two rows share a tag"

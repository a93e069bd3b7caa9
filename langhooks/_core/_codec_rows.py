"""A row of the codec's table: a value type, its fields, and its decoder.

A value type's fields are listed once, each as its key, its kind (a str, caller
data, a nested value, ...) and the attribute it reads. Two functions are made from
that list:

- ``encode``: the value's fields as a dict of JSON types (``langhooks.codec``, run
  state, the event recorder's reference path);
- the text writers (``text_writers``): the same fields as the JSON text
  ``json_text`` writes for that dict, without building it (the event recorder's
  fast path).

Each kind gives both: the expression of a field's dict value and the expression of
its text, and the text is what ``json`` writes for the dict value, so the two paths
agree for every row by construction: a new value type is one row. A field holding
a value of another type than its kind's is written as ``json`` writes it, or its
writer raises (TypeError, ValueError or ``Unencodable``: a str field holding an
int, caller data that is not JSON) and the recorder then takes ``encode``, which
raises the public error or gives what ``json`` writes.

Both are generated as code, once (``encode`` when the row is made, the text writers
the first time a recorder asks), so the hot paths do no reflection: a record per
streamed token costs what a hand-written f-string costs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from json.encoder import encode_basestring_ascii
from types import MappingProxyType
from typing import Any, Final, TypeAlias, final

from ._json_fields import data_field, each_field, nested_field
from ._jsondata import json_text, jsonable

__all__ = [
    "BOOL",
    "DATA",
    "INT",
    "OPT_STR",
    "OPT_VALUE",
    "SCALAR",
    "STR",
    "TIME",
    "Decoder",
    "Encoder",
    "Kind",
    "TextWriters",
    "ValueCodec",
    "each",
    "nested",
    "write_bool",
    "write_data",
    "write_optional_str",
    "write_scalar",
]

#: A value's fields as JSON types (no tag, no version).
Encoder: TypeAlias = Callable[[Any], dict[str, Any]]
#: The value whose fields those are.
Decoder: TypeAlias = Callable[[Mapping[str, Any]], Any]
#: A recorder's writers of each row's fields as text, by class (a nested value's
#: fields are written by the writer found here, which may keep texts).
TextWriters: TypeAlias = dict[type, Callable[[Any], str]]


# --- JSON text of a field's value, as json_text writes the encoded value -------------

_str: Final[Callable[[str], str]] = encode_basestring_ascii


def write_scalar(value: Any) -> str:
    """A str, int, bool or None as ``json_text`` writes it."""
    kind = type(value)
    if kind is str:
        return _str(value)
    if value is None:
        return "null"
    if kind is int:
        return int.__repr__(value)
    return json_text(value)  # a bool, a float (NaN refused), a subclass


def write_optional_str(value: str | None) -> str:
    """A str-or-None (TypeError for anything else)."""
    return "null" if value is None else _str(value)


def write_bool(value: object) -> str:
    """A bool (another value, set past its validator, as ``write_scalar``)."""
    if value is True:
        return "true"
    return "false" if value is False else write_scalar(value)


#: The types of the values of a flat dict that ``json_text`` writes as ``jsonable``
#: would have them (a NaN is refused by both).
_FLAT: Final = frozenset({str, int, bool, float, type(None)})
_KEYS: Final = frozenset({str})


def write_data(value: Any) -> str:
    """Caller data (arguments, metadata, ...), checked as ``data_field`` checks it
    (``Unencodable`` when it is not JSON)."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is MappingProxyType or kind is dict:
        if not value:
            return "{}"  # the usual metadata
        # The usual arguments: str keys and plain values, checked without a
        # Python loop and written as they are.
        if (
            kind is dict
            and _KEYS.issuperset(map(type, value))
            and _FLAT.issuperset(map(type, value.values()))
        ):
            return json_text(value)
    return json_text(jsonable(value))


#: What the generated code refers to by name.
_HELPERS: Final[dict[str, Any]] = {
    "data_field": data_field,
    "each_field": each_field,
    "nested_field": nested_field,
    "_str": _str,
    "_int": int.__repr__,
    "_scalar": write_scalar,
    "_data": write_data,
}


# --- the kinds of fields ----------------------------------------------------------


@final
class Kind:
    """A kind of field: the Python expressions of its dict value (``encode``) and of
    its JSON text (``text``), ``{v}`` standing for the attribute read and ``{key}``
    for the key as a literal; ``row`` is the row of a nested value: ``{row}`` stands
    for it (its encoder is ``{row}.encode``) and ``{writer}`` for the recorder's
    writer of its fields."""

    __slots__ = ("encode", "row", "text")

    def __init__(self, encode: str, text: str, row: ValueCodec | None = None) -> None:
        self.encode = encode
        self.text = text
        self.row = row


#: A str.
STR: Final = Kind("{v}", "_str({v})")
#: A str or None.
OPT_STR: Final = Kind("{v}", '"null" if {v} is None else _str({v})')
#: An int (a bool or a subclass, set past its class's validator, as a scalar).
INT: Final = Kind("{v}", "_int({v}) if {v}.__class__ is int else _scalar({v})")
#: A bool (another value, set past its class's validator, as a scalar).
BOOL: Final = Kind(
    "{v}", '"true" if {v} is True else "false" if {v} is False else _scalar({v})'
)
#: A str, int, float, bool or None.
SCALAR: Final = Kind("{v}", "_scalar({v})")
#: Caller data: JSON already (refused with its path when not).
DATA: Final = Kind("data_field({v}, {key})", "_data({v})")
#: A datetime, as ISO 8601 text.
TIME: Final = Kind("{v}.isoformat()", "_str({v}.isoformat())")
#: An enum member's value, or None.
OPT_VALUE: Final = Kind(
    "None if {v} is None else {v}.value",
    '"null" if {v} is None else _scalar({v}.value)',
)


def nested(row: ValueCodec) -> Kind:
    """A value of ``row``'s type, or None."""
    return Kind(
        "nested_field({v}, {row}.encode, {key})",
        '"null" if {v} is None else "{{" + {writer}({v}) + "}}"',
        row,
    )


def each(row: ValueCodec) -> Kind:
    """A sequence of values of ``row``'s type, as a list."""
    return Kind(
        "each_field({v}, {row}.encode, {key})",
        '"[" + ",".join(["{{" + {writer}(x) + "}}" for x in {v}]) + "]"',
        row,
    )


#: A field: its key, its kind, and the attribute it reads (the key when omitted).
Field: TypeAlias = tuple[str, Kind] | tuple[str, Kind, str]


# --- a row -------------------------------------------------------------------------


def _escape(literal: str) -> str:
    """``literal`` as part of an f-string."""
    return literal.replace("{", "{{").replace("}", "}}")


@final
class ValueCodec:
    """One row of the codec's table: value type ``cls``, tagged with its class name.

    Args:
        cls: the value type.
        decode: its decoder (fields -> value).
        fields: its fields, in the order they are encoded.

    Attributes:
        encode: the encoder made from ``fields`` (value -> fields as JSON types).

    Raises:
        ValueError: a key or an attribute is not an ASCII identifier (they are
            written into the generated code as they are).
    """

    __slots__ = ("_text", "cls", "decode", "encode", "fields", "tag")

    def __init__(self, cls: type, decode: Decoder, *fields: Field) -> None:
        for field in fields:
            for name in field[::2]:
                if not (name.isascii() and name.isidentifier()):
                    raise ValueError(
                        f"{cls.__name__}'s field {field[0]!r}: keys and attributes "
                        f"must be ASCII identifiers, got {name!r}"
                    )
        self.cls = cls
        self.tag = cls.__name__
        self.decode = decode
        self.fields = tuple(
            (field[0], field[1], field[2] if len(field) == 3 else field[0])
            for field in fields
        )
        self._text: Callable[[TextWriters], tuple[Callable[..., str], ...]] | None
        self._text = None
        self.encode: Encoder = self._compile(
            "def encode(v):\n    return {"
            + ", ".join(
                f"{key!r}: {self._expression(kind, kind.encode, key, attr)}"
                for key, kind, attr in self.fields
            )
            + "}\n",
            "encode",
        )

    def _expression(self, kind: Kind, template: str, key: str, attr: str) -> str:
        tag = "" if kind.row is None else kind.row.tag
        return template.format(
            v=f"v.{attr}", key=repr(key), row=f"row_{tag}", writer=f"write_{tag}"
        )

    def _compile(self, source: str, name: str) -> Any:
        names: dict[str, Any] = dict(_HELPERS)
        for _, kind, _ in self.fields:
            if kind.row is not None:
                names[f"row_{kind.row.tag}"] = kind.row
        exec(compile(source, f"<codec of {self.tag}>", "exec"), names)
        return names[name]

    @property
    def nested_rows(self) -> tuple[ValueCodec, ...]:
        """The rows of the values nested in this row's."""
        return tuple(kind.row for _, kind, _ in self.fields if kind.row is not None)

    def text_writers(
        self, writers: TextWriters
    ) -> tuple[Callable[[Any], str], Callable[[Any], str]]:
        """This row's writers of a value as JSON text, for one recorder: of its
        fields (what ``encode`` gives, as ``json_text`` writes it, without the
        braces) and of the whole tagged value (``{"type":<tag>,<fields>}``).

        Args:
            writers: the recorder's writers of each row's fields, by class,
                holding those of the ``nested_rows``: a nested value is written
                by the one found there.
        """
        if self._text is None:
            pieces = [
                _escape(f'{"," if index else ""}"{key}":')
                + "{"
                + self._expression(kind, kind.text, key, attr)
                + "}"
                for index, (key, kind, attr) in enumerate(self.fields)
            ]
            body = "".join(pieces)
            whole = _escape('{"type":"' + self.tag + '"' + ("," if body else ""))
            self._text = self._compile(
                "def make(w):\n"
                + "".join(
                    f"    write_{row.tag} = w[row_{row.tag}.cls]\n"
                    for row in dict.fromkeys(self.nested_rows)
                )
                + f"    def fields(v):\n        return f'{body}'\n"
                f"    def value(v):\n        return f'{whole}{body}}}}}'\n"
                "    return fields, value\n",
                "make",
            )
        fields, value = self._text(writers)
        return fields, value

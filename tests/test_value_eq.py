"""The value types' shared ``__eq__`` and ``__hash__`` act as attrs' generated ones."""

from __future__ import annotations

import copy
import functools
import pickle
from typing import Any

import attrs
import pytest
from typing_extensions import override

from langhooks import (
    Allow,
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    Deny,
    Interrupt,
    Invocation,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    PartialToolCall,
    PartialToolCallContext,
    ReviewContext,
    StreamingHandle,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    UpdateArguments,
)
from langhooks._core._values import _value_eq, _value_hash
from tests.test_value_repr import SAMPLES

HANDLE = StreamingHandle()
CALL = ToolCall(call_id="c1", name="lookup", arguments={"q": "Paris"}, index=0)
VALUES: list[object] = [
    *SAMPLES,
    PartialThinking(text="hmm"),
    CompleteToolCall(index=0, tool_call=CALL),
    PartialResponseContext(handle=HANDLE),
    PartialThinkingContext(handle=HANDLE),
    PartialToolCallContext(handle=HANDLE),
]
PUBLIC_VALUE_TYPES = (
    Allow,
    ChatResponse,
    CompleteToolCall,
    ContentPart,
    Deny,
    Interrupt,
    Invocation,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    PartialThinking,
    PartialThinkingContext,
    PartialToolCall,
    PartialToolCallContext,
    ReviewContext,
    TokenUsage,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    UpdateArguments,
)


@functools.cache
def attrs_twin(cls: Any) -> Any:
    """A frozen attrs class with ``cls``'s name, module and fields, and attrs' own
    generated ``__eq__`` and ``__hash__`` (its hash salt comes from those names)."""
    body = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
    fields = {
        f.name: attrs.field(eq=f.eq, hash=f.hash, alias=f.name)
        for f in attrs.fields(cls)
    }
    return attrs.frozen(these=fields)(type(cls.__name__, (), body))


def twin_of(value: Any) -> Any:
    """``value`` as an instance of its attrs twin."""
    cls: Any = type(value)
    fields = attrs.fields(cls)
    return attrs_twin(cls)(**{f.name: getattr(value, f.name) for f in fields})


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def ids(value: object) -> str:
    return type(value).__name__


class TestSharedFunctions:
    @pytest.mark.parametrize("cls", PUBLIC_VALUE_TYPES, ids=lambda c: c.__name__)
    def test_every_value_type_shares_them(self, cls: Any) -> None:
        """Every public value type uses the shared functions, and object's ``__ne__``
        (which negates ``__eq__`` as attrs' own ``__ne__`` does)."""
        assert cls.__eq__ is _value_eq
        assert cls.__hash__ is _value_hash
        assert cls.__ne__ is object.__ne__


class TestEq:
    @pytest.mark.parametrize("value", VALUES, ids=ids)
    def test_equal_copy(self, value: Any) -> None:
        """A value equals a copy of itself, as its attrs twin does."""
        other = attrs.evolve(value)
        assert (value == other) == (twin_of(value) == twin_of(other))
        assert value == other
        assert not value != other  # noqa: SIM202 (the operator under test)

    @pytest.mark.parametrize("value", VALUES, ids=ids)
    def test_each_field_compared(self, value: Any) -> None:
        """A value differing in any one compared field is unequal, as with attrs."""
        for field in attrs.fields(type(value)):
            # A field's value swapped for a fresh object no value equals (set past
            # the validators, as only this test needs).
            other = copy.copy(value)
            object.__setattr__(other, field.name, object())
            expected = twin_of(value) == twin_of(other)
            assert (value == other) is expected
            assert (value != other) is not expected

    @pytest.mark.parametrize("value", VALUES, ids=ids)
    def test_other_class_not_implemented(self, value: Any) -> None:
        """Against another class, even its attrs twin, __eq__ is NotImplemented."""
        assert value.__eq__(twin_of(value)) is NotImplemented
        assert value.__eq__(object()) is NotImplemented
        assert value != twin_of(value)

    def test_result_is_the_first_falsy_comparison(self) -> None:
        """Like attrs' ``a == b and c == d``, __eq__ returns the first falsy field
        comparison as it is, else the last one's result."""

        class Odd:
            def __init__(self, result: object) -> None:
                self.result = result

            @override
            def __eq__(self, other: object) -> Any:
                return self.result

            __hash__ = object.__hash__

        @attrs.frozen(repr=False, eq=False)
        class Pair:
            __eq__ = _value_eq
            __hash__ = _value_hash

            a: Any
            b: Any

        @attrs.frozen
        class AttrsPair:
            a: Any
            b: Any

        for a, b in [(Odd(""), Odd(1)), (Odd(2), Odd(0)), (Odd(2), Odd("yes"))]:
            assert (Pair(a, b) == Pair(a, b)) == (AttrsPair(a, b) == AttrsPair(a, b))
            assert type(Pair(a, b) == Pair(a, b)) is type(
                AttrsPair(a, b) == AttrsPair(a, b)
            )

    def test_no_field_is_true(self) -> None:
        """A value type without fields: every two of its values are equal."""
        assert Allow() == Allow()
        assert hash(Allow()) == hash(twin_of(Allow()))


class TestHash:
    @pytest.mark.parametrize("value", VALUES, ids=ids)
    def test_same_hash_as_attrs(self, value: Any) -> None:
        """A value's hash is the one attrs' generated __hash__ gives; a value holding
        an unhashable field (a dict, a mappingproxy) is unhashable, as with attrs."""
        try:
            expected = hash(twin_of(value))
        except TypeError:
            with pytest.raises(TypeError):
                hash(value)
        else:
            assert hash(value) == expected
            assert hash(value) == hash(attrs.evolve(value))

    def test_hashable_and_not(self) -> None:
        """Both cases above are met."""
        hashable = [v for v in VALUES if _hashable(v)]
        assert 0 < len(hashable) < len(VALUES)

    def test_field_options(self) -> None:
        """Fields left out of eq, or of hash, are left out as attrs leaves them."""

        @attrs.frozen(repr=False, eq=False)
        class Box:
            __eq__ = _value_eq
            __hash__ = _value_hash

            a: int
            b: int = attrs.field(eq=False)
            c: int = attrs.field(hash=False)
            d: int = attrs.field(eq=False, hash=True)

        twin = attrs_twin(Box)
        for values in [(1, 2, 3, 4), (1, 5, 3, 4), (1, 2, 6, 4), (1, 2, 3, 7)]:
            assert (Box(1, 2, 3, 4) == Box(*values)) == (
                twin(1, 2, 3, 4) == twin(*values)
            )
            assert hash(Box(*values)) == hash(twin(*values))

    def test_plain_subclass(self) -> None:
        """A plain subclass hashes with the salt of the class that has __hash__, as
        it inherits attrs' generated __hash__; and is not equal to its base's
        values."""

        @attrs.frozen(repr=False, eq=False)
        class Base:
            __eq__ = _value_eq
            __hash__ = _value_hash

            a: int

        class Sub(Base):
            pass

        twin = attrs_twin(Base)

        class TwinSub(twin):  # type: ignore[misc,valid-type]
            pass

        assert hash(Sub(1)) == hash(TwinSub(1)) == hash(Base(1))
        assert Sub(1) != Base(1)
        assert Sub(1) == Sub(1)


class TestKept:
    @pytest.mark.parametrize("value", VALUES, ids=ids)
    def test_evolve_fields_asdict(self, value: Any) -> None:
        """attrs' helpers still work on the value types."""
        assert attrs.evolve(value) == value
        assert [f.name for f in attrs.fields(type(value))] == list(
            attrs.asdict(value, recurse=False)
        )

    @pytest.mark.parametrize(
        "value",
        [
            v
            for v in VALUES
            if not isinstance(
                v,
                Tool
                | ToolContext
                | PartialResponseContext
                | PartialThinkingContext
                | PartialToolCallContext,
            )
        ],
        ids=ids,
    )
    def test_pickle(self, value: Any) -> None:
        """A value pickles to an equal value."""
        if isinstance(value, ToolResult):  # an exception is not equal to its copy
            value = attrs.evolve(value, exception=None)
        assert pickle.loads(pickle.dumps(value)) == value

"""The machinery every handler interface shares.

An *interface* is one of the four handler base classes. It declares its events as
documented no-op ``on_*`` methods. ``HandlerBase.__init_subclass__`` then, for every
subclass:

- rejects an ``on_*`` attribute, defined by the class or by a plain mixin it
  inherits, that no interface of the class declares, naming the closest real event
  (a misspelled override must fail loudly, not silently never fire);
- rejects a coroutine function on a synchronous interface and a plain function on an
  asynchronous one, and a method that cannot take the event's positional arguments
  (a missing parameter, one more without a default);
- records which events the class overrides, so composites and wrappers never call a
  handler for an event it does not handle.

It also holds the fan-out builders the composites and wrappers use: per event, a
precomputed callable that calls a fixed tuple of bound methods with no loop and no
per-call lookups.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, ClassVar, Final, TypeVar

from typing_extensions import override

__all__: list[str] = []

_F = TypeVar("_F", bound=Callable[..., Any])


class Fold:
    """How a composite combines its handlers' answers to one event, a property of
    the event's spec (as pluggy's ``firstresult``): an event whose spec method is
    decorated ``@folded(SomeFold)`` answers, and the composites and ``isolate``
    read its fold instead of knowing the event.

    A composite calls its handlers in order, each with the arguments the fold gives
    it: ``step`` takes one handler's answer and returns the arguments for the next
    handler and the composite's answer if this one settles it (None to go on). When
    no handler settled it, ``end`` is the composite's answer. ``failed`` is the
    answer of a handler whose exception ``isolate`` logged.
    """

    def step(
        self, owner: object, answer: object, args: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], object]:
        """The next handler's arguments, and the settled answer or None.

        Raises:
            TypeError: ``answer`` is not one this event may give (naming ``owner``).
        """
        raise NotImplementedError

    def end(self, first: tuple[Any, ...], last: tuple[Any, ...]) -> object:
        """The answer when no handler settled it: ``first`` were the event's
        arguments, ``last`` those the last handler was given."""
        raise NotImplementedError

    def failed(self) -> object:
        """The answer of a handler that raised, when ``isolate`` logs it."""
        raise NotImplementedError


def folded(fold: type[Fold]) -> Callable[[_F], _F]:
    """Mark a spec's event method as answered through ``fold`` (see ``Fold``)."""

    def mark(method: _F) -> _F:
        method._langhooks_fold = fold()  # type: ignore[attr-defined]  # read by EventSpec
        return method

    return mark


class EventSpec:
    """One event of one interface.

    A plain class, not an attrs one: it is built for each interface's events while
    ``import langhooks`` runs, and an attrs class costs that import about as much as
    all of the events' specs do.
    """

    __slots__ = ("default", "fold", "interface", "is_async", "name", "params")

    def __init__(
        self,
        *,
        name: str,
        interface: type[HandlerBase],
        is_async: bool,
        params: tuple[str, ...],
        default: Callable[..., Any],
    ) -> None:
        self.name: Final = name
        self.interface: Final = interface
        self.is_async: Final = is_async
        self.params: Final = params
        self.default: Final = default
        #: How a composite combines the handlers' answers (None: it does not).
        self.fold: Final[Fold | None] = getattr(default, "_langhooks_fold", None)

    @override
    def __repr__(self) -> str:
        return (
            f"EventSpec(name={self.name!r}, interface={self.interface.__name__}, "
            f"is_async={self.is_async}, params={self.params!r})"
        )


# The interfaces, in the order they were created (for error messages).
_INTERFACES: Final[list[type[HandlerBase]]] = []


class HandlerBase:
    """Root of the four handler interfaces. Not public: subclass an interface."""

    # Set on each interface only (so ``vars(cls)`` holding it marks an interface):
    # its own events. Set on every class: all events of all its interfaces, and the
    # ones the class overrides.
    _langhooks_own_events: ClassVar[Mapping[str, EventSpec]]
    _langhooks_events: ClassVar[Mapping[str, tuple[EventSpec, ...]]] = {}
    _langhooks_overrides: ClassVar[frozenset[str]] = frozenset()

    @override
    def __init_subclass__(
        cls, *, _langhooks_interface: bool = False, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if _langhooks_interface:
            is_async = bool(getattr(cls, "_langhooks_async", False))
            cls._langhooks_own_events = {
                name: EventSpec(
                    name=name,
                    interface=cls,
                    is_async=is_async,
                    params=_param_names(value),
                    default=value,
                )
                for name, value in vars(cls).items()
                if name.startswith("on_") and callable(value)
            }
            _INTERFACES.append(cls)
        events: dict[str, tuple[EventSpec, ...]] = {}
        for base in reversed(cls.__mro__):
            # Each interface is once in the MRO, so each spec is added once.
            for name, spec in vars(base).get("_langhooks_own_events", {}).items():
                events[name] = (*events.get(name, ()), spec)
        cls._langhooks_events = events
        if not _langhooks_interface:
            _check_twins(cls)
            # The class itself, and plain mixins, whose methods it inherits unchecked
            # (a HandlerBase subclass in the MRO was checked when it was created).
            for owner in cls.__mro__:
                if owner is cls or not (
                    owner is object or issubclass(owner, HandlerBase)
                ):
                    for name, value in vars(owner).items():
                        if name.startswith("on_"):
                            _check_event(owner, name, value, events)
        cls._langhooks_overrides = frozenset(
            name
            for name, specs in events.items()
            if all(getattr(cls, name) is not spec.default for spec in specs)
        )

    def _langhooks_overridden_events(self) -> frozenset[str]:
        """The events this handler handles; composites call it for no other."""
        return type(self)._langhooks_overrides


def _param_names(method: Callable[..., Any]) -> tuple[str, ...]:
    """An event method's parameter names after ``self``.

    Read from its code object rather than ``inspect.signature`` (a tenth of
    ``import langhooks`` for the four interfaces' events): an event's parameters
    are positional, with no ``*args``, keyword-only or ``**kwargs`` parameter (a
    test holds every interface to that).
    """
    code = method.__code__
    return code.co_varnames[1 : code.co_argcount]


def _check_twins(cls: type[HandlerBase]) -> None:
    """Reject a class that subclasses both the sync and the async interface of one
    kind: its methods cannot be both plain and ``async def``, so one side would be
    called wrongly."""
    interfaces = interfaces_of_class(cls)
    for sync in interfaces:
        for other in interfaces:
            # Each async interface is named after its sync twin.
            if other.__name__ == f"Async{sync.__name__}":
                raise TypeError(
                    f"{cls.__qualname__} subclasses both {sync.__name__} and "
                    f"{other.__name__}: a handler is synchronous or asynchronous, "
                    f"not both; write one class per interface (an async run accepts "
                    f"a sync handler too)"
                )


def _check_event(
    cls: type, name: str, value: object, events: Mapping[str, tuple[EventSpec, ...]]
) -> None:
    specs = events.get(name)
    interfaces = ", ".join(
        sorted({s.interface.__name__ for group in events.values() for s in group})
    )
    if specs is None:
        advice = (
            "subclass the one you need as well, or rename the method"
            if _interfaces_with(name)
            else "rename it, or drop the 'on_' prefix if it is a helper"
        )
        raise TypeError(
            f"{cls.__qualname__}.{name} is not an event of {interfaces}: "
            f"{event_hint(name, events)} ({advice})"
        )
    function = (
        value.__func__ if isinstance(value, staticmethod | classmethod) else value
    )
    if not callable(function):
        raise TypeError(f"{cls.__qualname__}.{name} must be a method, got {value!r}")
    is_async = inspect.iscoroutinefunction(function)
    if any(spec.is_async == is_async for spec in specs):
        for spec in specs:
            _check_arity(cls, name, value, spec)
        return
    spec = specs[0]
    if is_async:
        raise TypeError(
            f"{cls.__qualname__}.{name} is 'async def' but {spec.interface.__name__} "
            f"is synchronous: subclass Async{spec.interface.__name__}, or make it a "
            f"plain 'def'"
        )
    raise TypeError(
        f"{cls.__qualname__}.{name} is a plain 'def' but {spec.interface.__name__} "
        f"is asynchronous: make it 'async def', or subclass "
        f"{spec.interface.__name__.removeprefix('Async')}"
    )


def _check_arity(cls: type, name: str, value: object, spec: EventSpec) -> None:
    """Reject an event method that cannot take the event's arguments.

    Events are delivered positionally, so parameters may be renamed (or made
    positional-only); extra parameters need defaults; ``*args`` takes any number.
    Checked once, when the class is created, never when an event fires.
    """
    arity = len(spec.params)
    if isinstance(value, staticmethod):
        problem = arity_problem(value.__func__, arity)
    elif isinstance(value, classmethod):
        problem = arity_problem(value.__func__, arity + 1)
    elif inspect.isfunction(value):
        problem = _function_arity_problem(value, arity + 1)
    else:  # another callable: trust it, as arity_problem trusts builtins
        return
    if problem is None:
        return
    expected = ", ".join(("self", *spec.params))
    raise TypeError(
        f"{cls.__qualname__}.{name} cannot take the event's {arity} positional "
        f"argument(s) ({problem}): {spec.interface.__name__} calls it as "
        f"'def {name}({expected}, /)' declares; parameters may be renamed, and any "
        f"more need a default"
    )


def _function_arity_problem(function: Any, arity: int) -> str | None:
    """``arity_problem`` for a plain function, read from its code object (no
    ``inspect.signature``: classes subclassing an interface are created while
    ``import langhooks`` runs)."""
    code = function.__code__
    positional = code.co_argcount
    required = positional - len(function.__defaults__ or ())
    if arity < required:
        return f"{code.co_varnames[arity]!r} has no default"
    if arity > positional and not code.co_flags & inspect.CO_VARARGS:
        return f"it takes {positional - 1} after self"
    keyword_only = code.co_varnames[positional : positional + code.co_kwonlyargcount]
    defaults = function.__kwdefaults__ or {}
    for keyword in keyword_only:
        if keyword not in defaults:
            return f"keyword-only {keyword!r} has no default"
    return None


def arity_problem(function: Callable[..., object], arity: int) -> str | None:
    """Why ``function`` cannot be called with ``arity`` positional arguments.

    Args:
        function: the callable to check.
        arity: how many positional arguments it will be called with.

    Returns:
        The binding error's text, or None when the call binds (or the callable has
        no signature to check, as some builtins: those are trusted).
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(arity))
    except TypeError as error:
        return str(error)
    return None


def interfaces_of(handler: object) -> tuple[type[HandlerBase], ...]:
    """The interface classes ``handler`` is an instance of, in MRO order."""
    return interfaces_of_class(type(handler))


def interfaces_of_class(cls: type) -> tuple[type[HandlerBase], ...]:
    """The interface classes ``cls`` subclasses, in MRO order."""
    return tuple(base for base in cls.__mro__ if "_langhooks_own_events" in vars(base))


def overridden_events(handler: object) -> frozenset[str]:
    """The events ``handler`` handles (an empty set for a non-handler)."""
    if isinstance(handler, HandlerBase):
        return handler._langhooks_overridden_events()
    return frozenset()


def _interfaces_with(name: str) -> list[str]:
    return [i.__name__ for i in _INTERFACES if name in vars(i)["_langhooks_own_events"]]


def closest_event(name: str, events: Iterable[str]) -> str:
    """A 'did you mean ...?' hint for an unknown event name."""
    import difflib  # only for a misspelt event name

    close = difflib.get_close_matches(name, list(events), n=1, cutoff=0.6)
    return f"did you mean {close[0]}?" if close else "it is not an event"


def event_hint(name: str, events: Iterable[str]) -> str:
    """A hint for a name that is not one of a handler's ``events``: the interfaces
    that have it, when it is another interface's event, else ``closest_event``."""
    elsewhere = _interfaces_with(name)
    if elsewhere:
        return f"it is an event of {', '.join(elsewhere)}"
    return closest_event(name, events)


# --- fan-out builders -------------------------------------------------------------

_SYNC_FACTORIES: Final[dict[tuple[tuple[str, ...], int], Callable[..., Any]]] = {}
_ASYNC_FACTORIES: Final[
    dict[tuple[tuple[str, ...], tuple[bool, ...]], Callable[..., Any]]
] = {}


def _noop(*_args: object) -> None:
    return None


async def _async_noop(*_args: object) -> None:
    return None


def sync_fanout(
    params: tuple[str, ...], methods: tuple[Callable[..., object], ...]
) -> Callable[..., None]:
    """A function calling each of ``methods`` with the event's arguments, in order.

    One method is returned as is: composing a single handler costs nothing.
    """
    if not methods:
        return _noop
    if len(methods) == 1:
        return methods[0]  # type: ignore[return-value]  # a handler method returns None
    key = (params, len(methods))
    factory = _SYNC_FACTORIES.get(key)
    if factory is None:
        args = ", ".join(params)
        names = [f"m{i}" for i in range(len(methods))]
        body = "".join(f"        {n}({args})\n" for n in names)
        source = (
            f"def factory({', '.join(names)}):\n"
            f"    def fanout({args}):\n{body}"
            f"    return fanout\n"
        )
        factory = _compile_factory(source)
        _SYNC_FACTORIES[key] = factory
    return factory(*methods)  # type: ignore[no-any-return]


def async_fanout(
    params: tuple[str, ...],
    methods: tuple[Callable[..., object], ...],
    awaited: tuple[bool, ...],
) -> Callable[..., Awaitable[None]]:
    """Like ``sync_fanout``, awaiting the methods flagged in ``awaited`` in turn.

    A synchronous method (a sync handler in an async composite) is called inline.
    """
    if not methods:
        return _async_noop
    if len(methods) == 1 and awaited[0]:
        return methods[0]  # type: ignore[return-value]  # an async handler method
    key = (params, awaited)
    factory = _ASYNC_FACTORIES.get(key)
    if factory is None:
        args = ", ".join(params)
        names = [f"m{i}" for i in range(len(methods))]
        body = "".join(
            f"        {'await ' if is_async else ''}{n}({args})\n"
            for n, is_async in zip(names, awaited, strict=True)
        )
        source = (
            f"def factory({', '.join(names)}):\n"
            f"    async def fanout({args}):\n{body}"
            f"    return fanout\n"
        )
        factory = _compile_factory(source)
        _ASYNC_FACTORIES[key] = factory
    return factory(*methods)  # type: ignore[no-any-return]


def _compile_factory(source: str) -> Callable[..., Any]:
    # Generated once per (parameters, arity): a closure over the bound methods runs
    # as fast as a hand-written sequence of calls, with no loop per event.
    namespace: dict[str, Any] = {}
    exec(compile(source, "<langhooks fan-out>", "exec"), namespace)
    return namespace["factory"]  # type: ignore[no-any-return]


def event_is_async(handler: HandlerBase, name: str) -> bool:
    """Whether ``handler``'s method for event ``name`` must be awaited."""
    return type(handler)._langhooks_events[name][0].is_async


def bound_event(handler: HandlerBase, name: str) -> Callable[..., Any]:
    """The callable that delivers event ``name`` to ``handler``.

    Composites swap their per-event callables when handlers are added or removed,
    so for them this returns a late-binding function; for any other handler it is
    the bound method itself (no added cost).
    """
    if not getattr(handler, "_langhooks_dynamic", False):
        return getattr(handler, name)  # type: ignore[no-any-return]

    def late(*args: Any) -> Any:
        return getattr(handler, name)(*args)

    return late

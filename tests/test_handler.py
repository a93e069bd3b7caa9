"""Class-creation checks and the event bookkeeping every handler interface shares."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    AsyncStreamingChatResponseHandler,
    ChainCallbackHandler,
    HandlerWithoutInvocation,
    PartialResponse,
    PartialResponseContext,
    StreamingChatResponseHandler,
)
from langhooks._core._handler import (
    bound_event,
    closest_event,
    event_is_async,
    interfaces_of,
    overridden_events,
)


class TestMisspelledEvents:
    def test_misspelled_override_names_the_closest_event(self) -> None:
        """A misspelled on_* method fails at class creation with a hint."""
        with pytest.raises(TypeError, match="did you mean on_partial_response\\?"):

            class Typo(StreamingChatResponseHandler):
                def on_partial_respnse(self, partial: Any, context: Any) -> None:
                    pass

    def test_message_names_class_and_interface(self) -> None:
        """The error names the class, the method and the interface."""
        with pytest.raises(TypeError) as caught:

            class Typo(ChainCallbackHandler):
                def on_tool_call_reveiw(self, *args: Any) -> None:
                    pass

        message = str(caught.value)
        assert "Typo.on_tool_call_reveiw is not an event of ChainCallbackHandler" in (
            message
        )
        assert "did you mean on_tool_call_review?" in message
        assert "drop the 'on_' prefix if it is a helper" in message

    def test_event_of_another_interface_names_that_interface(self) -> None:
        """An event of another interface is named as such, not called unknown."""
        with pytest.raises(TypeError) as caught:

            class Mixed(StreamingChatResponseHandler):
                def on_llm_new_delta(self, chain: Any, deltas: Any) -> None:
                    pass

        message = str(caught.value)
        assert "it is an event of ChainCallbackHandler, AsyncChainCallbackHandler" in (
            message
        )
        assert "it is not an event" not in message

    def test_unrelated_name_has_no_suggestion(self) -> None:
        """A name close to nothing says it is not an event."""
        with pytest.raises(TypeError, match="it is not an event"):

            class Odd(StreamingChatResponseHandler):
                def on_zebra_crossing(self) -> None:
                    pass

    @pytest.mark.parametrize(
        "base",
        [
            StreamingChatResponseHandler,
            AsyncStreamingChatResponseHandler,
            ChainCallbackHandler,
            AsyncChainCallbackHandler,
        ],
    )
    def test_checked_on_every_interface(self, base: type) -> None:
        """Every interface rejects unknown on_* names."""
        with pytest.raises(TypeError, match="is not an event of"):
            type("Bad", (base,), {"on_nothing": lambda self: None})

    def test_non_method_on_attribute_rejected(self) -> None:
        """An on_* attribute that is not callable is rejected."""
        with pytest.raises(TypeError, match="must be a method"):

            class Attr(StreamingChatResponseHandler):
                on_error = None  # type: ignore[assignment]

    def test_helpers_with_other_prefixes_allowed(self) -> None:
        """Helper methods and attributes without the on_ prefix are fine."""

        class Helpers(StreamingChatResponseHandler):
            count = 0

            def handle_text(self, text: str) -> None:
                self.count += len(text)

            def _on_private(self) -> None:
                pass

            async def fetch(self) -> None:
                pass

        assert overridden_events(Helpers()) == frozenset()

    def test_misspelling_in_deep_subclass_rejected(self) -> None:
        """The check runs for every subclass, not only direct ones."""

        class Base(StreamingChatResponseHandler):
            pass

        class Middle(Base):
            pass

        with pytest.raises(TypeError, match="did you mean on_complete_response"):

            class Leaf(Middle):
                def on_complete_respons(self, response: Any) -> None:
                    pass


class TestSyncAsyncMismatch:
    def test_async_def_on_sync_base_rejected(self) -> None:
        """An async def on a sync interface fails, pointing to the async twin."""
        with pytest.raises(TypeError) as caught:

            class Wrong(StreamingChatResponseHandler):
                @override
                async def on_partial_response(  # type: ignore[override]
                    self, partial: PartialResponse, context: PartialResponseContext
                ) -> None:
                    pass

        message = str(caught.value)
        assert "Wrong.on_partial_response is 'async def'" in message
        assert "StreamingChatResponseHandler is synchronous" in message
        assert "subclass AsyncStreamingChatResponseHandler" in message

    def test_def_on_async_base_rejected(self) -> None:
        """A plain def on an async interface fails, pointing to the sync twin."""
        with pytest.raises(TypeError) as caught:

            class Wrong(AsyncChainCallbackHandler):
                @override
                def on_run_start(self, chain: Any) -> None:  # type: ignore[override]
                    pass

        message = str(caught.value)
        assert "Wrong.on_run_start is a plain 'def'" in message
        assert "AsyncChainCallbackHandler is asynchronous" in message
        assert "make it 'async def', or subclass ChainCallbackHandler" in message

    def test_staticmethod_checked_too(self) -> None:
        """A staticmethod override is checked for sync/async like a method."""
        with pytest.raises(TypeError, match="is 'async def'"):

            class Wrong(ChainCallbackHandler):
                @staticmethod
                @override
                async def on_run_start(chain: Any) -> None:  # type: ignore[override]
                    pass

    def test_matching_kinds_accepted(self) -> None:
        """def on a sync base and async def on an async base are accepted."""

        class Sync(ChainCallbackHandler):
            @override
            def on_run_start(self, chain: Any) -> None:
                pass

        class Async(AsyncChainCallbackHandler):
            @override
            async def on_run_start(self, chain: Any) -> None:
                pass

        assert overridden_events(Sync()) == {"on_run_start"}
        assert overridden_events(Async()) == {"on_run_start"}


class TestEventSignatures:
    """An override must take the event's positional arguments, checked when the
    class is created, never when the event fires."""

    def test_missing_parameter_rejected_at_class_creation(self) -> None:
        """A method missing the context fails when its class is created, saying
        how the interface calls it."""
        with pytest.raises(TypeError) as caught:

            class Printer(StreamingChatResponseHandler):
                @override
                def on_partial_response(self, partial: Any) -> None:  # type: ignore[override]
                    pass

        message = str(caught.value)
        assert "Printer.on_partial_response cannot take the event's 2" in message
        assert "(it takes 1 after self)" in message
        assert "def on_partial_response(self, partial, context, /)" in message

    def test_extra_required_parameter_rejected(self) -> None:
        """A parameter beyond the event's needs a default."""
        with pytest.raises(TypeError, match="'verbose' has no default"):

            class Wrong(ChainCallbackHandler):
                @override
                def on_run_start(self, chain: Any, verbose: bool) -> None:  # type: ignore[override]
                    pass

    def test_required_keyword_only_parameter_rejected(self) -> None:
        """A keyword-only parameter without a default can never be given."""
        with pytest.raises(TypeError, match="keyword-only 'label' has no default"):

            class Wrong(AsyncChainCallbackHandler):
                @override
                async def on_run_start(self, chain: Any, *, label: str) -> None:  # type: ignore[override]
                    pass

    def test_staticmethod_and_classmethod_checked(self) -> None:
        """A staticmethod takes the arguments without self, a classmethod after
        cls."""
        with pytest.raises(TypeError, match="cannot take the event's 1"):

            class Static(ChainCallbackHandler):
                @staticmethod
                @override
                def on_run_start() -> None:  # type: ignore[override]
                    pass

        with pytest.raises(TypeError, match="cannot take the event's 1"):

            class Class(ChainCallbackHandler):
                @classmethod
                @override
                def on_run_start(cls, chain: Any, extra: int) -> None:  # type: ignore[override]
                    pass

    def test_every_interface_of_a_shared_name_checked(self) -> None:
        """A class of both interfaces gets on_error with one and with two
        arguments: a method taking only one is rejected."""
        with pytest.raises(TypeError, match="ChainCallbackHandler calls it as"):

            class Both(ChainCallbackHandler, StreamingChatResponseHandler):
                @override
                def on_error(self, error: Any) -> None:  # type: ignore[override]
                    pass

    def test_legitimate_overrides_accepted(self) -> None:
        """Renamed and positional-only parameters, extra ones with defaults,
        ``*args``/``**kwargs``, staticmethods and other callables all pass."""

        def anything(*args: Any) -> None:
            pass

        def report(event: str, *args: Any) -> None:
            pass

        class Fine(StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, p: Any, ctx: Any, /, n: int = 0, *, k: int = 1
            ) -> None:
                pass

            @override
            def on_error(self, *args: Any, **kwargs: Any) -> None:
                pass

            @staticmethod
            @override
            def on_complete_response(response: Any, *, verbose: bool = False) -> None:
                pass

            on_partial_thinking = staticmethod(anything)
            # Any other callable is trusted: it is not bound, so not checked.
            on_unmapped_raw_event = functools.partial(report, "raw")

        class Both(ChainCallbackHandler, StreamingChatResponseHandler):
            @override
            def on_error(self, *args: Any) -> None:
                pass

        assert "on_error" in overridden_events(Fine())
        assert "on_error" in overridden_events(Both())


class _Text(StreamingChatResponseHandler):
    @override
    def on_partial_response(
        self, partial: PartialResponse, context: PartialResponseContext
    ) -> None:
        pass


class _TextAndDone(_Text):
    @override
    def on_complete_response(self, response: Any) -> None:
        pass


class TestOverriddenEvents:
    def test_base_overrides_nothing(self) -> None:
        """A bare interface instance handles no event."""
        for base in (
            StreamingChatResponseHandler,
            AsyncStreamingChatResponseHandler,
            ChainCallbackHandler,
            AsyncChainCallbackHandler,
        ):
            assert overridden_events(base()) == frozenset()

    def test_own_overrides(self) -> None:
        """A class handles exactly the events it defines."""
        assert overridden_events(_Text()) == {"on_partial_response"}

    def test_inherited_through_levels(self) -> None:
        """Overrides are inherited through any number of subclass levels."""

        class Deeper(_TextAndDone):
            pass

        class Deepest(Deeper):
            def helper(self) -> None:
                pass

        assert overridden_events(Deepest()) == {
            "on_partial_response",
            "on_complete_response",
        }

    def test_mixin_override_detected(self) -> None:
        """An override supplied by a mixin class counts as an override."""

        class ErrorMixin:
            def on_error(self, error: BaseException) -> None:
                pass

        class Handler(ErrorMixin, StreamingChatResponseHandler):
            pass

        assert overridden_events(Handler()) == {"on_error"}

    def test_mixin_misspelling_rejected(self) -> None:
        """A misspelled on_* method supplied by a plain mixin is rejected too."""

        class TypoMixin:
            def on_eror(self, error: BaseException) -> None:
                pass

        with pytest.raises(
            TypeError, match=r"TypoMixin\.on_eror .* did you mean on_error"
        ):

            class Handler(TypoMixin, StreamingChatResponseHandler):
                pass

    def test_mixin_async_mismatch_rejected(self) -> None:
        """An async def supplied by a mixin to a sync interface is rejected."""

        class AsyncMixin:
            async def on_error(self, error: BaseException) -> None:
                pass

        with pytest.raises(TypeError, match=r"AsyncMixin\.on_error is 'async def'"):

            class Handler(AsyncMixin, StreamingChatResponseHandler):  # type: ignore[misc]
                pass

    def test_non_handler_has_none(self) -> None:
        """Anything that is not a handler handles no event."""
        assert overridden_events(object()) == frozenset()

    def test_instance_may_report_its_own(self) -> None:
        """A handler built at runtime may report its events per instance."""

        class Dynamic(StreamingChatResponseHandler):
            def __init__(self, events: frozenset[str]) -> None:
                self._events = events

            @override
            def _langhooks_overridden_events(self) -> frozenset[str]:
                return self._events

        assert overridden_events(Dynamic(frozenset({"on_error"}))) == {"on_error"}


class TestEventSpecs:
    """What each interface records about its events."""

    @pytest.mark.parametrize(
        "interface",
        [
            ChainCallbackHandler,
            AsyncChainCallbackHandler,
            StreamingChatResponseHandler,
            AsyncStreamingChatResponseHandler,
        ],
    )
    def test_params_are_the_signature_after_self(self, interface: type[Any]) -> None:
        """Each event's recorded parameters are its signature's, after self, and all
        are positional (what reading them from the code object relies on)."""
        specs = interface._langhooks_own_events
        assert specs
        for name, spec in specs.items():
            parameters = list(
                inspect.signature(getattr(interface, name)).parameters.values()
            )
            assert spec.params == tuple(p.name for p in parameters[1:])
            assert all(
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in parameters
            )

    def test_repr(self) -> None:
        """A spec's repr names the event, its interface and its parameters."""
        spec = ChainCallbackHandler._langhooks_own_events["on_run_start"]
        assert repr(spec) == (
            "EventSpec(name='on_run_start', interface=ChainCallbackHandler, "
            "is_async=False, params=('chain',))"
        )


class TestHelpers:
    def test_closest_event(self) -> None:
        """closest_event suggests a near name or says there is none."""
        names = ["on_partial_response", "on_error"]
        assert closest_event("on_partial_respnse", names) == (
            "did you mean on_partial_response?"
        )
        assert closest_event("on_qqqqqqqqqq", names) == "it is not an event"

    def test_interfaces_of(self) -> None:
        """interfaces_of lists the interfaces a handler implements."""
        assert StreamingChatResponseHandler in interfaces_of(_Text())
        assert ChainCallbackHandler not in interfaces_of(_Text())

    def test_interfaces_of_lists_only_real_interfaces(self) -> None:
        """interfaces_of leaves out HandlerBase, the root that declares no events."""
        assert interfaces_of(_Text()) == (StreamingChatResponseHandler,)

    def test_wrapper_classes_add_only_the_interfaces(self) -> None:
        """A wrapper's class has the wrapper and the handler's interfaces as bases."""
        wrapped = HandlerWithoutInvocation(_Text())
        assert type(wrapped).__bases__ == (
            HandlerWithoutInvocation,
            StreamingChatResponseHandler,
        )

    def test_event_is_async(self) -> None:
        """event_is_async follows the interface, not the instance."""
        assert not event_is_async(_Text(), "on_partial_response")
        assert event_is_async(AsyncStreamingChatResponseHandler(), "on_error")

    def test_bound_event_is_the_bound_method(self) -> None:
        """For a plain handler, bound_event is the bound method itself."""
        handler = _Text()
        assert bound_event(handler, "on_partial_response") == (
            handler.on_partial_response
        )

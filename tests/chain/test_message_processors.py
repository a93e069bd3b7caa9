"""Message processors: transform or reject an answer before the chain keeps it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import attrs
import pytest
from typing_extensions import override

from langhooks import (
    AsyncChainCallbackHandler,
    ChatResponse,
    Message,
    StreamingChatResponseHandler,
    StreamingHandle,
    TokenUsage,
)
from langhooks.chain import LLMChain, MessageProcessor, Reject, json_processor
from langhooks.models import ChatRequest, ScriptedChatModel, ScriptedTurn
from langhooks.testing import RecordingChainHandler
from tests.chain.scenarios import (
    USAGE,
    WEATHER,
    asks,
    call,
    collapse,
    make_chain,
    says,
)
from tests.chain.test_firing_order import EXPECTED

JSON_ANSWER = '{"weather": "sunny"}'


class FixedModel:
    """A ChatModel that answers every call with one message, not streamed."""

    def __init__(self, message: Message) -> None:
        self.message = message
        self.calls = 0

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Deliver the whole answer at once."""
        self.calls += 1
        response = ChatResponse(message=self.message)
        handler.on_complete_response(response)
        return response

    async def astream(
        self, request: ChatRequest, handler: Any, *, handle: Any = None
    ) -> ChatResponse:
        """The async twin (the runtime's bridge handler is async here)."""
        self.calls += 1
        response = ChatResponse(message=self.message)
        await handler.on_complete_response(response)
        return response


def arguments(recorder: RecordingChainHandler, event: str) -> list[tuple[Any, ...]]:
    """The arguments of each recorded ``event``."""
    return [args for name, args in recorder.events if name == event]


def rejecting(reply: str = "Answer in French.") -> MessageProcessor:
    """A processor that rejects every answer."""

    def reject(chain: LLMChain, message: Message) -> Message | Reject:
        return Reject(reply)

    return reject


def tagging(tag: str, seen: list[Message] | None = None) -> MessageProcessor:
    """A processor that appends ``tag`` to the text, noting what it received."""

    def tag_text(chain: LLMChain, message: Message) -> Message | Reject:
        if seen is not None:
            seen.append(message)
        return attrs.evolve(message, content=message.text + tag)

    return tag_text


class TestConstruction:
    """Processors are given to the chain like its other parts."""

    def test_default_is_none(self) -> None:
        """A chain has no processors unless given some."""
        assert LLMChain(ScriptedChatModel([])).message_processors == ()

    def test_not_callable_is_refused(self) -> None:
        """Something that cannot be called is refused with a TypeError."""
        with pytest.raises(TypeError, match="message_processors must be functions"):
            LLMChain(ScriptedChatModel([]), message_processors=["json"])  # type: ignore[list-item]

    def test_add_message_processors_returns_a_copy(self) -> None:
        """add_message_processors appends to a copy and leaves the chain unchanged."""
        first, second = json_processor(), rejecting()
        chain = LLMChain(ScriptedChatModel([]), message_processors=[first])
        more = chain.add_message_processors([second])
        assert more.message_processors == (first, second)
        assert chain.message_processors == (first,)

    def test_add_message_processors_checks_them(self) -> None:
        """add_message_processors refuses a non-callable too."""
        chain = LLMChain(ScriptedChatModel([]))
        with pytest.raises(TypeError, match="Reject"):
            chain.add_message_processors([42])  # type: ignore[list-item]

    @pytest.mark.parametrize("reply", ["", "   ", None, 5])
    def test_reject_needs_a_reply(self, reply: Any) -> None:
        """A Reject without text for the model is refused."""
        with pytest.raises(ValueError, match="non-empty str"):
            Reject(reply)


class TestRejection:
    """A rejected answer is kept, answered, counted, and the model asked again."""

    def test_rejection_then_success(self) -> None:
        """The conversation holds the rejected answer, the reply and the new answer."""
        chain, recorder = make_chain(
            [says("Sunny."), says(JSON_ANSWER)], message_processors=[json_processor()]
        )
        result = chain.run()
        assert result.status == "ok"
        roles = [m.role for m in result.chain.messages]
        assert roles == ["user", "assistant", "user", "assistant"]
        rejected, reply, answer = result.chain.messages[1:]
        assert rejected.text == "Sunny."
        assert reply.text.startswith("ERROR: your answer is not valid JSON")
        assert answer.metadata["processed_content"] == {"weather": "sunny"}
        assert recorder.of("on_llm_call_start")[1][0].current_failure_count == 1
        assert result.chain.current_failure_count == 0  # the accepted answer reset it
        assert collapse(recorder.summary()) == EXPECTED["processor_rejected"]

    def test_events_carry_the_messages_and_snapshots(self) -> None:
        """Each event gets its message, with the chain as it was just extended."""
        chain, recorder = make_chain(
            [says("Sunny."), says(JSON_ANSWER)], message_processors=[json_processor()]
        )
        chain.run()
        ((error_chain, rejected),) = arguments(recorder, "on_message_processing_error")
        ((reply_chain, reply),) = arguments(recorder, "on_error_message_created")
        assert rejected.role == "assistant"
        assert rejected.text == "Sunny."
        assert error_chain.messages[-1] == rejected
        assert reply.role == "user"
        assert reply_chain.messages[-2:] == (rejected, reply)
        assert reply_chain.current_failure_count == 0  # counted after the events
        ((processed_chain, processed),) = arguments(recorder, "on_message_processed")
        assert processed.metadata["processed_content"] == {"weather": "sunny"}
        assert processed_chain.messages[-1] == processed

    def test_retries_exceeded(self) -> None:
        """Rejections count until max_retry_count ends the run with one on_error."""
        chain, recorder = make_chain(
            [says("Sunny."), says("Still sunny.")],
            message_processors=[rejecting("Use JSON.")],
            max_retry_count=2,
        )
        result = chain.run()
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "exceeded_failure_count"
        assert result.error.original == Reject("Use JSON.")
        assert "Use JSON." in str(result.error)
        assert [m.role for m in result.chain.messages][-2:] == ["assistant", "user"]
        assert recorder.summary().count("on_error") == 1
        assert collapse(recorder.summary()) == EXPECTED["processor_retries_exceeded"]

    def test_single_mode_stops_after_the_reply(self) -> None:
        """ "single" makes one model call and ends "ok" with the reply last."""
        chain, recorder = make_chain(
            [says("Sunny."), says(JSON_ANSWER)], message_processors=[json_processor()]
        )
        result = chain.run("single")
        assert result.status == "ok"
        assert result.chain.messages[-1].role == "user"
        assert recorder.summary().count("on_error_message_created") == 1
        assert "on_message_processed" not in recorder.summary()
        follow_up = result.chain.run("single")
        assert follow_up.chain.messages[-1].metadata["processed_content"] == {
            "weather": "sunny"
        }

    def test_until_success_asks_again(self) -> None:
        """ "until_success" calls the model again after a rejection."""
        chain, _ = make_chain(
            [says("Sunny."), says(JSON_ANSWER)], message_processors=[json_processor()]
        )
        result = chain.run("until_success")
        assert result.status == "ok"
        assert result.chain.messages[-1].text == JSON_ANSWER

    def test_until_tool_used_asks_again(self) -> None:
        """ "until_tool_used" calls the model again after a rejection."""
        chain, _ = make_chain(
            [says("Sunny."), asks(call("get_weather", city="Paris"))],
            message_processors=[json_processor()],
        )
        result = chain.run("until_tool_used", tool_name="get_weather")
        assert result.status == "ok"
        assert result.chain.messages[-1].role == "tool"

    def test_later_processors_do_not_run(self) -> None:
        """After a Reject no further processor sees the answer."""
        seen: list[Message] = []
        chain, _ = make_chain(
            [says("Sunny."), says("Oui.")],
            message_processors=[rejecting(), tagging("!", seen)],
            max_retry_count=5,
        )
        chain.run("single")
        assert seen == []

    def test_rejected_message_is_as_earlier_processors_left_it(self) -> None:
        """The kept rejected answer carries the changes made before the Reject."""
        chain, recorder = make_chain(
            [says("Sunny.")], message_processors=[tagging("!"), rejecting()]
        )
        result = chain.run("single")
        assert result.chain.messages[1].text == "Sunny.!"
        ((_, rejected),) = arguments(recorder, "on_message_processing_error")
        assert rejected.text == "Sunny.!"

    def test_usage_is_reported_per_answer(self) -> None:
        """Each answer's usage is reported once, rejected or not."""
        chain, recorder = make_chain(
            [says("Sunny."), says(JSON_ANSWER)], message_processors=[json_processor()]
        )
        chain.run()
        usages: Sequence[TokenUsage] = [
            args[1] for args in arguments(recorder, "on_llm_token_usage")
        ]
        assert usages == [USAGE, USAGE]

    def test_rejection_without_usage(self) -> None:
        """An answer that reported no usage fires no on_llm_token_usage."""
        model = FixedModel(Message.assistant("Sunny."))
        recorder = RecordingChainHandler()
        chain = LLMChain(
            model, callbacks=[recorder], message_processors=[rejecting()]
        ).add_message(Message.user("Weather?"))
        chain.run("single")
        assert recorder.summary() == [
            "on_run_start",
            "on_llm_call_start",
            "on_llm_call_complete",
            "on_llm_new_message",
            "on_message_processing_error",
            "on_error_message_created",
            "on_run_complete",
        ]


class TestTransform:
    """Accepted answers are added as the processors return them."""

    def test_processors_run_in_order(self) -> None:
        """Each processor gets the previous one's message; the last one is added."""
        seen: list[Message] = []
        chain, recorder = make_chain(
            [says("Sunny.")],
            message_processors=[tagging("1"), tagging("2", seen)],
        )
        result = chain.run()
        assert [m.text for m in seen] == ["Sunny.1"]
        assert result.chain.messages[-1].text == "Sunny.12"
        ((_, processed),) = arguments(recorder, "on_message_processed")
        assert processed.text == "Sunny.12"
        assert "on_message_processing_error" not in recorder.summary()
        assert result.chain.current_failure_count == 0

    def test_processor_sees_the_run_snapshot(self) -> None:
        """A processor gets the run's chain before the answer is added."""
        snapshots: list[LLMChain] = []

        def look(chain: LLMChain, message: Message) -> Message | Reject:
            snapshots.append(chain)
            return message

        chain, _ = make_chain([says("Sunny.")], message_processors=[look])
        chain.run()
        (snapshot,) = snapshots
        assert snapshot.invocation is not None
        assert snapshot.messages[-1].role == "user"

    def test_tool_calls_are_not_processed(self) -> None:
        """An answer asking for tools goes to review and the tools unprocessed."""
        seen: list[Message] = []
        chain, _ = make_chain(
            [asks(call("get_weather", city="Paris")), says("Sunny.")],
            tools=(WEATHER,),
            message_processors=[tagging("!", seen)],
        )
        result = chain.run()
        assert [m.text for m in seen] == ["Sunny."]
        assert result.chain.messages[-1].text == "Sunny.!"

    @pytest.mark.parametrize(
        ("status", "processed"), [("length", True), ("cancelled", False)]
    )
    def test_statuses(
        self, status: Literal["length", "cancelled"], processed: bool
    ) -> None:
        """Answers cut off by a length limit are processed; cancelled ones are not."""
        answer = Message(role="assistant", content="Sun", status=status)
        chain = LLMChain(
            FixedModel(answer), message_processors=[tagging("!")]
        ).add_message(Message.user("Weather?"))
        result = chain.run()
        assert result.chain.messages[-1].text == ("Sun!" if processed else "Sun")


class BuggyProcessor:
    """A processor object without ``__qualname__`` on the instance."""

    def __call__(self, chain: LLMChain, message: Message) -> Message | Reject:
        raise KeyError("missing")


class TestFaults:
    """A processor with a bug ends the run like a raising handler."""

    def test_raising_processor(self) -> None:
        """An exception ends the run with one handler_error carrying it."""

        def broken(chain: LLMChain, message: Message) -> Message | Reject:
            raise RuntimeError("processor bug")

        chain, recorder = make_chain([says("Sunny.")], message_processors=[broken])
        result = chain.run()
        assert result.status == "error"
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert isinstance(result.error.original, RuntimeError)
        assert "broken" in str(result.error)
        assert recorder.summary()[-1] == "on_error"
        assert recorder.summary().count("on_error") == 1
        assert [m.role for m in result.chain.messages] == ["user"]

    def test_raising_processor_object(self) -> None:
        """A callable object is named by its repr in the error."""
        chain, _ = make_chain([says("Sunny.")], message_processors=[BuggyProcessor()])
        result = chain.run()
        assert result.error is not None
        assert "BuggyProcessor object" in str(result.error)

    @pytest.mark.parametrize(
        "value", [None, "Sunny.", Message.user("Sunny.")], ids=["none", "str", "user"]
    )
    def test_wrong_return(self, value: object) -> None:
        """Returning anything but an assistant Message or a Reject is a bug."""

        def wrong(chain: LLMChain, message: Message) -> Any:
            return value

        chain, _ = make_chain([says("Sunny.")], message_processors=[wrong])
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert "not an assistant Message or a Reject" in str(result.error)
        assert result.error.original is None

    def test_async_processor_is_refused_without_warning(self) -> None:
        """An async def processor's coroutine is closed (never awaited, no warning)."""

        async def later(chain: LLMChain, message: Message) -> Message:
            return message  # never runs: the coroutine is closed unawaited

        chain, _ = make_chain([says("Sunny.")], message_processors=[later])
        result = chain.run()
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert "coroutine" in str(result.error)


class TestJsonProcessor:
    """json_processor parses the answer or rejects it with a helpful reply."""

    CHAIN = LLMChain(ScriptedChatModel([]))

    def process(self, text: str, *, fenced: bool = False) -> Message | Reject:
        """Run json_processor on an assistant answer with ``text``."""
        message = Message(role="assistant", content=text, metadata={"id": "r1"})
        return json_processor(fenced=fenced)(self.CHAIN, message)

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            (JSON_ANSWER, {"weather": "sunny"}),
            (" [1, 2]\n", [1, 2]),
            ("3.5", 3.5),
            ("null", None),
        ],
    )
    def test_valid(self, text: str, value: object) -> None:
        """Any JSON value is parsed into metadata; text and metadata are kept."""
        processed = self.process(text)
        assert isinstance(processed, Message)
        assert processed.text == text
        assert processed.metadata == {"id": "r1", "processed_content": value}

    def test_invalid(self) -> None:
        """Prose is rejected with the parser's complaint and where it is."""
        rejected = self.process("Sunny.")
        assert isinstance(rejected, Reject)
        assert rejected.reply == (
            "ERROR: your answer is not valid JSON: Expecting value (line 1, "
            "column 1). Answer again with valid JSON only."
        )

    def test_fence_is_not_json_by_default(self) -> None:
        """Without fenced=True a fenced block is not unwrapped."""
        assert isinstance(self.process(f"```json\n{JSON_ANSWER}\n```"), Reject)

    @pytest.mark.parametrize(
        "text",
        [
            f"Here it is:\n```json\n{JSON_ANSWER}\n```\nEnjoy.",
            f"```JSON {JSON_ANSWER}```",
            f"```\n{JSON_ANSWER}\n```",
            JSON_ANSWER,
            f'```json\n{JSON_ANSWER}\n```\n```json\n{{"other": 1}}\n```',
        ],
        ids=["commentary", "upper-inline", "bare-fence", "no-fence", "first-block"],
    )
    def test_fenced(self, text: str) -> None:
        """fenced=True parses the first fenced block, or the whole text without one."""
        processed = self.process(text, fenced=True)
        assert isinstance(processed, Message)
        assert processed.metadata["processed_content"] == {"weather": "sunny"}

    def test_fenced_invalid(self) -> None:
        """A broken fenced block is rejected, saying which part failed."""
        rejected = self.process('```json\n{"weather": }\n```', fenced=True)
        assert isinstance(rejected, Reject)
        assert rejected.reply.startswith(
            "ERROR: the ```json block of your answer is not valid JSON"
        )


class AsyncRecorder(AsyncChainCallbackHandler):
    """Records the processing events, awaited."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Message]] = []

    @override
    async def on_message_processing_error(
        self, chain: LLMChain, message: Message
    ) -> None:
        self.events.append(("on_message_processing_error", message))

    @override
    async def on_error_message_created(self, chain: LLMChain, message: Message) -> None:
        self.events.append(("on_error_message_created", message))

    @override
    async def on_message_processed(self, chain: LLMChain, message: Message) -> None:
        self.events.append(("on_message_processed", message))


class TestAsync:
    """arun runs the same processors with the same firing order."""

    async def test_rejection_then_success(self) -> None:
        """arun fires the documented order of a rejection and a successful retry."""
        chain, recorder = make_chain(
            [says("Sunny."), says(JSON_ANSWER)], message_processors=[json_processor()]
        )
        result = await chain.arun()
        assert result.status == "ok"
        assert collapse(recorder.summary()) == EXPECTED["processor_rejected"]

    async def test_async_handlers(self) -> None:
        """Async handlers are awaited for the processing events."""
        handler = AsyncRecorder()
        model = ScriptedChatModel(
            [ScriptedTurn(text="Sunny.", usage=USAGE), says(JSON_ANSWER)]
        )
        chain = LLMChain(
            model, callbacks=[handler], message_processors=[json_processor()]
        ).add_message(Message.user("Weather?"))
        result = await chain.arun()
        assert result.status == "ok"
        names = [name for name, _ in handler.events]
        assert names == [
            "on_message_processing_error",
            "on_error_message_created",
            "on_message_processed",
        ]
        assert handler.events[1][1].role == "user"

    async def test_retries_exceeded(self) -> None:
        """arun gives up the same way when rejections use up the budget."""
        chain, recorder = make_chain(
            [says("Sunny."), says("Still sunny.")],
            message_processors=[json_processor()],
            max_retry_count=2,
        )
        result = await chain.arun()
        assert result.status == "error"
        assert collapse(recorder.summary()) == EXPECTED["processor_retries_exceeded"]

    async def test_fault(self) -> None:
        """A raising processor ends an async run with a handler_error."""
        chain, recorder = make_chain(
            [says("Sunny.")], message_processors=[BuggyProcessor()]
        )
        result = await chain.arun()
        assert result.error is not None
        assert result.error.type == "handler_error"
        assert isinstance(result.error.original, KeyError)
        assert recorder.summary()[-1] == "on_error"

    async def test_non_streamed_answer(self) -> None:
        """A non-streamed answer is processed after on_llm_new_message."""
        model = FixedModel(Message.assistant("Sunny."))
        recorder = RecordingChainHandler()
        chain = LLMChain(
            model, callbacks=[recorder], message_processors=[tagging("!")]
        ).add_message(Message.user("Weather?"))
        result = await chain.arun()
        assert result.chain.messages[-1].text == "Sunny.!"
        assert model.calls == 1
        assert recorder.summary()[3:5] == ["on_llm_new_message", "on_message_processed"]

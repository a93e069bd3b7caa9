"""``OpenTelemetryHandler``: GenAI spans and metrics, checked with the real OTel SDK."""

from __future__ import annotations

import asyncio
import contextvars
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.trace import SpanKind, StatusCode
from typing_extensions import override

from langhooks import (
    AsyncStreamingChatResponseHandler,
    ChatResponse,
    ContentPart,
    Deny,
    Interrupt,
    Invocation,
    LangHooksError,
    Message,
    MessageDelta,
    PartialResponse,
    PartialResponseContext,
    ReviewContext,
    StreamingChatResponseHandler,
    StreamingHandle,
    TokenUsage,
    ToolCall,
    ToolContext,
    ToolProgress,
    ToolResult,
    chain_callbacks,
)
from langhooks.chain import Decision, LLMChain, OkResult, RetryPolicy, Tool
from langhooks.integrations._otel import _calls as otel_calls
from langhooks.integrations.opentelemetry import (
    CAPTURE_CONTENT_ENV,
    OpenTelemetryHandler,
)
from langhooks.models import (
    ChatModel,
    ChatRequest,
    OpenAIChatModel,
    ScriptedChatModel,
    ScriptedTurn,
)

ERROR_TYPE = error_attributes.ERROR_TYPE
USAGE = TokenUsage(input_tokens=11, output_tokens=4)


class Ends(SpanProcessor):
    """Counts spans started and ended, to prove none is left open."""

    def __init__(self) -> None:
        self.started = 0
        self.ended = 0
        self._lock = threading.Lock()

    @override
    def on_start(self, span: SdkSpan, parent_context: Any = None) -> None:
        with self._lock:
            self.started += 1

    @override
    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.ended += 1


class Telemetry:
    """An SDK tracer and meter provider that keep everything in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.ends = Ends()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer_provider.add_span_processor(self.ends)
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.tracer = self.tracer_provider.get_tracer("tests")

    def handler(self, **options: Any) -> OpenTelemetryHandler:
        """An OpenTelemetryHandler on these providers."""
        return OpenTelemetryHandler(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            **options,
        )

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """Finished spans, in the order they ended (only those named ``name``)."""
        spans = list(self.exporter.get_finished_spans())
        if name is None:
            return spans
        return [span for span in spans if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        """The one finished span named ``name``."""
        (span,) = self.spans(name)
        return span

    def all_ended(self) -> bool:
        """Every span started so far was ended."""
        return self.ends.started == self.ends.ended

    def points(self, metric: str) -> list[HistogramDataPoint]:
        """The data points of one histogram."""
        data = self.reader.get_metrics_data()
        assert data is not None
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found += [
                            p
                            for p in item.data.data_points
                            if isinstance(p, HistogramDataPoint)
                        ]
        return found

    def unit(self, metric: str) -> str:
        """The unit a histogram was created with."""
        data = self.reader.get_metrics_data()
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        return item.unit or ""
        raise AssertionError(f"no metric {metric}")


# The providers of the running test, for the tools' own spans (the global tracer
# provider can be set only once per process).
CURRENT: list[Telemetry] = []


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """Fresh in-memory providers, and no content capture from the environment."""
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    telemetry = Telemetry()
    CURRENT[:] = [telemetry]
    yield telemetry
    telemetry.tracer_provider.shutdown()
    telemetry.meter_provider.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes as a plain dict."""
    return dict(span.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    """The span id of a span's parent, or None for a root."""
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    """A span's own id."""
    assert span.context is not None
    return int(span.context.span_id)


def weather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that makes a span of its own while it runs."""
    with CURRENT[0].tracer.start_as_current_span("weather service"):
        return f"sunny in {arguments.get('city', '?')}"


async def aweather(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """The async twin of ``weather``, yielding to other tasks while it runs."""
    with CURRENT[0].tracer.start_as_current_span("weather service"):
        await asyncio.sleep(0)
        return f"sunny in {arguments.get('city', '?')}"


def broken(arguments: Mapping[str, Any], context: ToolContext) -> str:
    """A tool that raises."""
    raise RuntimeError("service down")


def refusing(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
    """A tool that returns an error result."""
    return ToolResult(tool_call_id="x", name="refusing", content="no", is_error=True)


WEATHER = Tool("get_weather", weather, description="The weather in a city.")


def call(name: str = "get_weather", call_id: str = "call-1") -> ToolCall:
    """A tool call for a city."""
    return ToolCall(call_id=call_id, name=name, arguments={"city": "Oslo"})


def turns(*calls: ToolCall) -> list[ScriptedTurn]:
    """A turn calling ``calls`` (when any), then a final answer."""
    first = [ScriptedTurn(text="Let me look.", tool_calls=calls, usage=USAGE)]
    return [*(first if calls else []), ScriptedTurn(text="Done.", usage=USAGE)]


def no_wait() -> RetryPolicy:
    """Retries without sleeping."""

    async def asleep(seconds: float) -> None:
        return None

    return RetryPolicy(sleep=lambda seconds: None, async_sleep=asleep)


def start(chain: LLMChain) -> LLMChain:
    """The chain with a system and a user message."""
    return chain.add_messages([Message.system("Be brief."), Message.user("Weather?")])


class TestSpanTree:
    """A run is one invoke_agent span with chat and execute_tool children."""

    def test_tree(self, otel: Telemetry) -> None:
        """The run nests under the caller's span; tools' own spans nest under
        execute_tool; the caller's current span is unchanged afterwards."""
        chain = LLMChain(
            ScriptedChatModel(turns(call())),
            tools=[WEATHER],
            callbacks=[otel.handler()],
        )
        with otel.tracer.start_as_current_span("request") as request:
            result = start(chain).run()
            assert trace.get_current_span() is request
        assert result.status == "ok"
        agent = otel.one("invoke_agent langhooks")
        chats = otel.spans("chat")
        tool = otel.one("execute_tool get_weather")
        inner = otel.one("weather service")
        assert parent_id(agent) == span_id(otel.one("request"))
        assert [parent_id(chat) for chat in chats] == [span_id(agent)] * 2
        assert parent_id(tool) == span_id(agent)
        assert parent_id(inner) == span_id(tool)
        assert agent.kind is SpanKind.INTERNAL
        assert {chat.kind for chat in chats} == {SpanKind.CLIENT}
        assert tool.kind is SpanKind.INTERNAL
        assert (
            len({span.context.trace_id for span in otel.spans() if span.context}) == 1
        )
        assert otel.all_ended()

    def test_attributes(self, otel: Telemetry) -> None:
        """Each span carries the conventions' attributes and no content by default."""
        chain = LLMChain(
            ScriptedChatModel(turns(call())),
            tools=[WEATHER],
            callbacks=[otel.handler()],
        )
        result = start(chain).run()
        assert result.chain.invocation is not None
        run_id = result.chain.invocation.id
        assert attrs(otel.one("invoke_agent langhooks")) == {
            gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent",
            gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
            gen_ai.GEN_AI_AGENT_NAME: "langhooks",
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
            gen_ai.GEN_AI_USAGE_INPUT_TOKENS: 22,
            gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: 8,
        }
        first = attrs(otel.spans("chat")[0])
        first_chunk = first.pop(gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK)
        assert isinstance(first_chunk, float)
        assert first_chunk >= 0
        assert first == {
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
            gen_ai.GEN_AI_RESPONSE_MODEL: "scripted",
            gen_ai.GEN_AI_RESPONSE_ID: "scripted-0",
            gen_ai.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_call",),
            gen_ai.GEN_AI_USAGE_INPUT_TOKENS: 11,
            gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: 4,
        }
        assert attrs(otel.spans("chat")[1])[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] == (
            "stop",
        )
        assert attrs(otel.one("execute_tool get_weather")) == {
            gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
            gen_ai.GEN_AI_TOOL_NAME: "get_weather",
            gen_ai.GEN_AI_TOOL_CALL_ID: "call-1",
            gen_ai.GEN_AI_TOOL_TYPE: "function",
            gen_ai.GEN_AI_TOOL_DESCRIPTION: "The weather in a city.",
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
        }
        assert all(span.status.status_code is StatusCode.UNSET for span in otel.spans())

    def test_agent_name(self, otel: Telemetry) -> None:
        """agent_name names the run's span and sets gen_ai.agent.name."""
        chain = LLMChain(
            ScriptedChatModel(turns()), callbacks=[otel.handler(agent_name="planner")]
        )
        start(chain).run()
        span = otel.one("invoke_agent planner")
        assert attrs(span)[gen_ai.GEN_AI_AGENT_NAME] == "planner"

    def test_request_model(self, otel: Telemetry) -> None:
        """A model with a model name names the chat span and sets the request model
        on the run and chat spans."""

        class Named:
            """A model that says which model it is."""

            model = "tiny-1"

            def __init__(self) -> None:
                self.inner = ScriptedChatModel(turns())

            def stream(
                self,
                request: ChatRequest,
                handler: StreamingChatResponseHandler,
                *,
                handle: StreamingHandle | None = None,
            ) -> ChatResponse:
                return self.inner.stream(request, handler, handle=handle)

            async def astream(self, *args: Any, **kwargs: Any) -> ChatResponse:
                raise NotImplementedError

        model: ChatModel = Named()
        start(LLMChain(model, callbacks=[otel.handler()])).run()
        chat = otel.one("chat tiny-1")
        assert attrs(chat)[gen_ai.GEN_AI_REQUEST_MODEL] == "tiny-1"
        assert attrs(chat)[gen_ai.GEN_AI_PROVIDER_NAME] == "_OTHER"
        agent = attrs(otel.one("invoke_agent langhooks"))
        assert agent[gen_ai.GEN_AI_REQUEST_MODEL] == "tiny-1"

    def test_nested_run(self, otel: Telemetry) -> None:
        """A run started by a tool nests under that tool's execute_tool span."""
        handler = otel.handler(agent_name="inner")

        def delegate(arguments: Mapping[str, Any], context: ToolContext) -> str:
            inner = LLMChain(ScriptedChatModel(turns()), callbacks=[handler])
            return start(inner).run().chain.messages[-1].text

        outer = LLMChain(
            ScriptedChatModel(turns(call("delegate"))),
            tools=[Tool("delegate", delegate)],
            callbacks=[otel.handler(agent_name="outer")],
        )
        assert start(outer).run().status == "ok"
        tool = otel.one("execute_tool delegate")
        assert parent_id(otel.one("invoke_agent inner")) == span_id(tool)
        assert parent_id(tool) == span_id(otel.one("invoke_agent outer"))
        assert otel.all_ended()

    def test_concurrent_tools_in_threads(self, otel: Telemetry) -> None:
        """Concurrent tools each get their own execute_tool span, current in their
        own thread."""
        tool = Tool("get_weather", weather, concurrent=True)
        calls = [call(call_id=f"call-{n}") for n in range(4)]
        chain = LLMChain(
            ScriptedChatModel(turns(*calls)), tools=[tool], callbacks=[otel.handler()]
        )
        assert start(chain).run().status == "ok"
        tools = {
            attrs(span)[gen_ai.GEN_AI_TOOL_CALL_ID]: span_id(span)
            for span in otel.spans("execute_tool get_weather")
        }
        assert sorted(tools) == [f"call-{n}" for n in range(4)]
        inner_parents = sorted(parent_id(s) or 0 for s in otel.spans("weather service"))
        assert inner_parents == sorted(tools.values())

    @pytest.mark.parametrize("capture", [False, True])
    def test_progress_is_an_event_on_the_tool_span(
        self, otel: Telemetry, capture: bool
    ) -> None:
        """Each progress report is a "langhooks.tool.progress" event on the call's
        execute_tool span; its message only with content captured."""

        def counting(arguments: Mapping[str, Any], context: ToolContext) -> str:
            context.report_progress(1, 2, "halfway")
            context.report_progress(2)
            return "done"

        handler = otel.handler(capture_content=capture)
        chain = LLMChain(
            ScriptedChatModel(turns(call("count"))),
            tools=[Tool("count", counting)],
            callbacks=[handler],
        )
        assert start(chain).run().status == "ok"
        tool = otel.one("execute_tool count")
        first: dict[str, object] = {
            "langhooks.tool.progress.value": 1.0,
            "langhooks.tool.progress.total": 2.0,
        }
        if capture:
            first["langhooks.tool.progress.message"] = "halfway"
        assert [(e.name, dict(e.attributes or {})) for e in tool.events] == [
            ("langhooks.tool.progress", first),
            ("langhooks.tool.progress", {"langhooks.tool.progress.value": 2.0}),
        ]

    def test_progress_of_an_unknown_call_is_skipped(self, otel: Telemetry) -> None:
        """Progress of a call whose span the handler never opened (or outside a
        run) adds no event and raises nothing."""
        handler = otel.handler()
        chain = start(
            LLMChain(ScriptedChatModel([]), invocation=Invocation(name="run"))
        )
        handler.on_tool_progress(chain, call(), ToolProgress(1))
        handler.on_run_start(chain)
        handler.on_tool_progress(chain, call(), ToolProgress(1))
        handler.on_run_complete(chain, OkResult(chain=chain))
        assert [e.name for s in otel.spans() for e in s.events] == []

    def test_a_sync_handler_in_arun(self, otel: Telemetry) -> None:
        """The sync handler works for arun(), with async tools nested right."""
        tool = Tool("get_weather", aweather)
        chain = LLMChain(
            ScriptedChatModel(turns(call())), tools=[tool], callbacks=[otel.handler()]
        )
        assert asyncio.run(start(chain).arun()).status == "ok"
        tool_span = otel.one("execute_tool get_weather")
        assert parent_id(otel.one("weather service")) == span_id(tool_span)
        assert otel.all_ended()


class HttpModel:
    """A ChatModel that, like an SDK with an instrumented HTTP client, makes a span
    of its own (with the global-style tracer of the test) while it streams."""

    def __init__(self, turns: Sequence[ScriptedTurn | LangHooksError]) -> None:
        self.scripted = ScriptedChatModel(turns)
        self.model = "http-model"

    def stream(
        self,
        request: ChatRequest,
        handler: StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """Stream the next scripted turn inside a "POST" span."""
        with CURRENT[0].tracer.start_as_current_span("POST", kind=SpanKind.CLIENT):
            return self.scripted.stream(request, handler, handle=handle)

    async def astream(
        self,
        request: ChatRequest,
        handler: AsyncStreamingChatResponseHandler | StreamingChatResponseHandler,
        *,
        handle: StreamingHandle | None = None,
    ) -> ChatResponse:
        """The async twin of ``stream``."""
        with CURRENT[0].tracer.start_as_current_span("POST", kind=SpanKind.CLIENT):
            await asyncio.sleep(0)
            return await self.scripted.astream(request, handler, handle=handle)


def assert_http_spans_under_chat(otel: Telemetry, attempts: int) -> None:
    """Each attempt's POST span is a child of that attempt's chat span, and every
    chat, tool and POST span sits where it should."""
    agent = otel.one("invoke_agent langhooks")
    chats = otel.spans("chat http-model")
    posts = otel.spans("POST")
    assert len(chats) == len(posts) == attempts
    # Spans end in order: each POST before its chat span.
    assert [parent_id(post) for post in posts] == [span_id(chat) for chat in chats]
    assert {parent_id(chat) for chat in chats} == {span_id(agent)}
    tool = otel.one("execute_tool get_weather")
    assert parent_id(tool) == span_id(agent)
    assert parent_id(otel.one("weather service")) == span_id(tool)
    assert otel.all_ended()


class TestChatSpanIsCurrent:
    """The chat span is current while the model streams, and only then."""

    def turns(self) -> list[ScriptedTurn | LangHooksError]:
        """A failed attempt, its retry asking for a tool, then the answer."""
        busy = LangHooksError("overloaded", "busy", retryable=True)
        return [busy, *turns(call())]

    def test_run(self, otel: Telemetry) -> None:
        """Under run(), a span the model makes nests under its attempt's chat span
        (a retry's under the retry's); the caller's span is current afterwards."""
        chain = LLMChain(
            HttpModel(self.turns()),
            tools=[WEATHER],
            callbacks=[otel.handler()],
            retry=no_wait(),
        )
        with otel.tracer.start_as_current_span("request") as request:
            assert start(chain).run().status == "ok"
            assert trace.get_current_span() is request
        assert_http_spans_under_chat(otel, 3)
        assert parent_id(otel.one("invoke_agent langhooks")) == span_id(
            otel.one("request")
        )

    async def test_arun(self, otel: Telemetry) -> None:
        """Under arun() the same handler does the same."""
        handler = otel.handler()
        chain = LLMChain(
            HttpModel(self.turns()),
            tools=[Tool("get_weather", aweather)],
            callbacks=[handler],
            retry=no_wait(),
        )
        with otel.tracer.start_as_current_span("request") as request:
            assert (await start(chain).arun()).status == "ok"
            assert trace.get_current_span() is request
        assert_http_spans_under_chat(otel, 3)

    async def test_concurrent_runs(self, otel: Telemetry) -> None:
        """Runs at once in tasks: each model's span nests under its own chat span."""
        handler = otel.handler()

        async def one() -> None:
            chain = LLMChain(HttpModel(turns()), callbacks=[handler])
            assert (await start(chain).arun()).status == "ok"

        await asyncio.gather(*(one() for _ in range(10)))
        chats = {span_id(chat): chat for chat in otel.spans("chat http-model")}
        posts = otel.spans("POST")
        assert len(posts) == len(chats) == 10
        assert {parent_id(post) for post in posts} == set(chats)
        assert trace.get_current_span() is trace.INVALID_SPAN


class TestFailures:
    """Failed attempts, raising tools and failed runs: error status, nothing open."""

    def test_retry(self, otel: Telemetry) -> None:
        """A failed attempt is its own chat span with error.type; the retry another."""
        model = ScriptedChatModel(
            [LangHooksError("overloaded", "busy", retryable=True), *turns()]
        )
        chain = LLMChain(model, callbacks=[otel.handler()], retry=no_wait())
        assert start(chain).run().status == "ok"
        failed, retried = otel.spans("chat")
        assert failed.status.status_code is StatusCode.ERROR
        assert failed.status.description == "overloaded: busy"
        assert attrs(failed)[ERROR_TYPE] == "overloaded"
        assert [event.name for event in failed.events] == ["exception"]
        assert retried.status.status_code is StatusCode.UNSET
        assert ERROR_TYPE not in attrs(retried)
        agent = otel.one("invoke_agent langhooks")
        assert agent.status.status_code is StatusCode.UNSET
        (retry,) = agent.events
        assert retry.name == "langhooks.retry"
        retry_attributes = dict(retry.attributes or {})
        assert retry_attributes[ERROR_TYPE] == "overloaded"
        assert retry_attributes["langhooks.retry.attempt"] == 2
        assert 0.4 <= float(str(retry_attributes["langhooks.retry.delay"])) <= 0.6
        durations = otel.points("gen_ai.client.operation.duration")
        assert sorted(
            str(dict(p.attributes or {}).get(ERROR_TYPE)) for p in durations
        ) == [
            "None",
            "overloaded",
        ]

    async def test_retries_numbered_per_model(self, otel: Telemetry) -> None:
        """Retry events number the attempt they announce; a fallback starts at 1
        (the async twin, under arun)."""
        busy = LangHooksError("overloaded", "busy", retryable=True)
        chain = LLMChain(
            ScriptedChatModel([busy, busy, busy]),
            fallbacks=[ScriptedChatModel([busy, *turns()])],
            callbacks=[otel.handler()],
            retry=RetryPolicy(
                max_attempts=3,
                jitter=0.0,
                sleep=lambda s: None,
                async_sleep=no_wait().async_sleep,
            ),
        )
        assert (await start(chain).arun()).status == "ok"
        agent = otel.one("invoke_agent langhooks")
        assert [
            (e.name, dict(e.attributes or {})["langhooks.retry.attempt"])
            for e in agent.events
        ] == [("langhooks.retry", 2), ("langhooks.retry", 3), ("langhooks.retry", 2)]
        delays = [
            dict(e.attributes or {})["langhooks.retry.delay"] for e in agent.events
        ]
        assert delays == [0.5, 1.0, 0.5]
        assert len(otel.spans("chat")) == 5

    def test_fallback(self, otel: Telemetry) -> None:
        """Each fallback attempt is a chat span of its own under the same run."""
        failing = ScriptedChatModel(
            [LangHooksError("overloaded", "busy", retryable=True)]
        )
        chain = LLMChain(
            failing,
            fallbacks=[ScriptedChatModel(turns())],
            callbacks=[otel.handler()],
            retry=RetryPolicy(max_attempts=1, sleep=lambda s: None),
        )
        assert start(chain).run().status == "ok"
        statuses = [span.status.status_code for span in otel.spans("chat")]
        assert statuses == [StatusCode.ERROR, StatusCode.UNSET]
        agent = otel.one("invoke_agent langhooks")
        assert {parent_id(s) for s in otel.spans("chat")} == {span_id(agent)}

    def test_failed_run(self, otel: Telemetry) -> None:
        """A run that ends in on_error leaves every span ended, with error status."""
        model = ScriptedChatModel([LangHooksError("authentication", "bad key")])
        chain = LLMChain(model, callbacks=[otel.handler()])
        assert start(chain).run().status == "error"
        agent = otel.one("invoke_agent langhooks")
        assert agent.status.status_code is StatusCode.ERROR
        assert attrs(agent)[ERROR_TYPE] == "authentication"
        assert attrs(otel.one("chat"))[ERROR_TYPE] == "authentication"
        assert otel.all_ended()

    def test_handler_fault_mid_stream(self, otel: Telemetry) -> None:
        """Another handler raising mid-stream ends the open chat span with the run's
        error."""

        def explode(chain: LLMChain, deltas: Sequence[MessageDelta]) -> None:
            raise ValueError("handler bug")

        chain = LLMChain(
            ScriptedChatModel(turns()),
            callbacks=[otel.handler(), chain_callbacks(on_llm_new_delta=explode)],
        )
        result = start(chain).run()
        assert result.status == "error"
        chat = otel.one("chat")
        assert attrs(chat)[ERROR_TYPE] == "handler_error"
        assert attrs(otel.one("invoke_agent langhooks"))[ERROR_TYPE] == "handler_error"
        assert otel.all_ended()

    def test_handler_fault_in_a_tool(self, otel: Telemetry) -> None:
        """A run that fails while a tool's span is open ends that span too."""

        def explode(chain: LLMChain, call: ToolCall, tool: Tool) -> None:
            raise ValueError("handler bug")

        chain = LLMChain(
            ScriptedChatModel(turns(call())),
            tools=[WEATHER],
            callbacks=[otel.handler(), chain_callbacks(on_tool_pre_execution=explode)],
        )
        assert start(chain).run().status == "error"
        tool = otel.one("execute_tool get_weather")
        assert tool.status.status_code is StatusCode.ERROR
        assert attrs(tool)[ERROR_TYPE] == "handler_error"
        assert otel.all_ended()

    def test_raising_tool(self, otel: Telemetry) -> None:
        """A raising tool's span has error status, its exception and error.type."""
        chain = LLMChain(
            ScriptedChatModel(turns(call("broken"))),
            tools=[Tool("broken", broken)],
            callbacks=[otel.handler()],
        )
        assert start(chain).run().status == "ok"
        span = otel.one("execute_tool broken")
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "service down"
        assert attrs(span)[ERROR_TYPE] == "RuntimeError"
        (event,) = span.events
        assert dict(event.attributes or {})["exception.type"] == "RuntimeError"

    def test_error_results(self, otel: Telemetry) -> None:
        """A tool returning an error and a call to an unknown tool are tool_error."""
        chain = LLMChain(
            ScriptedChatModel(turns(call("refusing", "c1"), call("missing", "c2"))),
            tools=[Tool("refusing", refusing)],
            callbacks=[otel.handler()],
        )
        assert start(chain).run().status == "ok"
        for name in ("execute_tool refusing", "execute_tool missing"):
            span = otel.one(name)
            assert span.status.status_code is StatusCode.ERROR
            assert attrs(span)[ERROR_TYPE] == "tool_error"

    def test_cancelled_stream(self, otel: Telemetry) -> None:
        """A cancelled stream's chat span ends with error.type cancelled."""

        class Cancelled:
            """A model whose every stream is cancelled before it starts."""

            def __init__(self) -> None:
                self.inner = ScriptedChatModel(turns())

            def stream(
                self,
                request: ChatRequest,
                handler: StreamingChatResponseHandler,
                *,
                handle: StreamingHandle | None = None,
            ) -> ChatResponse:
                cancelled = StreamingHandle()
                cancelled.cancel()
                return self.inner.stream(request, handler, handle=cancelled)

            async def astream(self, *args: Any, **kwargs: Any) -> ChatResponse:
                raise NotImplementedError

        model: ChatModel = Cancelled()
        chain = LLMChain(model, callbacks=[otel.handler()])
        start(chain).run()
        chat = otel.one("chat")
        assert chat.status.status_code is StatusCode.ERROR
        assert attrs(chat)[ERROR_TYPE] == "cancelled"
        assert otel.all_ended()


class TestReview:
    """Denied and interrupted calls are visible on spans of their own."""

    def test_denied_and_interrupted(self, otel: Telemetry) -> None:
        """Each refused call has an execute_tool span with error status and type;
        the resumed call runs in a span of the resumed run."""

        def review(
            chain: LLMChain, call: ToolCall, tool: Tool, context: ReviewContext
        ) -> Deny | Interrupt | None:
            if context.human_decision is not None:
                return None
            if call.call_id == "c1":
                return Deny("not today")
            return Interrupt("ask a human")

        handler = otel.handler()
        chain = LLMChain(
            ScriptedChatModel(turns(call(call_id="c1"), call(call_id="c2"))),
            tools=[WEATHER],
            callbacks=[handler, chain_callbacks(on_tool_call_review=review)],
        )
        result = start(chain).run()
        assert result.status == "interrupted"
        denied, interrupted = otel.spans("execute_tool get_weather")
        assert attrs(denied)[ERROR_TYPE] == "denied"
        assert attrs(interrupted)[ERROR_TYPE] == "interrupted"
        assert {denied.status.status_code, interrupted.status.status_code} == {
            StatusCode.ERROR
        }
        agent = otel.one("invoke_agent langhooks")
        assert agent.status.status_code is StatusCode.UNSET
        assert otel.all_ended()

        waiting = result.chain.pending_tool_calls
        resumed = result.chain.execute_tool_calls_with_decisions(
            waiting, [Decision.approve()]
        )
        assert resumed.status == "ok"
        ran = otel.spans("execute_tool get_weather")[-1]
        assert ran.status.status_code is StatusCode.UNSET
        assert attrs(ran)[gen_ai.GEN_AI_TOOL_CALL_ID] == "c2"
        assert len(otel.spans("invoke_agent langhooks")) == 2
        assert parent_id(ran) == span_id(otel.spans("invoke_agent langhooks")[-1])

    def test_interrupt_from_the_tool(self, otel: Telemetry) -> None:
        """A tool that interrupts itself ends its open span as interrupted."""

        def ask(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult(
                tool_call_id="x", name="ask", content="?", is_interrupt=True
            )

        chain = LLMChain(
            ScriptedChatModel(turns(call("ask"))),
            tools=[Tool("ask", ask)],
            callbacks=[otel.handler()],
        )
        assert start(chain).run().status == "interrupted"
        assert attrs(otel.one("execute_tool ask"))[ERROR_TYPE] == "interrupted"
        assert otel.all_ended()


class TestContent:
    """Content is recorded only when asked for."""

    def test_capture_content(self, otel: Telemetry) -> None:
        """capture_content=True records messages, tool definitions, arguments and
        results in the conventions' JSON shapes."""
        chain = LLMChain(
            ScriptedChatModel(turns(call())),
            tools=[WEATHER],
            callbacks=[otel.handler(capture_content=True)],
        )
        start(chain).run()
        first = attrs(otel.spans("chat")[0])
        assert first[gen_ai.GEN_AI_INPUT_MESSAGES] == (
            '[{"role":"user","parts":[{"type":"text","content":"Weather?"}]}]'
        )
        assert first[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS] == (
            '[{"type":"text","content":"Be brief."}]'
        )
        assert first[gen_ai.GEN_AI_TOOL_DEFINITIONS] == (
            '[{"type":"function","name":"get_weather",'
            '"description":"The weather in a city."}]'
        )
        assert first[gen_ai.GEN_AI_OUTPUT_MESSAGES] == (
            '[{"role":"assistant","parts":[{"type":"text","content":"Let me look."},'
            '{"type":"tool_call","id":"call-1","name":"get_weather",'
            '"arguments":{"city":"Oslo"}}],"finish_reason":"tool_call"}]'
        )
        second = attrs(otel.spans("chat")[1])
        assert '"type":"tool_call_response","id":"call-1"' in str(
            second[gen_ai.GEN_AI_INPUT_MESSAGES]
        )
        tool = attrs(otel.one("execute_tool get_weather"))
        assert tool[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"city":"Oslo"}'
        assert tool[gen_ai.GEN_AI_TOOL_CALL_RESULT] == "sunny in Oslo"

    def test_capture_without_system_or_tools(self, otel: Telemetry) -> None:
        """Without system messages or tools those two attributes are absent."""
        handler = otel.handler(capture_content=True)
        model = ScriptedChatModel([ScriptedTurn(text="ok")])
        handler.traced_stream(model, ChatRequest([Message.user("hi")]))
        recorded = attrs(otel.one("chat"))
        assert gen_ai.GEN_AI_INPUT_MESSAGES in recorded
        assert gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS not in recorded
        assert gen_ai.GEN_AI_TOOL_DEFINITIONS not in recorded

    def test_no_content_by_default(self, otel: Telemetry) -> None:
        """Without the switch no content attribute appears on any span."""
        chain = LLMChain(
            ScriptedChatModel(turns(call())),
            tools=[WEATHER],
            callbacks=[otel.handler()],
        )
        start(chain).run()
        content_keys = {
            gen_ai.GEN_AI_INPUT_MESSAGES,
            gen_ai.GEN_AI_OUTPUT_MESSAGES,
            gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS,
            gen_ai.GEN_AI_TOOL_DEFINITIONS,
            gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS,
            gen_ai.GEN_AI_TOOL_CALL_RESULT,
        }
        assert not any(content_keys & set(attrs(span)) for span in otel.spans())

    @pytest.mark.parametrize(
        ("value", "captured"),
        [
            ("true", True),
            ("TRUE", True),
            ("span_only", True),
            ("event_only", True),
            ("span_and_event", True),
            ("no_content", False),
            ("false", False),
        ],
    )
    def test_environment(
        self,
        otel: Telemetry,
        monkeypatch: pytest.MonkeyPatch,
        value: str,
        captured: bool,
    ) -> None:
        """The conventional environment variable turns capture on."""
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, value)
        assert otel.handler().capture_content is captured

    def test_odd_values(self, otel: Telemetry) -> None:
        """Media parts, thinking, non-JSON arguments and answers without a finish
        reason are recorded without failing the run."""

        class Opaque:
            @override
            def __repr__(self) -> str:
                return "<opaque>"

        handler = otel.handler(capture_content=True)
        request = ChatRequest(
            [
                Message(
                    role="user",
                    content=[
                        ContentPart(type="image_url", content="http://x/a.png"),
                        ContentPart(type="file", content="ref-1"),
                    ],
                ),
                Message(
                    role="assistant",
                    content=[ContentPart.thinking("hmm")],
                    tool_calls=[
                        ToolCall(call_id="c", name="t", arguments={"when": Opaque()})
                    ],
                ),
            ],
            tools=[Tool("t", weather, parameters_schema={"type": "object"})],
        )
        model = ScriptedChatModel([ScriptedTurn(text="ok")])
        cancelled = StreamingHandle()
        cancelled.cancel()
        handler.traced_stream(model, request, handle=cancelled)
        span = attrs(otel.one("chat"))
        assert span[gen_ai.GEN_AI_INPUT_MESSAGES] == (
            '[{"role":"user","parts":[{"type":"uri","modality":"image",'
            '"uri":"http://x/a.png"},{"type":"file","content":"ref-1"}]},'
            '{"role":"assistant","parts":[{"type":"reasoning","content":"hmm"},'
            '{"type":"tool_call","id":"c","name":"t","arguments":'
            '{"when":"<opaque>"}}]}]'
        )
        assert span[gen_ai.GEN_AI_TOOL_DEFINITIONS] == (
            '[{"type":"function","name":"t","parameters":{"type":"object"}}]'
        )
        assert span[gen_ai.GEN_AI_OUTPUT_MESSAGES] == (
            '[{"role":"assistant","parts":[],"finish_reason":"cancelled"}]'
        )


class TestMetrics:
    """Token usage, operation duration and time to first chunk."""

    def test_histograms(self, otel: Telemetry) -> None:
        """Each histogram has the conventional name, unit and attributes."""
        chain = LLMChain(
            ScriptedChatModel(turns(call())),
            tools=[WEATHER],
            callbacks=[otel.handler()],
        )
        start(chain).run()
        tokens = {
            dict(p.attributes or {})[gen_ai.GEN_AI_TOKEN_TYPE]: (p.count, p.sum)
            for p in otel.points("gen_ai.client.token.usage")
        }
        assert tokens == {"input": (2, 22), "output": (2, 8)}
        assert otel.unit("gen_ai.client.token.usage") == "{token}"
        (duration,) = otel.points("gen_ai.client.operation.duration")
        assert duration.count == 2
        assert dict(duration.attributes or {}) == {
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            gen_ai.GEN_AI_PROVIDER_NAME: "langhooks.scripted",
            gen_ai.GEN_AI_RESPONSE_MODEL: "scripted",
        }
        assert otel.unit("gen_ai.client.operation.duration") == "s"
        (first,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
        assert first.count == 2
        assert otel.unit("gen_ai.client.operation.time_to_first_chunk") == "s"

    def test_model_attributes(self) -> None:
        """A provider model gives its provider, request model and server."""
        model = OpenAIChatModel(
            "gpt-test", base_url="http://127.0.0.1:9/v1", api_key="k", temperature=0.5
        )
        assert otel_calls.provider(model) == "openai"
        assert otel_calls.request_attributes(model) == {
            gen_ai.GEN_AI_REQUEST_MODEL: "gpt-test",
            gen_ai.GEN_AI_REQUEST_TEMPERATURE: 0.5,
            server_attributes.SERVER_ADDRESS: "127.0.0.1",
            server_attributes.SERVER_PORT: 9,
        }

    def test_provider_names(self) -> None:
        """Every provider model reports its ``gen_ai.provider.name`` from the
        conventions' list; a Gemini model on a Vertex AI client reports Vertex."""
        pytest.importorskip("google.genai")
        pytest.importorskip("cohere")
        pytest.importorskip("mistralai")
        pytest.importorskip("boto3")
        from google import genai as google_genai

        from langhooks.models import (
            BedrockChatModel,
            CohereChatModel,
            GeminiChatModel,
            MistralChatModel,
        )

        url = "http://127.0.0.1:9"
        assert otel_calls.provider(GeminiChatModel(model="g", api_key="k")) == (
            "gcp.gemini"
        )
        vertex = google_genai.Client(vertexai=True, api_key="k")
        assert otel_calls.provider(GeminiChatModel(model="g", client=vertex)) == (
            "gcp.vertex_ai"
        )
        assert otel_calls.provider(
            CohereChatModel(model="c", api_key="k", base_url=url)
        ) == ("cohere")
        assert otel_calls.provider(
            MistralChatModel(model="m", api_key="k", base_url=url)
        ) == ("mistral_ai")
        assert otel_calls.provider(
            BedrockChatModel(model="b", region="us-east-1", endpoint_url=url)
        ) == ("aws.bedrock")

    def test_other_models(self) -> None:
        """Another model is provider _OTHER; its server port defaults by scheme."""

        class Custom:
            model = "m"
            base_url = "https://models.example/v1"
            max_tokens = 100
            temperature = True  # not a number: ignored

        class Unreachable:
            base_url = "ftp://host"

        class Relative:
            base_url = "/v1"

        assert otel_calls.provider(Custom()) == "_OTHER"
        assert otel_calls.request_attributes(Custom()) == {
            gen_ai.GEN_AI_REQUEST_MODEL: "m",
            gen_ai.GEN_AI_REQUEST_MAX_TOKENS: 100,
            server_attributes.SERVER_ADDRESS: "models.example",
            server_attributes.SERVER_PORT: 443,
        }
        assert otel_calls.request_attributes(Unreachable()) == {
            server_attributes.SERVER_ADDRESS: "host"
        }
        assert otel_calls.request_attributes(Relative()) == {}
        assert otel_calls.provider(RetryPolicy()) == "_OTHER"


class TestConcurrency:
    """One handler, many runs at once: each run is a tree of its own."""

    async def test_200_concurrent_runs(self, otel: Telemetry) -> None:
        """200 concurrent arun() on one handler: each run's spans form their own
        tree under its caller's span."""
        handler = otel.handler()
        tools = [Tool("get_weather", aweather, concurrent=True)]

        async def one(number: int) -> None:
            calls = [call(call_id=f"c{number}-{n}") for n in range(2)]
            chain = LLMChain(
                ScriptedChatModel(turns(*calls)), tools=tools, callbacks=[handler]
            )
            with otel.tracer.start_as_current_span(f"request {number}"):
                result = await start(chain).arun()
            assert result.status == "ok"

        await asyncio.gather(*(one(n) for n in range(200)))
        assert otel.all_ended()
        spans = otel.spans()
        by_id = {span_id(span): span for span in spans}
        agents = otel.spans("invoke_agent langhooks")
        assert len(agents) == 200
        for agent in agents:
            assert agent.context is not None
            trace_id = agent.context.trace_id
            tree = [s for s in spans if s.context and s.context.trace_id == trace_id]
            assert sorted(s.name.split(" ")[0] for s in tree) == [
                "chat",
                "chat",
                "execute_tool",
                "execute_tool",
                "invoke_agent",
                "request",
                "weather",
                "weather",
            ]
            request = by_id[parent_id(agent) or 0]
            assert request.name.startswith("request ")
            for span in tree:
                if span.name.startswith(("chat", "execute_tool")):
                    assert parent_id(span) == span_id(agent)
                if span.name == "weather service":
                    assert (
                        by_id[parent_id(span) or 0].name == "execute_tool get_weather"
                    )
            run_ids = {
                attrs(s).get(gen_ai.GEN_AI_CONVERSATION_ID)
                for s in tree
                if s.name.startswith(("invoke_agent", "chat", "execute_tool"))
            }
            assert len(run_ids) == 1

    def test_runs_in_threads(self, otel: Telemetry) -> None:
        """Concurrent run() calls in threads on one handler keep their trees apart."""
        handler = otel.handler()
        tool = Tool("get_weather", weather, concurrent=True)

        def one(number: int) -> None:
            calls = [call(call_id=f"c{number}-{n}") for n in range(2)]
            chain = LLMChain(
                ScriptedChatModel(turns(*calls)), tools=[tool], callbacks=[handler]
            )
            with otel.tracer.start_as_current_span(f"request {number}"):
                assert start(chain).run().status == "ok"

        threads = [threading.Thread(target=one, args=(n,)) for n in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert otel.all_ended()
        by_id = {span_id(span): span for span in otel.spans()}
        for span in otel.spans():
            if span.name.startswith(("chat", "execute_tool")):
                agent = by_id[parent_id(span) or 0]
                assert agent.name == "invoke_agent langhooks"
                assert span.context is not None
                assert agent.context is not None
                assert span.context.trace_id == agent.context.trace_id
            if span.name == "weather service":
                assert by_id[parent_id(span) or 0].name == "execute_tool get_weather"
        traces = {s.context.trace_id for s in otel.spans() if s.context is not None}
        assert len(traces) == 20

    async def test_arun_everything(self, otel: Telemetry) -> None:
        """Under arun() the handler records the same spans, failures and metrics."""

        def review(
            chain: LLMChain, call: ToolCall, tool: Tool, context: ReviewContext
        ) -> Deny | None:
            return Deny("no") if call.call_id == "c3" else None

        model = ScriptedChatModel(
            [
                LangHooksError("overloaded", "busy", retryable=True),
                *turns(call(call_id="c1"), call("broken", "c2"), call(call_id="c3")),
            ]
        )
        chain = LLMChain(
            model,
            tools=[Tool("get_weather", aweather), Tool("broken", broken)],
            callbacks=[
                otel.handler(),
                chain_callbacks(on_tool_call_review=review),
            ],
            retry=no_wait(),
        )
        assert (await start(chain).arun()).status == "ok"
        assert [s.status.status_code for s in otel.spans("chat")] == [
            StatusCode.ERROR,
            StatusCode.UNSET,
            StatusCode.UNSET,
        ]
        errors = sorted(
            str(attrs(s).get(ERROR_TYPE))
            for s in otel.spans()
            if "execute_tool" in s.name
        )
        assert errors == ["None", "RuntimeError", "denied"]
        assert otel.points("gen_ai.client.operation.time_to_first_chunk")

        async def ask(arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
            return ToolResult(
                tool_call_id="x", name="ask", content="?", is_interrupt=True
            )

        interrupted = LLMChain(
            ScriptedChatModel(turns(call("ask"))),
            tools=[Tool("ask", ask)],
            callbacks=[otel.handler()],
        )
        assert (await start(interrupted).arun()).status == "interrupted"
        failing = LLMChain(
            ScriptedChatModel([LangHooksError("authentication", "bad")]),
            callbacks=[otel.handler()],
        )
        assert (await start(failing).arun()).status == "error"
        assert otel.all_ended()


class TestBareStream:
    """traced_stream wraps one model.stream() in a chat span."""

    def test_traced_stream(self, otel: Telemetry) -> None:
        """The chat span is current during the stream and ends with the response."""
        seen: list[trace.Span] = []

        class Watch(StreamingChatResponseHandler):
            @override
            def on_partial_response(
                self, partial: PartialResponse, context: PartialResponseContext
            ) -> None:
                seen.append(trace.get_current_span())

        handler = otel.handler()
        model = ScriptedChatModel([ScriptedTurn(text="Hello there", usage=USAGE)])
        request = ChatRequest([Message.user("hi")])
        response = handler.traced_stream(model, request, Watch())
        assert response.message.text == "Hello there"
        chat = otel.one("chat")
        assert {span.get_span_context().span_id for span in seen} == {span_id(chat)}
        assert attrs(chat)[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == 11
        assert gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in attrs(chat)
        assert gen_ai.GEN_AI_CONVERSATION_ID not in attrs(chat)
        assert trace.get_current_span() is trace.INVALID_SPAN

    def test_traced_stream_without_handler(self, otel: Telemetry) -> None:
        """Without a handler the stream is still timed and traced; thinking and
        tool-call pieces count as chunks too."""
        handler = otel.handler()
        model = ScriptedChatModel(
            [ScriptedTurn(thinking="hmm"), ScriptedTurn(tool_calls=[call()])]
        )
        request = ChatRequest([Message.user("hi")])
        handler.traced_stream(model, request)
        handler.traced_stream(model, request)
        assert len(otel.spans("chat")) == 2
        (first,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
        assert first.count == 2

    def test_traced_stream_error(self, otel: Telemetry) -> None:
        """A failing stream raises and its span ends with error status."""
        handler = otel.handler()
        model = ScriptedChatModel([LangHooksError("rate_limited", "slow down")])
        with pytest.raises(LangHooksError, match="slow down"):
            handler.traced_stream(model, ChatRequest([Message.user("hi")]))
        chat = otel.one("chat")
        assert chat.status.status_code is StatusCode.ERROR
        assert attrs(chat)[ERROR_TYPE] == "rate_limited"

    async def test_atraced_stream(self, otel: Telemetry) -> None:
        """The async twin traces astream, with or without a handler, and errors."""
        handler = otel.handler()
        model = ScriptedChatModel(
            [
                ScriptedTurn(text="one"),
                ScriptedTurn(text="two"),
                LangHooksError("timeout", "too slow"),
            ]
        )
        request = ChatRequest([Message.user("hi")])
        await handler.atraced_stream(model, request)
        await handler.atraced_stream(model, request, StreamingChatResponseHandler())
        with pytest.raises(LangHooksError):
            await handler.atraced_stream(model, request)
        codes = [span.status.status_code for span in otel.spans("chat")]
        assert codes == [StatusCode.UNSET, StatusCode.UNSET, StatusCode.ERROR]

    def test_other_exception(self, otel: Telemetry) -> None:
        """A model that raises something else: error.type is the exception's class."""

        class Broken:
            def stream(self, *args: Any, **kwargs: Any) -> ChatResponse:
                raise KeyError("k")

            async def astream(self, *args: Any, **kwargs: Any) -> ChatResponse:
                raise NotImplementedError

        model: ChatModel = Broken()
        with pytest.raises(KeyError):
            otel.handler().traced_stream(model, ChatRequest([Message.user("hi")]))
        assert attrs(otel.one("chat"))[ERROR_TYPE] == "KeyError"


class TestEdges:
    """Events the handler cannot place are ignored; bad options are refused."""

    def test_events_outside_a_run(self, otel: Telemetry) -> None:
        """Events for a run the handler never saw start make no span and no error."""
        handler = otel.handler()
        unknown = start(LLMChain(ScriptedChatModel([])))
        stranger = LLMChain(ScriptedChatModel([]), invocation=Invocation(name="run"))
        model = ScriptedChatModel([])
        request = ChatRequest([Message.user("hi")])
        result = ToolResult(tool_call_id="c", name="t", content="x")
        response = ChatResponse(message=Message.assistant("x"))
        error = LangHooksError("timeout", "t")
        for chain in (unknown, stranger):
            handler.on_llm_call_start(chain, model, request)
            handler.on_llm_new_delta(chain, [MessageDelta(text="x")])
            handler.on_llm_call_complete(chain, response)
            handler.on_llm_error(chain, error)
            handler.on_llm_retry(chain, error, 0.5)
            handler.on_tool_pre_execution(chain, call(), WEATHER)
            handler.on_tool_execution_completed(chain, call(), result)
            handler.on_tool_execution_failed(chain, call(), result)
            handler.on_tool_interrupted(chain, [result])
            handler.on_run_complete(chain, None)  # type: ignore[arg-type]
            handler.on_error(chain, error)
        handler.on_run_start(unknown)
        assert otel.spans() == []
        assert trace.get_current_span() is trace.INVALID_SPAN

    def test_delta_while_another_run_waits(self, otel: Telemetry) -> None:
        """A delta of another run, or of a chain outside any run, never takes a
        waiting run's first chunk."""
        handler = otel.handler()
        run = LLMChain(ScriptedChatModel([]), invocation=Invocation(name="run"))
        other = LLMChain(ScriptedChatModel([]), invocation=Invocation(name="run"))
        handler.on_run_start(run)
        # In a copy of the context, as the runtime calls it: the chat span it makes
        # current stays there.
        contextvars.copy_context().run(
            handler.on_llm_call_start, run, ScriptedChatModel([]), ChatRequest([])
        )
        handler.on_llm_new_delta(LLMChain(ScriptedChatModel([])), [])
        handler.on_llm_new_delta(other, [MessageDelta(text="x")])
        assert handler._awaiting_chunk
        handler.on_llm_new_delta(run, [MessageDelta(text="x")])
        assert not handler._awaiting_chunk
        handler.on_llm_call_complete(run, ChatResponse(message=Message.assistant("x")))
        handler.on_llm_call_complete(run, ChatResponse(message=Message.assistant("x")))
        handler.on_run_complete(run, None)  # type: ignore[arg-type]
        assert gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in attrs(otel.one("chat"))
        assert otel.all_ended()

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"tracer_provider": object()}, "tracer_provider must be"),
            ({"meter_provider": object()}, "meter_provider must be"),
            ({"agent_name": ""}, "agent_name must be a non-empty str"),
            ({"capture_content": "yes"}, "capture_content must be True, False or one"),
            ({"logger_provider": object()}, "logger_provider must be"),
        ],
    )
    def test_bad_options(self, options: dict[str, Any], message: str) -> None:
        """A wrong option is a TypeError naming it."""
        with pytest.raises(TypeError, match=message):
            OpenTelemetryHandler(**options)

    def test_global_providers(self) -> None:
        """Without providers the global ones are used (no-ops unless configured)."""
        handler = OpenTelemetryHandler()
        chain = LLMChain(ScriptedChatModel(turns()), callbacks=[handler])
        assert start(chain).run().status == "ok"

    def test_missing_opentelemetry(self) -> None:
        """Without OpenTelemetry installed the import error names the extra."""
        code = (
            "import sys; sys.modules['opentelemetry'] = None\n"
            "try:\n"
            "    import langhooks.integrations.opentelemetry\n"
            "except ImportError as e:\n"
            "    print(e)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        assert "pip install 'langhooks[opentelemetry]'" in out


class Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each protobuf export request."""

    requests: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:  # the http.server method name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).requests.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    @override
    def log_message(self, format: str, *args: Any) -> None:
        return None


class TestOTLP:
    """Spans leave the process over OTLP/HTTP."""

    def test_export(self, otel: Telemetry) -> None:
        """A run's spans arrive at a collector on 127.0.0.1, decoded from protobuf."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        Receiver.requests = []
        server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            provider = TracerProvider()
            endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
            provider.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
            )
            handler = OpenTelemetryHandler(tracer_provider=provider)
            chain = LLMChain(
                ScriptedChatModel(turns(call())), tools=[WEATHER], callbacks=[handler]
            )
            assert start(chain).run().status == "ok"
            assert provider.force_flush()
            provider.shutdown()
        finally:
            server.shutdown()
            server.server_close()
        spans = [
            span
            for request in Receiver.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        names = sorted(span.name for span in spans)
        assert names == [
            "chat",
            "chat",
            "execute_tool get_weather",
            "invoke_agent langhooks",
        ]
        tool = next(span for span in spans if span.name.startswith("execute_tool"))
        exported = {a.key: a.value.string_value for a in tool.attributes}
        assert exported[gen_ai.GEN_AI_TOOL_CALL_ID] == "call-1"
        scopes = {
            scope.scope.name
            for request in Receiver.requests
            for resource in request.resource_spans
            for scope in resource.scope_spans
        }
        assert scopes == {"langhooks"}


def test_context_is_clean() -> None:
    """Sanity: no test leaves an OpenTelemetry span current."""
    assert otel_context.get_current() is not None
    assert trace.get_current_span() is trace.INVALID_SPAN

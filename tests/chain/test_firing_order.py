"""The firing order of every documented scenario, event by event.

Each test runs one scenario from ``scenarios.py`` and asserts the exact sequence of
chain events (runs of repeated lines collapsed to ``"line xN"``, a tool call's
events followed by the tool's name). docs/guide/runtime.md shows the same lists;
``test_docs.py`` keeps them equal.
"""

from __future__ import annotations

from tests.chain.scenarios import SCENARIOS, collapse


def events(name: str) -> list[str]:
    """Run scenario ``name`` and return its collapsed event summary."""
    _, recorder = SCENARIOS[name]()
    return collapse(recorder.summary())


EXPECTED: dict[str, list[str]] = {
    "plain_reply": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x3",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "two_tools": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_tool_call_identified get_time",
        "on_llm_new_delta",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_call_review get_time",
        "on_tool_execution_started get_weather",
        "on_tool_execution_started get_time",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_completed get_weather",
        "on_tool_pre_execution get_time",
        "on_tool_execution_completed get_time",
        "on_tool_response_created",
        "on_message_processed",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "tool_raises": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_failed get_weather",
        "on_tool_execution_exception get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "unknown_tool": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_execution_failed get_moon",
        "on_tool_response_created",
        "on_message_processed",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "denied": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_execution_failed get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_llm_call_start",
        "on_llm_new_delta x4",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "interrupt_approve": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_interrupted",
        "on_tool_response_created",
        "on_message_processed",
        "on_run_complete",
        "on_run_start",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_completed get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_run_complete",
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "interrupt_edit": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_interrupted",
        "on_tool_response_created",
        "on_message_processed",
        "on_run_complete",
        "on_run_start",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_completed get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_run_complete",
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "interrupt_reject": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_interrupted",
        "on_tool_response_created",
        "on_message_processed",
        "on_run_complete",
        "on_run_start",
        "on_tool_execution_failed get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_run_complete",
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "retry_recovered": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_error",
        "on_llm_retry",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "stream_dies": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_llm_error",
        "on_llm_retry",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "fallback": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_error",
        "on_llm_retry",
        "on_llm_call_start",
        "on_llm_error",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "all_fallbacks_failed": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_error",
        "on_llm_call_start",
        "on_llm_error",
        "on_error",
    ],
    "retries_exceeded": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_failed get_weather",
        "on_tool_execution_exception get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_failed get_weather",
        "on_tool_execution_exception get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_retries_exceeded",
        "on_error",
    ],
    "non_retryable": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_error",
        "on_error",
    ],
    "headers_and_usage": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_llm_response_headers",
        "on_llm_ratelimit_info",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "until_success_exceeded": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_failed get_weather",
        "on_tool_execution_exception get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_llm_call_start",
        "on_llm_new_delta",
        "on_tool_call_identified get_weather",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_tool_call_review get_weather",
        "on_tool_execution_started get_weather",
        "on_tool_pre_execution get_weather",
        "on_tool_execution_failed get_weather",
        "on_tool_execution_exception get_weather",
        "on_tool_response_created",
        "on_message_processed",
        "on_retries_exceeded",
        "on_error",
    ],
    "processor_rejected": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processing_error",
        "on_error_message_created",
        "on_llm_token_usage",
        "on_llm_call_start",
        "on_llm_new_delta x3",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
    "processor_retries_exceeded": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processing_error",
        "on_error_message_created",
        "on_llm_token_usage",
        "on_llm_call_start",
        "on_llm_new_delta x3",
        "on_llm_call_complete",
        "on_message_processing_error",
        "on_error_message_created",
        "on_llm_token_usage",
        "on_retries_exceeded",
        "on_error",
    ],
    "retry_after_too_long": [
        "on_run_start",
        "on_llm_call_start",
        "on_llm_error",
        "on_llm_call_start",
        "on_llm_new_delta x2",
        "on_llm_call_complete",
        "on_message_processed",
        "on_llm_token_usage",
        "on_run_complete",
    ],
}


class TestFiringOrder:
    """Each scenario fires exactly the documented events, in order."""

    def test_plain_reply(self) -> None:
        """A plain reply streams deltas, then is processed, then usage is reported."""
        assert events("plain_reply") == EXPECTED["plain_reply"]

    def test_two_tools(self) -> None:
        """Two calls are identified live, reviewed, announced, then run in order."""
        assert events("two_tools") == EXPECTED["two_tools"]

    def test_tool_raises(self) -> None:
        """A raising tool fails with a ToolResult, then fires the exception event."""
        assert events("tool_raises") == EXPECTED["tool_raises"]

    def test_unknown_tool(self) -> None:
        """An unknown tool is never identified or reviewed; its call fails."""
        assert events("unknown_tool") == EXPECTED["unknown_tool"]

    def test_denied(self) -> None:
        """A denied call fails without running and the model gets the reason."""
        assert events("denied") == EXPECTED["denied"]

    def test_interrupt_approve(self) -> None:
        """An interrupt ends the run; approval re-reviews and runs the call."""
        assert events("interrupt_approve") == EXPECTED["interrupt_approve"]

    def test_interrupt_edit(self) -> None:
        """An edit re-reviews the call with the new arguments and runs it."""
        assert events("interrupt_edit") == EXPECTED["interrupt_edit"]

    def test_interrupt_reject(self) -> None:
        """A rejection fails the call without review or execution."""
        assert events("interrupt_reject") == EXPECTED["interrupt_reject"]

    def test_retry_recovered(self) -> None:
        """A transient model error fires on_llm_error and the retry succeeds."""
        assert events("retry_recovered") == EXPECTED["retry_recovered"]

    def test_stream_dies(self) -> None:
        """A stream that dies after a delta is an on_llm_error and is retried."""
        assert events("stream_dies") == EXPECTED["stream_dies"]

    def test_fallback(self) -> None:
        """When the model's attempts are spent, the fallback answers."""
        assert events("fallback") == EXPECTED["fallback"]

    def test_all_fallbacks_failed(self) -> None:
        """When every model fails, the run ends with one on_error."""
        assert events("all_fallbacks_failed") == EXPECTED["all_fallbacks_failed"]

    def test_retries_exceeded(self) -> None:
        """A tool failing round after round reaches max_retry_count:
        on_retries_exceeded, then on_error."""
        assert events("retries_exceeded") == EXPECTED["retries_exceeded"]

    def test_retry_after_too_long(self) -> None:
        """A wait longer than max_delay is not slept: the fallback is tried at once."""
        assert events("retry_after_too_long") == EXPECTED["retry_after_too_long"]

    def test_non_retryable(self) -> None:
        """A non-retryable error is neither retried nor failed over."""
        assert events("non_retryable") == EXPECTED["non_retryable"]

    def test_headers_and_usage(self) -> None:
        """Response headers and rate-limit info fire before the message is processed."""
        assert events("headers_and_usage") == EXPECTED["headers_and_usage"]

    def test_until_success_exceeded(self) -> None:
        """In until_success, each failed tool batch counts until the budget is spent."""
        assert events("until_success_exceeded") == EXPECTED["until_success_exceeded"]

    def test_processor_rejected(self) -> None:
        """The rejected answer and its automated reply are added; the model retries."""
        assert events("processor_rejected") == EXPECTED["processor_rejected"]

    def test_processor_retries_exceeded(self) -> None:
        """Each rejection counts as a failure until max_retry_count ends the run."""
        assert (
            events("processor_retries_exceeded")
            == EXPECTED["processor_retries_exceeded"]
        )

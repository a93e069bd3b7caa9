"""Provider errors and rate-limit headers, classified into ``LangHooksError``.

One place decides what an HTTP status or a provider error code means for the
runtime (retry, fail over, or give up), so every model and every stream adapter
agrees on it.
"""

from __future__ import annotations

import datetime
import email.utils
import functools
import importlib
import math
import re
import time
from collections.abc import Mapping
from typing import Final

from .._core._messages import ErrorType, LangHooksError

__all__ = [
    "classify_error",
    "describe_exception",
    "error_from_exception",
    "parse_ratelimit",
    "retry_after_seconds",
    "with_cause",
]

# Provider error codes / types (OpenAI ``code`` or ``type``, Anthropic
# ``error.type``, Responses ``error.code``) and what they mean.
_CODE_TYPES: Final[Mapping[str, ErrorType]] = {
    "rate_limit_error": "rate_limited",
    "rate_limit_exceeded": "rate_limited",
    "too_many_requests": "rate_limited",
    "requests": "rate_limited",
    "tokens": "rate_limited",
    "slow_down": "rate_limited",
    "insufficient_quota": "rate_limited",
    "credit_balance_exhausted": "rate_limited",
    "billing_error": "rate_limited",
    "overloaded_error": "overloaded",
    "overloaded": "overloaded",
    "server_is_overloaded": "overloaded",
    "service_unavailable": "overloaded",
    "service_unavailable_error": "overloaded",
    "timeout": "timeout",
    "timeout_error": "timeout",
    "request_timeout": "timeout",
    "authentication_error": "authentication",
    "permission_error": "authentication",
    "invalid_api_key": "authentication",
    "unauthorized": "authentication",
    "invalid_request_error": "invalid_request",
    "not_found_error": "invalid_request",
    "request_too_large": "invalid_request",
    "invalid_prompt": "invalid_request",
    "context_length_exceeded": "invalid_request",
    "model_not_found": "invalid_request",
    "server_error": "stream_error",
    "api_error": "stream_error",
    "internal_server_error": "stream_error",
    # Google's canonical codes (Gemini's error "status").
    "resource_exhausted": "rate_limited",
    "unavailable": "overloaded",
    "deadline_exceeded": "timeout",
    "unauthenticated": "authentication",
    "permission_denied": "authentication",
    "invalid_argument": "invalid_request",
    "failed_precondition": "invalid_request",
    "not_found": "invalid_request",
    "internal": "stream_error",
}
# Quota and billing failures arrive as 429s but waiting does not fix them.
_NOT_RETRYABLE_CODES: Final = frozenset(
    {"insufficient_quota", "credit_balance_exhausted", "billing_error"}
)
# Server faults: the same request may well succeed on a second try.
_RETRYABLE_CODES: Final = frozenset(
    {"server_error", "api_error", "internal_server_error", "internal"}
)

_STATUS_TYPES: Final[Mapping[int, ErrorType]] = {
    400: "invalid_request",
    401: "authentication",
    403: "authentication",
    404: "invalid_request",
    408: "timeout",
    413: "invalid_request",
    422: "invalid_request",
    429: "rate_limited",
    503: "overloaded",
    504: "timeout",
    529: "overloaded",
}

# Go-style durations as OpenAI sends them: "12ms", "1s", "6m0s", "50.529s", "1h2m".
_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION: Final = re.compile(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+")
_UNIT_SECONDS: Final[Mapping[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_KINDS: Final = frozenset({"limit", "remaining", "reset"})


def classify_error(
    *,
    status: int | None,
    code: str | None,
    message: str,
    headers: Mapping[str, str] | None = None,
    original: object = None,
    url: str | None = None,
    hint: str = "",
) -> LangHooksError:
    """Turn an HTTP status and/or a provider error code into a ``LangHooksError``.

    A recognised provider code decides the type; otherwise the HTTP status does;
    otherwise the error is a ``stream_error``. A server-sent ``x-should-retry``
    header overrides whether the error is retryable.

    Args:
        status: the HTTP status, or None for an error event inside a 200 stream.
        code: the provider's error code or type (``rate_limit_exceeded``,
            ``overloaded_error``, ...), if any.
        message: the provider's message.
        headers: the response headers, if any; they give ``retry_after`` and go
            into ``metadata`` as ``response_headers`` and parsed ``ratelimit``.
        original: the exception or error object behind it.
        url: the URL requested, if known: the message names it and
            ``metadata["url"]`` keeps it.
        hint: a sentence on what to try, added to the message in parentheses.

    Returns:
        The classified error (not raised).
    """
    error_type: ErrorType | None = _CODE_TYPES.get(code.lower()) if code else None
    if error_type is None and status is not None:
        error_type = _STATUS_TYPES.get(status)
        if error_type is None and status >= 500:
            error_type = "stream_error"
    if error_type is None:
        error_type = "stream_error"

    retryable: bool | None = None
    if code and code.lower() in _NOT_RETRYABLE_CODES:
        retryable = False
    elif (code and code.lower() in _RETRYABLE_CODES) or (
        error_type == "stream_error"
        and status is not None
        and (status >= 500 or status == 409)
    ):
        retryable = True

    metadata: dict[str, object] = {}
    if status is not None:
        metadata["status_code"] = status
    if code:
        metadata["error_code"] = code
    retry_after: float | None = None
    if headers is not None:
        metadata["response_headers"] = dict(headers)
        ratelimit = parse_ratelimit(headers)
        if ratelimit:
            metadata["ratelimit"] = ratelimit
        retry_after = retry_after_seconds(headers)
        should_retry = _lower_keys(headers).get("x-should-retry", "").strip().lower()
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"

    if not message:
        message = code or (f"HTTP {status}" if status is not None else "unknown error")
    if status is not None and f"{status}" not in message:
        message = f"{message} (HTTP {status})"
    if url:
        metadata["url"] = url
        message = f"{message} from {url}"
    if hint:
        message = f"{message} ({hint})"
    return LangHooksError(
        error_type,
        message,
        original=original,
        retryable=retryable,
        retry_after=retry_after,
        metadata=metadata,
    )


def parse_ratelimit(headers: Mapping[str, str]) -> dict[str, object]:
    """Parse OpenAI and Anthropic rate-limit headers.

    ``x-ratelimit-limit-requests`` becomes ``requests_limit`` (an int),
    ``x-ratelimit-reset-tokens: 6m0s`` becomes ``tokens_reset: 360.0`` (seconds),
    ``anthropic-ratelimit-input-tokens-remaining`` becomes
    ``input_tokens_remaining``, and Anthropic's RFC 3339 ``*-reset`` timestamps
    are kept as given. Priority-tier headers keep a ``priority_`` prefix. A value
    that does not parse is kept as the string: a malformed header is never fatal.
    ``retry_after`` (seconds) is added when ``retry-after`` or ``retry-after-ms``
    is present.

    Args:
        headers: response headers (any case).

    Returns:
        The parsed values; empty when there are none.
    """
    parsed: dict[str, object] = {}
    for raw_name, value in headers.items():
        name = raw_name.lower()
        if name.startswith("x-ratelimit-"):
            # x-ratelimit-<kind>-<resource>
            kind, _, resource = name[len("x-ratelimit-") :].partition("-")
            prefix = ""
        elif name.startswith(("anthropic-ratelimit-", "anthropic-priority-")):
            # anthropic-ratelimit-<resource>-<kind>
            family, _, rest = name[len("anthropic-") :].partition("-")
            resource, _, kind = rest.rpartition("-")
            prefix = "priority_" if family == "priority" else ""
        else:
            continue
        if kind not in _KINDS or not resource:
            continue
        key = f"{prefix}{resource.replace('-', '_')}_{kind}"
        text = value.strip()
        if kind != "reset":
            parsed[key] = _count(text)
        elif name.startswith("x-ratelimit-"):
            seconds = _duration_seconds(text)
            parsed[key] = text if seconds is None else seconds
        else:
            parsed[key] = text
    retry_after = retry_after_seconds(headers)
    if retry_after is not None:
        parsed["retry_after"] = retry_after
    return parsed


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """How long the provider asked to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be seconds or an HTTP date (a date in the past gives 0).

    Args:
        headers: response headers (any case).

    Returns:
        Seconds to wait, or None when no header says (or none parses).
    """
    lowered = _lower_keys(headers)
    millis = _non_negative_float(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = lowered.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative_float(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
        if when.tzinfo is None:  # "-0000": a UTC time with no zone information
            when = when.replace(tzinfo=datetime.UTC)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None


def _count(text: str) -> int | str:
    """A header's count as an int; kept as the string when it is not one.

    ``str.isdigit`` accepts digits ``int`` refuses (``"²"``), and ``int`` refuses
    more than 4,300 digits: a header a server got wrong is kept, never fatal.
    """
    if text.isascii() and text.isdigit():
        try:
            return int(text)
        except ValueError:
            return text
    return text


def _lower_keys(headers: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


def _non_negative_float(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _duration_seconds(text: str) -> float | None:
    if not _DURATION.fullmatch(text):
        return None
    total = 0.0
    for amount, unit in _DURATION_PART.findall(text):
        total += float(amount) * _UNIT_SECONDS[unit]
    return round(total, 9)


@functools.cache
def _http_library_errors() -> tuple[
    tuple[type[BaseException], ...], tuple[type[BaseException], ...]
]:
    timeouts: list[type[BaseException]] = [TimeoutError]
    transport: list[type[BaseException]] = [OSError]
    # The SDKs read through httpx (older releases) or httpx2 (newer ones); a
    # failure mid-stream surfaces as that library's own exception.
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # pragma: no cover - both are installed where tests run
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def _is_a(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is an instance of a class called ``name`` (an SDK class)."""
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def describe_exception(exc: BaseException) -> str:
    """``"ClassName: message"`` for ``exc``, even when its ``__str__`` raises.

    An exception class from code nobody here wrote may break its own ``str()``;
    the error that reports it must not break too.
    """
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception as broken:
        text = f"<str() of the exception failed: {type(broken).__name__}>"
    return f"{name}: {text}" if text else name


def request_url(exc: BaseException) -> str | None:
    """The URL of the request ``exc`` (or an exception it was raised from) failed
    on, as an httpx ``RequestError`` or an SDK's ``APIError`` keeps it; None when
    none says."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            break
        try:
            request = getattr(seen, "request", None)
            url = getattr(request, "url", None)
        except Exception:  # httpx raises RuntimeError when no request is set
            url = None
        if url is not None:
            return str(url)
        seen = seen.__cause__ or seen.__context__
    return None


def error_from_exception(exc: BaseException) -> LangHooksError:
    """The ``LangHooksError`` for a failure raised under a model's stream.

    Whatever raised it (an SDK, an HTTP client, code wrapping them such as an
    instrumentation, or an adapter bug), the result is classified and keeps
    ``exc`` as ``original`` (and so as ``__cause__`` when raised ``from`` it).

    An HTTP error status never gets here as an SDK ``APIStatusError``: the
    clients' ``error_body_hook`` classified it first (``http_error``), and an SDK
    that wrapped that error is unwrapped. A timeout is "timeout"; a transport
    failure (refused, reset, dropped mid-stream) is "connection"; anything else
    (a request the SDK refused to build, a bug in wrapping code) is a
    non-retryable "stream_error".
    """
    if isinstance(exc, LangHooksError):
        return exc
    if isinstance(exc.__cause__, LangHooksError):
        # Raised by error_body_hook inside the SDK, which wrapped it.
        return exc.__cause__
    timeouts, transport = _http_library_errors()
    url = request_url(exc)
    to = f" to {url}" if url else ""
    metadata: dict[str, object] = {"url": url} if url else {}
    if isinstance(exc, timeouts) or _is_a(exc, "APITimeoutError"):
        return LangHooksError(
            "timeout",
            f"the request{to} timed out ({describe_exception(exc)})",
            original=exc,
            metadata=metadata,
        )
    if isinstance(exc, transport) or _is_a(exc, "APIConnectionError"):
        return LangHooksError(
            "connection",
            f"the connection{to} failed ({describe_exception(exc)}): is the server "
            "running there?"
            if url
            else f"the connection failed: {describe_exception(exc)}",
            original=exc,
            metadata=metadata,
        )
    return LangHooksError(
        "stream_error",
        f"the request failed: {describe_exception(exc)}",
        original=exc,
        retryable=False,
    )


def with_cause(error: LangHooksError) -> LangHooksError:
    """``error`` with the exception it stands for as its ``__cause__``."""
    original = error.original
    if (
        error.__cause__ is None
        and isinstance(original, BaseException)
        and original is not error
    ):
        error.__cause__ = original
    return error

"""The error catalogue (docs/protocol.md: Failures and retries): failure codes, HTTP statuses, retry delays, error
shapes."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple


class ErrorKind(StrEnum):
    CONTEXT_WINDOW = "context_window_exceeded"
    QUOTA = "quota_exceeded"
    USAGE_NOT_INCLUDED = "usage_not_included"
    INVALID_REQUEST = "invalid_request"
    POLICY = "policy"
    OVERLOADED = "server_overloaded"
    RATE_LIMITED = "rate_limited"
    RETRY_LIMIT = "retry_limit"
    AUTH = "unauthorized"
    USAGE_LIMIT = "usage_limit_reached"
    PREVIOUS_RESPONSE = "previous_response_not_found"
    INCOMPLETE = "incomplete"
    RETRYABLE = "retryable"


@dataclass(frozen=True, slots=True)
class FailureCode:
    """One `response.failed` code: what it means, whether a client retries it and why (`basis`: what Codex
    0.169.0 was seen to do with it, which the reference client does), a realistic message. The error object
    carries `code` and `message`, and may carry `param`, `type` and (a policy block) `misalignment`
    (`RESPONSE_ERROR_FIELDS`); a script's `fail:` sets them."""

    code: str
    kind: ErrorKind
    retryable: bool
    message: str
    basis: str


RESPONSE_ERROR_FIELDS = ("code", "message", "param", "type", "misalignment")
"""The fields of `response.error` (the SDK's `ResponseError`, openai 3.63)."""

_FAILS = "observed: Codex 0.169.0 fails the turn at once, no retry"
_RETRIES = "observed: Codex 0.169.0 retries it with backoff"
_UNRULED = (
    f"{_RETRIES}, as any code it has no rule for (the SDK documents it as a fault of the request's input, which a "
    "retry sends again)"
)
_IMAGE_CODES = {
    "invalid_image": "The image is not valid.",
    "invalid_image_format": "The image's format is not supported.",
    "invalid_base64_image": "The image's base64 data could not be decoded.",
    "invalid_image_url": "The image URL is not valid.",
    "image_too_large": "The image is larger than the model accepts.",
    "image_too_small": "The image is smaller than the model accepts.",
    "image_parse_error": "The image could not be parsed.",
    "image_content_policy_violation": "The image was flagged by a content policy.",
    "invalid_image_mode": "The image's color mode is not supported.",
    "image_file_too_large": "The image file is too large.",
    "unsupported_image_media_type": "The image's media type is not supported.",
    "empty_image_file": "The image file is empty.",
    "failed_to_download_image": "The image could not be downloaded from its URL.",
    "image_file_not_found": "The image file was not found.",
}

RATE_LIMIT_EXCEEDED = "rate_limit_exceeded"
FAILURE_CODES: dict[str, FailureCode] = {
    entry.code: entry
    for entry in (
        FailureCode(
            "context_length_exceeded",
            ErrorKind.CONTEXT_WINDOW,
            False,
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            _FAILS,
        ),
        FailureCode(
            "insufficient_quota",
            ErrorKind.QUOTA,
            False,
            "You exceeded your current quota, please check your plan and billing details.",
            _FAILS,
        ),
        FailureCode(
            "usage_not_included", ErrorKind.USAGE_NOT_INCLUDED, False, "Your plan does not include this usage.", _FAILS
        ),
        FailureCode("invalid_prompt", ErrorKind.INVALID_REQUEST, False, "Invalid prompt.", _FAILS),
        FailureCode("cyber_policy", ErrorKind.POLICY, False, "This request was flagged by a usage policy.", _FAILS),
        FailureCode(
            "bio_policy", ErrorKind.POLICY, False, "This request was flagged for possible biological risk.", _FAILS
        ),
        FailureCode(
            "misalignment_policy_violation",
            ErrorKind.POLICY,
            False,
            "This request was blocked by a misalignment policy.",
            _FAILS,
        ),
        FailureCode(
            "server_is_overloaded",
            ErrorKind.OVERLOADED,
            False,
            "The server is overloaded. Please try again later.",
            f'{_FAILS} ("Selected model is at capacity")',
        ),
        FailureCode("slow_down", ErrorKind.RETRYABLE, True, "Please slow down.", _RETRIES),
        FailureCode(
            RATE_LIMIT_EXCEEDED,
            ErrorKind.RATE_LIMITED,
            True,
            "Rate limit reached for requests. Please try again in 1.5s.",
            f"{_RETRIES}, after the delay its message names (s, ms or seconds)",
        ),
        FailureCode(
            "server_error",
            ErrorKind.RETRYABLE,
            True,
            "The server had an error while processing your request. Sorry about that!",
            f"{_RETRIES} (the SDK documents it as the service's own fault)",
        ),
        FailureCode(
            "vector_store_timeout",
            ErrorKind.RETRYABLE,
            True,
            "A file search on a vector store timed out. Please try again.",
            f"{_RETRIES} (the SDK documents it as a timeout of a file search)",
        ),
        FailureCode(
            "data_residency_mismatch",
            ErrorKind.RETRYABLE,
            True,
            "This request cannot be served where the project's data residency requires.",
            _UNRULED,
        ),
        *(FailureCode(code, ErrorKind.RETRYABLE, True, message, _UNRULED) for code, message in _IMAGE_CODES.items()),
    )
}
"""Every code the SDK's `ResponseError.code` names (openai 3.63), and those the service and Codex use beyond it
(`BEYOND_SDK_CODES`: a strict SDK parse refuses a `response.failed` with one of them). Any other code is retried
with backoff, as Codex 0.169.0 does (observed with a made-up `*_policy` code)."""
BEYOND_SDK_CODES = frozenset(
    {
        "context_length_exceeded",
        "insufficient_quota",
        "usage_not_included",
        "cyber_policy",
        "server_is_overloaded",
        "slow_down",
    }
)
"""The catalogue's codes the service sends and Codex reacts to, outside the SDK's `ResponseError.code` literal."""
SDK_FAILURE_CODES = frozenset(FAILURE_CODES) - BEYOND_SDK_CODES
"""The catalogue's codes inside the SDK's literal: a test of a strict client scripts one of these."""
OVERLOADED_CODES = frozenset(code for code, entry in FAILURE_CODES.items() if entry.kind is ErrorKind.OVERLOADED)
"""`server_is_overloaded`: not retried, as `response.failed`, as an HTTP status or as a WebSocket error frame
(Codex 0.169: "Selected model is at capacity"). `slow_down` is retried with ordinary backoff."""
GENERIC_FAILURE_MESSAGE = "An error occurred while processing your request."

PREVIOUS_RESPONSE_NOT_FOUND = "previous_response_not_found"
WEBSOCKET_CONNECTION_LIMIT = "websocket_connection_limit_reached"
RECONNECT_CODES = frozenset({WEBSOCKET_CONNECTION_LIMIT, PREVIOUS_RESPONSE_NOT_FOUND})
"""The codes that make a client open a new socket and resend in full, even on an `error` frame without status."""
UPGRADE_REQUIRED = 426
REQUEST_TOO_LARGE = "request_too_large"
"""The code of a 413: a request body over the server's limit."""
FATAL_STATUS = 400
"""The one status Codex 0.169.0 and 0.171.0 never retry, even with a `Retry-After` (observed); every other 4xx
but 429 is retried with backoff (401, 403, 404, 405, 408, 409, 410, 413, 422, 499 observed), after its
`Retry-After` when it has one, as every 5xx."""


def failure_message(code: str | None) -> str:
    """The catalogue's message for a failure code (the generic one for an unknown or missing code)."""
    entry = FAILURE_CODES.get(code or "")
    return entry.message if entry is not None else GENERIC_FAILURE_MESSAGE


@dataclass(frozen=True, slots=True)
class Classification:
    """What a client should do with an error: its kind, whether to retry, and after how long."""

    kind: ErrorKind
    retryable: bool
    delay: float | None = None


def classify_failure(code: str | None, message: str | None = None) -> Classification:
    """Classify `response.failed` by `response.error.code`; only `rate_limit_exceeded` reads a delay from
    its message (any other code gets backoff, whatever its message names)."""
    entry = FAILURE_CODES.get(code or "")
    if entry is not None:
        delay = parse_retry_delay(message) if entry.code == RATE_LIMIT_EXCEEDED else None
        return Classification(entry.kind, entry.retryable, delay)
    return Classification(ErrorKind.RETRYABLE, True)


INCOMPLETE = Classification(ErrorKind.INCOMPLETE, False)
"""`response.incomplete`: never retried; the turn fails ("Incomplete response returned, reason: ...")."""


def ending_error(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The error object an ending event carries: an `error` frame's own, or a `response.failed`'s
    `response.error` ({} when it has none)."""
    response = event.get("response")
    error = event.get("error") or (response.get("error") if isinstance(response, Mapping) else None)
    return error if isinstance(error, Mapping) else {}


def error_event_code(event: Mapping[str, Any]) -> str | None:
    """The code of an `error` event: `error.code` of a WebSocket frame, or the flat SSE event's `code`."""
    error = event.get("error")
    code = error.get("code") if isinstance(error, Mapping) else event.get("code")
    return code if isinstance(code, str) else None


def classify_statusless_error(event: Mapping[str, Any]) -> Classification | None:
    """A flat SSE `error` event or a WebSocket `error` frame without `status`: ignored (None), whatever its
    code, except the two codes that mean "new socket, full request" (retried with backoff)."""
    code = error_event_code(event)
    if code == PREVIOUS_RESPONSE_NOT_FOUND:
        return Classification(ErrorKind.PREVIOUS_RESPONSE, True)
    if code == WEBSOCKET_CONNECTION_LIMIT:
        return Classification(ErrorKind.RETRYABLE, True)
    return None


def classify_http_error(status: int, body: Mapping[str, Any] | None, headers: Mapping[str, str]) -> Classification:
    """Classify an HTTP error status received before the stream (or a WebSocket `error` frame's status).

    Only a `Retry-After` header (seconds) names a delay; `retry-after-ms` and the message are not read.
    """
    error = (body or {}).get("error") or {}
    fields: Mapping[str, Any] = error if isinstance(error, Mapping) else {}
    code = fields.get("code")
    delay = retry_after(headers)
    by_code = _classify_code(code, status, delay)
    if by_code is not None:
        return by_code
    if status == 429:
        return _classify_too_many(fields.get("type"), code, delay)
    return _classify_status(status, code, delay)


def _classify_code(code: object, status: int, delay: float | None) -> Classification | None:
    """The codes that decide, whatever the status."""
    if code == WEBSOCKET_CONNECTION_LIMIT:
        return Classification(ErrorKind.RETRYABLE, True, delay)
    if code == PREVIOUS_RESPONSE_NOT_FOUND:
        return Classification(ErrorKind.PREVIOUS_RESPONSE, True)
    if code in OVERLOADED_CODES:  # a 503's Retry-After still paces the request-level retries of any 5xx
        return Classification(ErrorKind.OVERLOADED, False, delay if status == 503 else None)
    return None


_USAGE_LIMITS = {"usage_limit_reached": ErrorKind.USAGE_LIMIT, "usage_not_included": ErrorKind.USAGE_NOT_INCLUDED}
"""429s of the plan's limits, named by the error's type or its code (in this order): never retried."""


def _classify_too_many(error_type: object, code: object, delay: float | None) -> Classification:
    """A 429: a usage limit or the quota (not retried), else a rate limit retried after its `Retry-After`."""
    for name, kind in _USAGE_LIMITS.items():
        if name in (error_type, code):
            return Classification(kind, False)
    if code == "insufficient_quota":
        return Classification(ErrorKind.QUOTA, False)
    if delay is None:  # Codex 0.169: "exceeded retry limit, last status: 429", at once
        return Classification(ErrorKind.RETRY_LIMIT, False)
    return Classification(ErrorKind.RATE_LIMITED, True, delay)


def _classify_status(status: int, code: object, delay: float | None) -> Classification:
    """Any other error, by its status: a 400 fails the turn; any other is retried, after its `Retry-After` when
    it names one (Codex 0.169.0 and 0.171.0, observed on 401-422, 499 and 500-504)."""
    if status == FATAL_STATUS:
        kind = ErrorKind.CONTEXT_WINDOW if code == "context_length_exceeded" else ErrorKind.INVALID_REQUEST
        return Classification(kind, False)
    return Classification(ErrorKind.AUTH if status == 401 else ErrorKind.RETRYABLE, True, delay)


_DELAY_RE = re.compile(r"try again in\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>s|ms|seconds?)", re.IGNORECASE)
"""Codex's own pattern: seconds, `ms` or `seconds` only ("2 minutes" names no delay)."""


def parse_retry_delay(message: str | None) -> float | None:
    """Seconds named by a message like "try again in 1.5s", "28ms" or "35 seconds"."""
    if not message:
        return None
    match = _DELAY_RE.search(message)
    if match is None:
        return None
    value = float(match["value"])
    return value / 1000 if match["unit"].lower() == "ms" else value


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The delay in a `Retry-After` header (seconds), if present, numeric and finite; `retry-after-ms` is
    ignored, as Codex 0.169 ignores it."""
    lowered = {key.lower(): value for key, value in headers.items()}
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds):  # "inf" or "nan" would make a client wait forever or not at all
        return None
    return max(0.0, seconds)


def named_delays(headers: Mapping[str, str], message: str | None) -> tuple[float, ...]:
    """Every delay an answer names, whichever a client reads: `Retry-After` (seconds), `retry-after-ms`, and
    "try again in N s" in its error message; sorted, each once."""
    lowered = {key.lower(): value for key, value in headers.items()}
    found = {delay for delay in (retry_after(lowered), parse_retry_delay(message)) if delay is not None}
    with contextlib.suppress(KeyError, ValueError):
        milliseconds = float(lowered["retry-after-ms"])
        if math.isfinite(milliseconds):
            found.add(max(0.0, milliseconds / 1000))
    return tuple(sorted(found))


_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    426: "invalid_request_error",
    429: "rate_limit_error",
}


def default_error_type(status: int) -> str:
    return _DEFAULT_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def error_object(
    message: str, *, type: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"type": type, "code": code, "message": message, "param": param}


def error_body(
    message: str, *, type: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The OpenAI-shaped JSON body of an HTTP error: `{"error": {type, code, message, param}}`."""
    return {"error": error_object(message, type=type, code=code, param=param)}


def unexpected_error_body(method: str, path: str, error: BaseException) -> dict[str, Any]:
    """The 500 of an error rrkit did not catch answering `method path`: named, as a bug in rrkit (the traceback is
    in the server's log)."""
    message = (
        f"rrkit failed answering {method} {path}: {type(error).__name__}: {error}. "
        "This is a bug in rrkit: please report it with the server's log."
    )
    return error_body(message, type="server_error")


def ws_error_frame(
    status: int,
    message: str,
    *,
    type: str | None = None,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A WebSocket `error` frame; Codex ignores one without `status`, so it always has one."""
    frame: dict[str, Any] = {
        "type": "error",
        "status": status,
        "error": error_object(message, type=type or default_error_type(status), code=code, param=param),
    }
    if headers:
        frame["headers"] = dict(headers)
    return frame


class ErrorAnswer(NamedTuple):
    """An HTTP error answer before any stream: its status, JSON body and headers (a plan's `Rejection`)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def seconds_text(seconds: float) -> str:
    """Seconds to the millisecond, as few digits as it takes: `0.5`, `1.5`, `2`."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def rate_limit_answer(retry_after: float) -> ErrorAnswer:
    """The service's refusal of a request over its rate limit: 429, `{type: requests, code: rate_limit_exceeded}`
    with "Please try again in 1.5s." in its message, and the delay in both headers clients read: `retry-after`
    (seconds; what Codex reads) and `retry-after-ms` (what the SDKs read first). Over WebSocket the same goes out
    as an `error` frame with status 429 and these headers in its `headers`."""
    seconds = seconds_text(retry_after)
    message = f"Rate limit reached for requests. Please try again in {seconds}s."
    headers = {"retry-after": seconds, "retry-after-ms": str(round(retry_after * 1000))}
    return ErrorAnswer(429, error_body(message, type="requests", code=RATE_LIMIT_EXCEEDED), headers)

"""The error catalogue (PROTOCOL.md section 7): failure codes, HTTP statuses, retry delays, error shapes."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    CONTEXT_WINDOW = "context_window_exceeded"
    QUOTA = "quota_exceeded"
    USAGE_NOT_INCLUDED = "usage_not_included"
    INVALID_REQUEST = "invalid_request"
    POLICY = "policy"
    OVERLOADED = "server_overloaded"
    RATE_LIMITED = "rate_limited"
    AUTH = "unauthorized"
    USAGE_LIMIT = "usage_limit_reached"
    RETRYABLE = "retryable"


@dataclass(frozen=True, slots=True)
class FailureCode:
    """One `response.failed` code: what it means, whether a client retries, a realistic message."""

    code: str
    kind: ErrorKind
    retryable: bool
    message: str


FAILURE_CODES: dict[str, FailureCode] = {
    entry.code: entry
    for entry in (
        FailureCode(
            "context_length_exceeded",
            ErrorKind.CONTEXT_WINDOW,
            False,
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
        ),
        FailureCode(
            "insufficient_quota",
            ErrorKind.QUOTA,
            False,
            "You exceeded your current quota, please check your plan and billing details.",
        ),
        FailureCode(
            "usage_not_included", ErrorKind.USAGE_NOT_INCLUDED, False, "Your plan does not include this usage."
        ),
        FailureCode("invalid_prompt", ErrorKind.INVALID_REQUEST, False, "Invalid prompt."),
        FailureCode("cyber_policy", ErrorKind.POLICY, False, "This request was flagged by a usage policy."),
        FailureCode(
            "server_is_overloaded", ErrorKind.OVERLOADED, False, "The server is overloaded. Please try again later."
        ),
        FailureCode("slow_down", ErrorKind.OVERLOADED, False, "Please slow down."),
        FailureCode(
            "rate_limit_exceeded",
            ErrorKind.RATE_LIMITED,
            True,
            "Rate limit reached for requests. Please try again in 1.5s.",
        ),
    )
}
POLICY_CODE_SUFFIX = "_policy"
OVERLOADED_CODES = frozenset(code for code, entry in FAILURE_CODES.items() if entry.kind is ErrorKind.OVERLOADED)
"""`server_is_overloaded` and `slow_down`: Codex treats a 503 with either code as overloaded (no retry)."""
GENERIC_FAILURE_MESSAGE = "An error occurred while processing your request."

PREVIOUS_RESPONSE_NOT_FOUND = "previous_response_not_found"
WEBSOCKET_CONNECTION_LIMIT = "websocket_connection_limit_reached"
UPGRADE_REQUIRED = 426


@dataclass(frozen=True, slots=True)
class Classification:
    """What a client should do with an error: its kind, whether to retry, and after how long."""

    kind: ErrorKind
    retryable: bool
    delay: float | None = None


def classify_failure(code: str | None, message: str | None = None) -> Classification:
    """Classify `response.failed` by `response.error.code`."""
    entry = FAILURE_CODES.get(code or "")
    if entry is not None:
        delay = parse_retry_delay(message) if entry.retryable else None
        return Classification(entry.kind, entry.retryable, delay)
    if code and code.endswith(POLICY_CODE_SUFFIX):
        return Classification(ErrorKind.POLICY, False)
    return Classification(ErrorKind.RETRYABLE, True, parse_retry_delay(message))


def classify_http_error(status: int, body: Mapping[str, Any] | None, headers: Mapping[str, str]) -> Classification:
    """Classify an HTTP error status received before the stream (or a WebSocket `error` frame's status)."""
    error = (body or {}).get("error") or {}
    error_type = error.get("type") if isinstance(error, Mapping) else None
    code = error.get("code") if isinstance(error, Mapping) else None
    delay = retry_after(headers)
    if delay is None and isinstance(error, Mapping):
        delay = parse_retry_delay(error.get("message"))
    if code == WEBSOCKET_CONNECTION_LIMIT:
        return Classification(ErrorKind.RETRYABLE, True, delay)
    if status == 401:
        return Classification(ErrorKind.AUTH, False)
    if status == 429:
        if error_type == "usage_limit_reached" or code == "usage_limit_reached":
            return Classification(ErrorKind.USAGE_LIMIT, False)
        if error_type == "usage_not_included" or code == "usage_not_included":
            return Classification(ErrorKind.USAGE_NOT_INCLUDED, False)
        if code == "insufficient_quota":
            return Classification(ErrorKind.QUOTA, False)
        return Classification(ErrorKind.RATE_LIMITED, True, delay)
    if status == 503 and code in OVERLOADED_CODES:
        return Classification(ErrorKind.OVERLOADED, False)
    if status >= 500:
        return Classification(ErrorKind.RETRYABLE, True, delay)
    if code == "context_length_exceeded":
        return Classification(ErrorKind.CONTEXT_WINDOW, False)
    return Classification(ErrorKind.INVALID_REQUEST, False)


_DELAY_RE = re.compile(
    r"try again in\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b",
    re.IGNORECASE,
)


def parse_retry_delay(message: str | None) -> float | None:
    """Seconds named by a message like "try again in 1.5s", "28ms" or "35 seconds"."""
    if not message:
        return None
    match = _DELAY_RE.search(message)
    if match is None:
        return None
    value = float(match["value"])
    unit = match["unit"].lower()
    if unit.startswith("ms") or unit.startswith("milli"):
        return value / 1000
    if unit.startswith("m"):
        return value * 60
    return value


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The delay in `retry-after-ms` or `retry-after` (seconds), if present, numeric and finite."""
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds):  # "inf" or "nan" would make a client wait forever or not at all
            return max(0.0, seconds)
    return None


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
    message: str, *, type_: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"type": type_, "code": code, "message": message, "param": param}


def error_body(
    message: str, *, type_: str = "invalid_request_error", code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """The OpenAI-shaped JSON body of an HTTP error: `{"error": {type, code, message, param}}`."""
    return {"error": error_object(message, type_=type_, code=code, param=param)}


def error_frame(
    status: int,
    message: str,
    *,
    type_: str | None = None,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A WebSocket `error` frame; Codex ignores one without `status`, so it always has one."""
    frame: dict[str, Any] = {
        "type": "error",
        "status": status,
        "error": error_object(message, type_=type_ or default_error_type(status), code=code, param=param),
    }
    if headers:
        frame["headers"] = dict(headers)
    return frame

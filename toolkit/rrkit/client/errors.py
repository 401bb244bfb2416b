"""The client's typed errors (PROTOCOL.md section 7), built on the protocol's error classification."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ..protocol.errors import (
    UPGRADE_REQUIRED,
    WEBSOCKET_CONNECTION_LIMIT,
    Classification,
    ErrorKind,
    classify_failure,
    classify_http_error,
    retry_after,
)
from ..protocol.outcome import Outcome, OutcomeKind


class ModelClientError(Exception):
    """A stream attempt that did not end in `response.completed`: what happened, and how it ended."""

    retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        outcome: OutcomeKind,
        code: str | None = None,
        status: int | None = None,
        reason: str | None = None,
        delay: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.outcome_kind = outcome
        self.code = code
        self.status = status
        self.reason = reason
        self.delay = delay
        """Seconds the server asked the client to wait before retrying (None: use backoff)."""

    def outcome(self, events_seen: int = 0) -> Outcome:
        return Outcome(
            self.outcome_kind, events_seen, code=self.code, message=self.message, reason=self.reason, status=self.status
        )

    def __str__(self) -> str:
        details = [f"{name}={value!r}" for name in ("status", "code", "reason") if (value := getattr(self, name))]
        return f"{self.message} ({', '.join(details)})" if details else self.message


# -- not retried: the turn fails ---------------------------------------------------------------
class NonRetryableError(ModelClientError):
    """Retrying the same request cannot help: the user, the account or the input must change."""


class ContextWindowExceeded(NonRetryableError):
    """The input does not fit the model's context window: compact or shrink it."""


class QuotaExceeded(NonRetryableError):
    """The account's quota is exhausted."""


class UsageNotIncluded(NonRetryableError):
    """The plan does not include this usage."""


class UsageLimitReached(NonRetryableError):
    """The plan's usage limit is reached (429 `usage_limit_reached`)."""


class InvalidRequest(NonRetryableError):
    """The request was rejected as invalid (400, `invalid_prompt`, an unknown previous response, ...)."""


class Unauthorized(NonRetryableError):
    """The credentials were refused (401)."""


class PolicyRefusal(NonRetryableError):
    """A usage policy refused the request (`cyber_policy` and other `*_policy` codes)."""


class ServerOverloaded(NonRetryableError):
    """The server is overloaded (`server_is_overloaded`, `slow_down`): surfaced to the user, not retried."""


class UpgradeRequired(ModelClientError):
    """The WebSocket upgrade was answered 426: fall back to HTTP at once, for the whole session."""


# -- retried -----------------------------------------------------------------------------------
class RetryableError(ModelClientError):
    """Worth another attempt, after `delay` if the server named one, else after backoff."""

    retryable = True


class RateLimited(RetryableError):
    """Rate limited (`rate_limit_exceeded`, or a plain 429); `delay` is the server's wait, if it named one."""


class RetryableStreamError(RetryableError):
    """A generic stream failure (unknown or missing failure code, a 5xx, the flat `error` event)."""


class StreamDropped(RetryableStreamError):
    """The connection ended (EOF, close frame, reset) before `response.completed`."""


class IdleTimeout(RetryableStreamError):
    """No event arrived within the idle timeout."""


class ResponseIncomplete(RetryableStreamError):
    """`response.incomplete`: the response stopped early (`incomplete_details.reason`)."""


class ConnectionLimitReached(RetryableStreamError):
    """`websocket_connection_limit_reached`: reconnect and retry."""


class HandshakeRefused(RetryableStreamError):
    """The WebSocket upgrade was refused with a status other than 426."""


class ConnectFailed(RetryableStreamError):
    """The connection could not be opened at all."""


ERROR_CLASSES: dict[ErrorKind, type[ModelClientError]] = {
    ErrorKind.CONTEXT_WINDOW: ContextWindowExceeded,
    ErrorKind.QUOTA: QuotaExceeded,
    ErrorKind.USAGE_NOT_INCLUDED: UsageNotIncluded,
    ErrorKind.INVALID_REQUEST: InvalidRequest,
    ErrorKind.POLICY: PolicyRefusal,
    ErrorKind.OVERLOADED: ServerOverloaded,
    ErrorKind.RATE_LIMITED: RateLimited,
    ErrorKind.AUTH: Unauthorized,
    ErrorKind.USAGE_LIMIT: UsageLimitReached,
    ErrorKind.RETRYABLE: RetryableStreamError,
}
"""One class per kind of the protocol's classification; the class's `retryable` agrees with it."""


def _typed(classification: Classification, message: str, outcome: OutcomeKind, **fields: Any) -> ModelClientError:
    cls = ERROR_CLASSES[classification.kind]
    if fields.get("code") == WEBSOCKET_CONNECTION_LIMIT:
        cls = ConnectionLimitReached
    return cls(message, outcome=outcome, delay=classification.delay, **fields)


def failed_error(code: str | None, message: str | None) -> ModelClientError:
    """`response.failed` with `response.error = {code, message}`."""
    text = message or "response.failed"
    return _typed(classify_failure(code, message), text, OutcomeKind.FAILED, code=code)


def error_event_error(code: str | None, message: str | None) -> ModelClientError:
    """The flat SSE `error` event, classified by its code like a failure."""
    text = message or "error event"
    return _typed(classify_failure(code, message), text, OutcomeKind.ERRORED, code=code)


def incomplete_error(reason: str | None) -> ResponseIncomplete:
    return ResponseIncomplete(
        f"response.incomplete ({reason or 'no reason given'})", outcome=OutcomeKind.INCOMPLETE, reason=reason
    )


def _json(content: bytes) -> Any:
    try:
        return json.loads(content) if content else None
    except ValueError:
        return None


def _code_and_message(body: Any) -> tuple[str | None, str]:
    """`error.code` and `error.message` of an OpenAI-shaped error body (None and "" when absent)."""
    error = body.get("error") if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return None, ""
    code = error.get("code")
    return (code if isinstance(code, str) else None), str(error.get("message") or "")


def status_error(status: int, body: Any, headers: Mapping[str, str]) -> ModelClientError:
    """An error status before the stream: an HTTP response, or a WebSocket `error` frame's status."""
    mapping = body if isinstance(body, Mapping) else None
    code, message = _code_and_message(mapping)
    classification = classify_http_error(status, mapping, headers)
    return _typed(classification, message or f"HTTP {status}", OutcomeKind.REFUSED, code=code, status=status)


def http_error(status: int, content: bytes, headers: Mapping[str, str]) -> ModelClientError:
    return status_error(status, _json(content), headers)


def frame_error(frame: Mapping[str, Any]) -> ModelClientError:
    """A WebSocket `{"type": "error", "status", "error": {...}, "headers"?}` frame."""
    headers = frame.get("headers")
    return status_error(
        int(frame["status"]), {"error": frame.get("error")}, headers if isinstance(headers, Mapping) else {}
    )


def handshake_error(status: int, content: bytes, headers: Mapping[str, str]) -> ModelClientError:
    """A refused WebSocket upgrade: 426 means fall back now, anything else is retried then falls back."""
    if status == UPGRADE_REQUIRED:
        return UpgradeRequired(
            "WebSocket upgrade answered 426 Upgrade Required", outcome=OutcomeKind.REFUSED, status=status
        )
    code, message = _code_and_message(_json(content))
    return HandshakeRefused(
        message or f"WebSocket upgrade refused with status {status}",
        outcome=OutcomeKind.REFUSED,
        status=status,
        code=code,
        delay=retry_after(headers),
    )


def dropped(message: str) -> StreamDropped:
    return StreamDropped(message, outcome=OutcomeKind.DROPPED)


def idle_timeout(seconds: float) -> IdleTimeout:
    return IdleTimeout(f"no event within the idle timeout of {seconds:g}s", outcome=OutcomeKind.STALLED)


def connect_failed(message: str) -> ConnectFailed:
    return ConnectFailed(message, outcome=OutcomeKind.DROPPED)

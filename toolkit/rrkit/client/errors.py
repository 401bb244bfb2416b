"""The client's typed errors (docs/protocol.md: Failures and retries), built on the protocol's error classification."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ..protocol.errors import (
    INCOMPLETE,
    UPGRADE_REQUIRED,
    WEBSOCKET_CONNECTION_LIMIT,
    Classification,
    ErrorKind,
    classify_failure,
    classify_http_error,
    classify_statusless_error,
    error_event_code,
    retry_after,
)
from ..protocol.exceptions import RRKitError
from ..protocol.outcome import Outcome, OutcomeKind

OVERLOADED_MESSAGE = "Selected model is at capacity. Please try a different model."


class ModelClientError(RRKitError):
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
    """The request was rejected as invalid (400, `invalid_prompt`, ...)."""


class RetryLimitReached(NonRetryableError):
    """A 429 without `Retry-After`: Codex 0.169 gives up at once ("exceeded retry limit, last status: 429")."""


class PolicyRefusal(NonRetryableError):
    """A usage policy refused the request (`cyber_policy`, `bio_policy`, `misalignment_policy_violation`)."""


class ServerOverloaded(NonRetryableError):
    """`server_is_overloaded` ("Selected model is at capacity"): surfaced to the user, not retried."""


class ResponseIncomplete(NonRetryableError):
    """`response.incomplete`: the response stopped early (`incomplete_details.reason`); the turn fails."""


class CompactionFailed(NonRetryableError):
    """A remote compaction answered with something else than exactly one `compaction` item."""


class UnanswerableCall(NonRetryableError):
    """A call the client must run that the tool handler's result cannot answer (the message names its kind)."""


class SteerNotPossible(NonRetryableError):
    """Steering asked for when no response is streaming over a WebSocket."""


class UpgradeRequired(ModelClientError):
    """The WebSocket upgrade was answered 426: fall back to HTTP at once, for the whole session."""


# -- retried -----------------------------------------------------------------------------------
class RetryableError(ModelClientError):
    """Worth another attempt, after `delay` if the server named one, else after backoff."""

    retryable = True


class RateLimited(RetryableError):
    """Rate limited (`rate_limit_exceeded`, or a 429 with `Retry-After`); `delay` is the server's wait, if named."""


class Unauthorized(RetryableError):
    """The credentials were refused (401): Codex 0.169 retries it with backoff, like 403 and 404."""


class RetryableStreamError(RetryableError):
    """A generic stream failure (unknown or missing failure code, a 5xx, the flat `error` event)."""


class StreamDropped(RetryableStreamError):
    """The connection ended (EOF, close frame, reset) before `response.completed`."""


class IdleTimeout(RetryableStreamError):
    """No event arrived within the idle timeout."""


class ConnectionLimitReached(RetryableStreamError):
    """`websocket_connection_limit_reached`: a new socket and the full request, after backoff."""


class PreviousResponseNotFound(RetryableStreamError):
    """`previous_response_not_found` (with status 400 or without): a new socket and the full request."""


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
    ErrorKind.RETRY_LIMIT: RetryLimitReached,
    ErrorKind.AUTH: Unauthorized,
    ErrorKind.USAGE_LIMIT: UsageLimitReached,
    ErrorKind.PREVIOUS_RESPONSE: PreviousResponseNotFound,
    ErrorKind.INCOMPLETE: ResponseIncomplete,
    ErrorKind.RETRYABLE: RetryableStreamError,
}
"""One class per kind of the protocol's classification; the class's `retryable` agrees with it."""


def _typed(classification: Classification, message: str, outcome: OutcomeKind, **fields: Any) -> ModelClientError:
    cls = ERROR_CLASSES[classification.kind]
    if fields.get("code") == WEBSOCKET_CONNECTION_LIMIT:
        cls = ConnectionLimitReached
    assert cls.retryable == classification.retryable, f"{cls.__name__} disagrees with {classification}"
    return cls(message, outcome=outcome, delay=classification.delay, **fields)


def overloaded_message(server_message: str | None) -> str:
    """What Codex 0.169 tells the user of `server_is_overloaded` (the server's own words in parentheses)."""
    return f"{OVERLOADED_MESSAGE} ({server_message})" if server_message else OVERLOADED_MESSAGE


def failed_error(code: str | None, message: str | None) -> ModelClientError:
    """`response.failed` with `response.error = {code, message}`."""
    classification = classify_failure(code, message)
    text = overloaded_message(message) if classification.kind is ErrorKind.OVERLOADED else message
    return _typed(classification, text or "response.failed", OutcomeKind.FAILED, code=code)


def error_event_error(event: Mapping[str, Any]) -> ModelClientError | None:
    """A flat SSE `error` event or a WebSocket `error` frame without status: None (ignored), bar the two
    codes that mean a new socket and the full request."""
    classification = classify_statusless_error(event)
    if classification is None:
        return None
    error = event.get("error")
    message = (error if isinstance(error, Mapping) else event).get("message")
    code = error_event_code(event)
    return _typed(classification, str(message or code), OutcomeKind.ERRORED, code=code)


def incomplete_error(reason: str | None) -> ModelClientError:
    message = f"Incomplete response returned, reason: {reason or 'unknown'}"
    return _typed(INCOMPLETE, message, OutcomeKind.INCOMPLETE, reason=reason)


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
    if classification.kind is ErrorKind.RETRY_LIMIT:
        message = f"exceeded retry limit, last status: {status}" + (f" ({message})" if message else "")
    elif classification.kind is ErrorKind.OVERLOADED:
        message = overloaded_message(message)
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


def _after_ignored(error: Mapping[str, Any] | None) -> dict[str, Any]:
    """A drop or stall after an ignored `error` event: retried as such, but the response did end with that
    event (the server's capture says `errored`), so the attempt's outcome says so too."""
    if error is None:
        return {}
    return {"outcome": OutcomeKind.ERRORED, "code": error_event_code(error)}


def dropped(message: str, *, after: Mapping[str, Any] | None = None) -> StreamDropped:
    return StreamDropped(message, **{"outcome": OutcomeKind.DROPPED, **_after_ignored(after)})


def idle_timeout(seconds: float, *, after: Mapping[str, Any] | None = None) -> IdleTimeout:
    message = f"no event within the idle timeout of {seconds:g}s"
    return IdleTimeout(message, **{"outcome": OutcomeKind.STALLED, **_after_ignored(after)})


def connect_failed(message: str) -> ConnectFailed:
    return ConnectFailed(message, outcome=OutcomeKind.DROPPED)

"""The error catalogue (docs/protocol.md: Failures and retries): failure codes, HTTP statuses, retry delays and error
shapes."""

from __future__ import annotations

import typing
from typing import Any

import pydantic
import pytest
from openai.types.responses import ResponseError, ResponseFailedEvent

from rrkit.protocol import FAILURE_CODES, Classification, ErrorKind, classify_failure, error_body, ws_error_frame
from rrkit.protocol.errors import (
    GENERIC_FAILURE_MESSAGE,
    INCOMPLETE,
    PREVIOUS_RESPONSE_NOT_FOUND,
    RECONNECT_CODES,
    RESPONSE_ERROR_FIELDS,
    SDK_FAILURE_CODES,
    UPGRADE_REQUIRED,
    WEBSOCKET_CONNECTION_LIMIT,
    classify_http_error,
    classify_statusless_error,
    failure_message,
    named_delays,
    parse_retry_delay,
    retry_after,
)
from rrkit.protocol.events import ResponseEvents
from rrkit.protocol.ids import IdGenerator

# docs/protocol.md, Failures and retries: `response.failed` codes: code -> (kind, retry?).
FAILURE_TABLE: dict[str, tuple[ErrorKind, bool]] = {
    "context_length_exceeded": (ErrorKind.CONTEXT_WINDOW, False),
    "insufficient_quota": (ErrorKind.QUOTA, False),
    "usage_not_included": (ErrorKind.USAGE_NOT_INCLUDED, False),
    "invalid_prompt": (ErrorKind.INVALID_REQUEST, False),
    "cyber_policy": (ErrorKind.POLICY, False),
    "bio_policy": (ErrorKind.POLICY, False),
    "misalignment_policy_violation": (ErrorKind.POLICY, False),
    "server_is_overloaded": (ErrorKind.OVERLOADED, False),
    "slow_down": (ErrorKind.RETRYABLE, True),
    "rate_limit_exceeded": (ErrorKind.RATE_LIMITED, True),
    "server_error": (ErrorKind.RETRYABLE, True),
    "vector_store_timeout": (ErrorKind.RETRYABLE, True),
    "data_residency_mismatch": (ErrorKind.RETRYABLE, True),
    **dict.fromkeys(
        (
            "invalid_image",
            "invalid_image_format",
            "invalid_base64_image",
            "invalid_image_url",
            "image_too_large",
            "image_too_small",
            "image_parse_error",
            "image_content_policy_violation",
            "invalid_image_mode",
            "image_file_too_large",
            "unsupported_image_media_type",
            "empty_image_file",
            "failed_to_download_image",
            "image_file_not_found",
        ),
        (ErrorKind.RETRYABLE, True),
    ),
}


# -- response.failed ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", list(FAILURE_TABLE))
def test_errors_classify_failure_follows_protocol_table(code: str) -> None:
    kind, retryable = FAILURE_TABLE[code]
    classification = classify_failure(code, "no delay named here")
    assert (classification.kind, classification.retryable) == (kind, retryable)
    assert classification.delay is None


def test_errors_failure_catalogue_is_the_protocol_table() -> None:
    assert set(FAILURE_CODES) == set(FAILURE_TABLE)
    for code, entry in FAILURE_CODES.items():
        assert entry.code == code
        assert (entry.kind, entry.retryable) == FAILURE_TABLE[code]
        assert entry.message


def test_errors_rate_limit_failure_retries_after_delay_named_in_message() -> None:
    message = FAILURE_CODES["rate_limit_exceeded"].message
    assert classify_failure("rate_limit_exceeded", message) == Classification(ErrorKind.RATE_LIMITED, True, 1.5)
    assert classify_failure("rate_limit_exceeded", "Rate limit reached. Please try again in 28ms.").delay == 0.028


def test_errors_non_retryable_failure_ignores_delay_in_message() -> None:
    assert classify_failure("insufficient_quota", "try again in 5s").delay is None


@pytest.mark.parametrize("code", ["bio_policy", "misalignment_policy_violation", "cyber_policy"])
def test_errors_the_policy_codes_codex_fails_the_turn_on_are_policy_refusals(code: str) -> None:
    assert classify_failure(code, "flagged") == Classification(ErrorKind.POLICY, False)


def test_errors_a_code_named_like_a_policy_but_unknown_is_retried_as_codex_retries_it() -> None:
    # observed: Codex 0.169.0 retries `some_policy` with backoff (tests/realclients/differential_cases.py)
    assert classify_failure("some_future_policy", "flagged") == Classification(ErrorKind.RETRYABLE, True)


def test_errors_every_code_the_sdk_names_is_in_the_catalogue_with_its_classification_and_why() -> None:
    assert set(FAILURE_CODES) >= SDK_CODES
    assert set(SDK_FAILURE_CODES) == SDK_CODES
    for entry in FAILURE_CODES.values():
        assert entry.basis.startswith("observed: Codex 0.169.0 "), entry.code
        assert ("fails the turn" in entry.basis) is not entry.retryable, entry.code
        assert entry.message.endswith((".", "!")), entry.code
    assert set(RESPONSE_ERROR_FIELDS) == set(ResponseError.model_fields)


@pytest.mark.parametrize("code", ["server_error", "something_new", "", None])
def test_errors_unknown_or_missing_code_is_retryable_stream_error(code: str | None) -> None:
    assert classify_failure(code, "An error occurred.") == Classification(ErrorKind.RETRYABLE, True)
    assert classify_failure(code) == Classification(ErrorKind.RETRYABLE, True)


@pytest.mark.parametrize("code", ["server_error", "slow_down", None])
def test_errors_a_named_delay_is_read_only_for_rate_limit_exceeded(code: str | None) -> None:
    assert classify_failure(code, "Please try again in 2s") == Classification(ErrorKind.RETRYABLE, True)


def test_errors_failure_message_is_the_catalogues_else_the_generic_one() -> None:
    assert failure_message("rate_limit_exceeded") == FAILURE_CODES["rate_limit_exceeded"].message
    assert failure_message("brand_new_code") == failure_message(None) == GENERIC_FAILURE_MESSAGE


def test_errors_response_failed_without_a_message_carries_the_catalogues() -> None:
    (event,) = ResponseEvents({"model": "m"}).failed("rate_limit_exceeded")
    assert event["response"]["error"]["message"] == FAILURE_CODES["rate_limit_exceeded"].message


def test_errors_incomplete_is_never_retried() -> None:
    assert not INCOMPLETE.retryable


@pytest.mark.parametrize("code", ["context_length_exceeded", "server_is_overloaded", "rate_limit_exceeded", None])
def test_errors_a_statusless_error_is_ignored_whatever_its_code(code: str | None) -> None:
    assert classify_statusless_error({"type": "error", "code": code, "message": "m"}) is None
    assert classify_statusless_error({"type": "error", "error": {"code": code, "message": "m"}}) is None


@pytest.mark.parametrize("code", sorted(RECONNECT_CODES))
def test_errors_a_statusless_frame_with_a_reconnect_code_is_retried(code: str) -> None:
    classification = classify_statusless_error({"type": "error", "error": {"code": code, "message": "m"}})
    assert classification is not None and classification.retryable and classification.delay is None


# -- retry delays ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "seconds"),
    [
        ("Rate limit reached for gpt-x. Please try again in 1.5s.", 1.5),
        ("Please try again in 28ms.", 0.028),
        ("try again in 35 seconds", 35.0),
        ("Try again in 1 second", 1.0),
        ("try again in 10 secs", 10.0),
        ("TRY AGAIN IN 4S", 4.0),
        ("try again in7s", 7.0),
    ],
)
def test_errors_parse_retry_delay_reads_s_ms_and_seconds_only(message: str, seconds: float) -> None:
    assert parse_retry_delay(message) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "message",
    [
        None,
        "",
        "Rate limit reached.",
        "try again later",
        "try again in a moment",
        "try again in 5 hours",
        "in 5s",
        "Please try again in 2 minutes.",
        "try again in 1 min",
        "try again in 3m",
        "try again in 250 milliseconds",
    ],
)
def test_errors_parse_retry_delay_is_none_without_a_delay(message: str | None) -> None:
    assert parse_retry_delay(message) is None


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 9.0),
        ({"retry-after-ms": "soon", "retry-after": "3"}, 3.0),
        ({"retry-after": "-4"}, 0.0),
    ],
)
def test_errors_retry_after_reads_the_seconds_header_only(headers: dict[str, str], seconds: float) -> None:
    assert retry_after(headers) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-request-id": "req_1"},
        {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},
        {"retry-after": "inf"},
        {"retry-after": "nan"},
        {"retry-after-ms": "1500"},
    ],
)
def test_errors_retry_after_is_none_without_a_usable_number(headers: dict[str, str]) -> None:
    assert retry_after(headers) is None


# -- HTTP statuses before the stream -----------------------------------------------------------


def body(code: str | None = None, type: str = "invalid_request_error", message: str = "error") -> dict[str, Any]:
    return error_body(message, type=type, code=code)


@pytest.mark.parametrize(
    ("status", "error", "headers", "expected"),
    [
        (400, body(), {}, Classification(ErrorKind.INVALID_REQUEST, False)),
        (400, body("context_length_exceeded"), {}, Classification(ErrorKind.CONTEXT_WINDOW, False)),
        (401, body(type="invalid_request_error"), {}, Classification(ErrorKind.AUTH, True)),
        (403, body(type="permission_error"), {}, Classification(ErrorKind.RETRYABLE, True)),
        (404, body(type="not_found_error"), {}, Classification(ErrorKind.RETRYABLE, True)),
        (409, body(), {}, Classification(ErrorKind.RETRYABLE, True)),
        (422, body("context_length_exceeded"), {"retry-after": "2"}, Classification(ErrorKind.RETRYABLE, True, 2.0)),
        (400, body(), {"retry-after": "2"}, Classification(ErrorKind.INVALID_REQUEST, False)),
        (404, body(), {"retry-after": "2"}, Classification(ErrorKind.RETRYABLE, True, 2.0)),
        (400, body(PREVIOUS_RESPONSE_NOT_FOUND), {}, Classification(ErrorKind.PREVIOUS_RESPONSE, True)),
        (429, body(type="usage_limit_reached"), {"retry-after": "60"}, Classification(ErrorKind.USAGE_LIMIT, False)),
        (429, body(type="usage_not_included"), {}, Classification(ErrorKind.USAGE_NOT_INCLUDED, False)),
        (429, body("insufficient_quota", "insufficient_quota"), {}, Classification(ErrorKind.QUOTA, False)),
        (
            429,
            body("rate_limit_exceeded", "rate_limit_error"),
            {"Retry-After": "7"},
            Classification(ErrorKind.RATE_LIMITED, True, 7.0),
        ),
        (
            429,
            body("rate_limit_exceeded", message="Please try again in 20s."),
            {},
            Classification(ErrorKind.RETRY_LIMIT, False),
        ),
        (429, None, {"retry-after-ms": "1500"}, Classification(ErrorKind.RETRY_LIMIT, False)),
        (429, None, {}, Classification(ErrorKind.RETRY_LIMIT, False)),
        (500, body(type="server_error"), {}, Classification(ErrorKind.RETRYABLE, True)),
        (502, None, {"retry-after": "3"}, Classification(ErrorKind.RETRYABLE, True, 3.0)),
        (503, body(type="server_error"), {"retry-after": "3"}, Classification(ErrorKind.RETRYABLE, True, 3.0)),
        (503, body(type="server_error"), {"retry-after-ms": "3000"}, Classification(ErrorKind.RETRYABLE, True)),
        (503, body("server_is_overloaded", "server_error"), {}, Classification(ErrorKind.OVERLOADED, False)),
        (503, body("slow_down", "server_error"), {}, Classification(ErrorKind.RETRYABLE, True)),
    ],
    ids=[
        "400",
        "400-context-length",
        "401",
        "403",
        "404",
        "409",
        "422-context-length-retry-after",
        "400-retry-after",
        "404-retry-after",
        "400-previous-response-not-found",
        "429-usage-limit-reached",
        "429-usage-not-included",
        "429-insufficient-quota",
        "429-retry-after",
        "429-delay-in-message",
        "429-retry-after-ms",
        "429-no-delay",
        "500",
        "502-retry-after",
        "503-retry-after",
        "503-retry-after-ms",
        "503-server-is-overloaded",
        "503-slow-down",
    ],
)
def test_errors_classify_http_error_follows_protocol(
    status: int, error: dict[str, Any] | None, headers: dict[str, str], expected: Classification
) -> None:
    assert classify_http_error(status, error, headers) == expected


@pytest.mark.parametrize("status", [400, 429, 500, 503])
def test_errors_websocket_connection_limit_means_reconnect_and_retry(status: int) -> None:
    error = body(WEBSOCKET_CONNECTION_LIMIT)
    assert classify_http_error(status, error, {}) == Classification(ErrorKind.RETRYABLE, True)
    assert classify_http_error(status, error, {"retry-after": "1"}).delay == 1.0


def test_errors_usage_limit_reached_is_not_retried_whatever_delay_is_offered() -> None:
    error = body(type="usage_limit_reached", message="try again in 5 minutes")
    assert not classify_http_error(429, error, {"retry-after": "1"}).retryable


def test_errors_classify_http_error_tolerates_odd_bodies() -> None:
    assert classify_http_error(400, {"error": "plain string"}, {}) == Classification(ErrorKind.INVALID_REQUEST, False)
    assert classify_http_error(500, {}, {}) == Classification(ErrorKind.RETRYABLE, True)
    assert classify_http_error(429, {"error": None}, {}) == Classification(ErrorKind.RETRY_LIMIT, False)


# -- error shapes ------------------------------------------------------------------------------


def test_errors_error_body_is_openai_shaped() -> None:
    assert error_body("bad", code="invalid_value", param="input") == {
        "error": {"type": "invalid_request_error", "code": "invalid_value", "message": "bad", "param": "input"}
    }


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "invalid_request_error"),
        (401, "invalid_request_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (UPGRADE_REQUIRED, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "server_error"),
        (503, "server_error"),
    ],
)
def test_errors_error_frame_always_has_status_and_typed_error(status: int, error_type: str) -> None:
    frame = ws_error_frame(status, "message")
    assert frame["type"] == "error"
    assert frame["status"] == status
    assert isinstance(frame["status"], int)
    assert frame["error"] == {"type": error_type, "code": None, "message": "message", "param": None}
    assert "headers" not in frame


def test_errors_error_frame_for_unknown_previous_response() -> None:
    frame = ws_error_frame(
        400, "Previous response not found.", code=PREVIOUS_RESPONSE_NOT_FOUND, param="previous_response_id"
    )
    assert frame["status"] == 400
    assert frame["error"]["code"] == "previous_response_not_found"
    assert frame["error"]["param"] == "previous_response_id"


def test_errors_error_frame_keeps_explicit_type_and_headers() -> None:
    frame = ws_error_frame(429, "slow", type="usage_limit_reached", headers={"retry-after": "2"})
    assert frame["status"] == 429
    assert frame["error"]["type"] == "usage_limit_reached"
    assert frame["headers"] == {"retry-after": "2"}
    assert classify_http_error(frame["status"], frame, frame["headers"]).kind is ErrorKind.USAGE_LIMIT


def test_errors_error_frame_for_connection_limit_classifies_as_retryable() -> None:
    frame = ws_error_frame(400, "Too many connections.", code=WEBSOCKET_CONNECTION_LIMIT)
    assert classify_http_error(frame["status"], frame, {}).retryable


SDK_CODES = set(typing.get_args(ResponseError.model_fields["code"].annotation))


@pytest.mark.parametrize("code", sorted(FAILURE_CODES))
def test_a_generated_failure_parses_strictly_with_the_sdk_exactly_when_its_code_is_in_the_sdk_literal(
    code: str,
) -> None:
    """Six catalogue codes the real service sends (and Codex reacts to) are outside the SDK's `ResponseError.code`
    literal: a strict parse refuses their `response.failed` (docs/protocol.md says so). A test of a strict client
    scripts one of the codes the SDK knows (`SDK_FAILURE_CODES`)."""
    events = ResponseEvents({"model": "gpt-test"}, ids=IdGenerator.counting(), created_at=1)
    events.start()
    failed = events.failed(code)[-1]
    try:
        ResponseFailedEvent.model_validate(failed)
    except pydantic.ValidationError:
        parses = False
    else:
        parses = True
    assert parses is (code in SDK_CODES)
    assert (code in SDK_CODES) is (code in SDK_FAILURE_CODES)


def test_named_delays_are_every_delay_an_answer_names_whichever_a_client_reads() -> None:
    headers = {"Retry-After": "2", "retry-after-ms": "1500"}
    assert named_delays(headers, "Please try again in 28ms.") == (0.028, 1.5, 2.0)
    assert named_delays({"retry-after": "inf", "retry-after-ms": "nan"}, "try again in 2 minutes") == ()
    assert named_delays({"retry-after-ms": "soon"}, None) == ()

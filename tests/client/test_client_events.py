"""Both transports' events map to one client event type; terminal failures map to typed errors."""

from __future__ import annotations

import pytest

from rrkit.client import (
    Completed,
    Created,
    ModelClientError,
    OutputItemAdded,
    OutputItemDone,
    ReasoningSummaryDelta,
    RefusalDelta,
    ResponseIncomplete,
    RetryableStreamError,
    TextDelta,
    ToolInputDelta,
)
from rrkit.client.events import DELTA_CLASSES, map_event
from rrkit.protocol import ResponseEvents, events
from rrkit.protocol.errors import RECONNECT_CODES


def test_every_protocol_delta_type_maps_to_a_client_delta() -> None:
    assert set(DELTA_CLASSES) == events.DELTA_TYPES


def test_a_whole_response_maps_to_the_client_event_sequence() -> None:
    builder = ResponseEvents({"model": "gpt-test"}, response_id="resp_1")
    builder.start()
    builder.reasoning(["Think."])
    builder.message("Hi!", 2)
    builder.refusal("No.")
    builder.function_call("get_weather", '{"city":"Paris"}', 2)
    builder.completed(end_turn=False)
    mapped = [event for event in map(map_event, builder.events) if event is not None]
    kinds = [type(event) for event in mapped]
    assert kinds[0] is Created and mapped[0] == Created("resp_1")
    assert kinds.count(OutputItemAdded) == kinds.count(OutputItemDone) == 4
    assert ReasoningSummaryDelta in kinds and RefusalDelta in kinds
    assert "".join(e.delta for e in mapped if isinstance(e, TextDelta)) == "Hi!"
    assert "".join(e.delta for e in mapped if isinstance(e, ToolInputDelta)) == '{"city":"Paris"}'
    completed = mapped[-1]
    assert isinstance(completed, Completed) and completed.response_id == "resp_1" and completed.end_turn is False


def test_unknown_event_types_are_ignored() -> None:
    assert map_event({"type": "response.some_future_event", "sequence_number": 3}) is None


def test_terminal_failures_raise_typed_errors() -> None:
    builder = ResponseEvents({"model": "gpt-test"})
    with pytest.raises(ResponseIncomplete) as incomplete:
        map_event(builder.incomplete("max_output_tokens")[0])
    assert incomplete.value.reason == "max_output_tokens"
    with pytest.raises(RetryableStreamError):
        map_event(builder.failed(None, "boom")[0])


@pytest.mark.parametrize("code", ["server_error", "context_length_exceeded", None])
def test_a_flat_error_event_maps_to_nothing_whatever_its_code(code: str | None) -> None:
    assert map_event(ResponseEvents({"model": "gpt-test"}).error("bad", code=code)[0]) is None


@pytest.mark.parametrize("code", sorted(RECONNECT_CODES))
def test_a_statusless_error_frame_with_a_reconnect_code_raises_a_retryable_error(code: str) -> None:
    with pytest.raises(ModelClientError) as errored:
        map_event({"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": "again"}})
    assert errored.value.retryable and errored.value.code == code
    assert errored.value.outcome_kind.value == "errored"

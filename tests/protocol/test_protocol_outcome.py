"""How a stream ended (outcome_of_events), and the id generator the builders use."""

from __future__ import annotations

import re

import pytest

from rrkit.protocol import Event, IdGenerator, Outcome, OutcomeKind, ResponseEvents, outcome_of_events
from rrkit.protocol.ids import PREFIXES


def started() -> ResponseEvents:
    r = ResponseEvents({"model": "m"}, ids=IdGenerator.counting(), created_at=1)
    r.start()
    r.message("hello", 2)
    return r


def test_outcome_of_completed_stream() -> None:
    r = started()
    r.completed()
    assert outcome_of_events(r.events) == Outcome(OutcomeKind.COMPLETED, len(r.events))


def test_outcome_of_failed_stream_carries_code_and_message() -> None:
    r = started()
    r.failed("rate_limit_exceeded", "Please try again in 1.5s.")
    assert outcome_of_events(r.events) == Outcome(
        OutcomeKind.FAILED, len(r.events), code="rate_limit_exceeded", message="Please try again in 1.5s."
    )


def test_outcome_of_failed_stream_without_error_object() -> None:
    r = started()
    r.failed(None, "boom")
    r.events[-1]["response"]["error"] = None
    assert outcome_of_events(r.events) == Outcome(OutcomeKind.FAILED, len(r.events))


def test_outcome_of_incomplete_stream_carries_reason() -> None:
    r = started()
    r.incomplete("max_output_tokens")
    assert outcome_of_events(r.events) == Outcome(OutcomeKind.INCOMPLETE, len(r.events), reason="max_output_tokens")


def test_outcome_of_flat_error_event_carries_code_and_message() -> None:
    r = started()
    r.error("Something broke.", code="server_error")
    assert outcome_of_events(r.events) == Outcome(
        OutcomeKind.ERRORED, len(r.events), code="server_error", message="Something broke."
    )


@pytest.mark.parametrize("keep", [0, 1, 2, 5])
def test_outcome_of_cut_stream_is_none(keep: int) -> None:
    r = started()
    r.completed()
    assert outcome_of_events(r.events[:keep]) is None


def test_outcome_counts_every_event_in_the_stream() -> None:
    r = started()
    r.completed()
    events: list[Event] = list(r.events)
    outcome = outcome_of_events(events)
    assert outcome is not None
    assert outcome.events_sent == len(events) == r.sequence_number


def test_outcome_to_dict_omits_absent_fields() -> None:
    assert Outcome(OutcomeKind.COMPLETED, 9).to_dict() == {"kind": "completed", "events_sent": 9}
    assert Outcome(OutcomeKind.REFUSED, 0, code="c", message="m", status=429).to_dict() == {
        "kind": "refused",
        "events_sent": 0,
        "code": "c",
        "message": "m",
        "status": 429,
    }
    assert Outcome(OutcomeKind.INCOMPLETE, 3, reason="content_filter").to_dict()["reason"] == "content_filter"


# -- ids ---------------------------------------------------------------------------------------


def test_ids_counting_generator_is_deterministic_with_kind_prefixes() -> None:
    ids = IdGenerator.counting()
    assert [ids.new("response"), ids.new("message"), ids.new("function_call"), ids.new("call")] == [
        "resp_1",
        "msg_2",
        "fc_3",
        "call_4",
    ]
    assert IdGenerator.counting().new("reasoning") == "rs_1"


@pytest.mark.parametrize("kind", list(PREFIXES))
def test_ids_default_generator_makes_unique_prefixed_hex_ids(kind: str) -> None:
    ids = IdGenerator()
    made = {ids.new(kind) for _ in range(50)}
    assert len(made) == 50
    assert all(re.fullmatch(re.escape(PREFIXES[kind]) + r"[0-9a-f]{24}", value) for value in made)


def test_ids_custom_token_source_is_used() -> None:
    assert IdGenerator(lambda: "fixed").new("custom_tool_call") == "ctc_fixed"


def test_ids_unknown_kind_is_rejected() -> None:
    with pytest.raises(KeyError):
        IdGenerator().new("banana")

"""A response plan is one kind of answer: a rejection, a whole body, or a stream of events (with its fault and
release); a plan built as two at once is refused when it is made, naming what it mixes."""

from __future__ import annotations

from typing import Any

import pytest

from rrkit.protocol.plan import Rejection, ResponsePlan, StreamFault, VerbatimBody, events_of
from rrkit.protocol.wire_events import planned

REJECTION = Rejection(429, {"error": {"message": "slow down"}}, {"retry-after": "1"})
BODY = VerbatimBody(200, b'{"id": "resp_1"}')


async def _release() -> None:
    return None


def _stream() -> Any:
    return events_of([planned({"type": "response.created", "sequence_number": 0}, "http")])


ONE_KIND: dict[str, dict[str, Any]] = {
    "empty-stream": {},
    "stream": {"events": _stream, "fault": StreamFault(drop_after=1), "release": _release, "response_id": "resp_1"},
    "rejection": {"rejection": REJECTION, "headers": {"x-kept": "1"}, "turn_state": "ts", "replayed": True},
    "body": {"body": BODY, "response_id": "resp_1", "headers": {"x-kept": "1"}, "turn_state": "ts"},
}
MIXED: dict[str, tuple[dict[str, Any], str]] = {
    "rejection-and-body": ({"rejection": REJECTION, "body": BODY}, "rejection and body"),
    "rejection-and-events": ({"rejection": REJECTION, "events": _stream}, "rejection and events"),
    "body-and-events": ({"body": BODY, "events": _stream}, "body and events"),
    "rejection-and-fault": ({"rejection": REJECTION, "fault": StreamFault(stall_after=0)}, "rejection and fault"),
    "body-and-release": ({"body": BODY, "release": _release}, "body and release"),
}


def _made(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value() if name == "events" else value for name, value in fields.items()}


@pytest.mark.parametrize("kind", list(ONE_KIND))
def test_response_plan_of_one_kind_is_made(kind: str) -> None:
    fields = _made(ONE_KIND[kind])
    plan = ResponsePlan(**fields)
    assert all(getattr(plan, name) is value for name, value in fields.items())


@pytest.mark.parametrize("mix", list(MIXED))
def test_response_plan_of_two_kinds_at_once_is_refused_naming_them(mix: str) -> None:
    fields, named = MIXED[mix]
    with pytest.raises(ValueError, match=f"one of a rejection, a whole body or a stream of events.*{named}"):
        ResponsePlan(**_made(fields))

"""The field checker (`rrkit.references`): a violation names its field as a user reads it, is `must` where a
strict client breaks (missing, wrong type, null where not allowed, outside an enum) and `should` otherwise; a union
is judged by the branch its `type` names, never as "no branch fits"; rrkit's own objects hold to it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rrkit.protocol import IdGenerator, ResponseEvents, routes, ws_error_frame
from rrkit.protocol import events as ev
from rrkit.protocol.errors import error_object
from rrkit.references import ROUTE_KINDS, Strictness, check_body, check_event, route_kind
from rrkit.references.schemas import event_schemas


def _events() -> list[dict[str, Any]]:
    build = ResponseEvents({"model": "gpt-test", "input": "hi"}, ids=IdGenerator.counting(), created_at=1)
    return [*build.start(), *build.message("Hello there!", chunks=2), *build.completed()]


def _shown(violations: list[Any]) -> list[tuple[str, Strictness]]:
    return [(str(violation), violation.severity) for violation in violations]


def test_rrkit_s_own_text_reply_holds_to_the_spec_event_by_event() -> None:
    events = _events()
    assert {event["type"] for event in events} <= set(event_schemas())
    assert [_shown(check_event(event)) for event in events] == [[] for _ in events]
    assert check_body("response", ev.terminal_event(events)["response"]) == []  # type: ignore[index]


def test_a_missing_required_field_is_a_must_named_by_its_path_in_the_event() -> None:
    completed = copy.deepcopy(_events()[-1])
    del completed["response"]["temperature"]
    del completed["response"]["output"][0]["content"][0]["annotations"]
    assert _shown(check_event(completed)) == [
        ("response.output[0].content[0].annotations: missing", Strictness.MUST),
        ("response.temperature: missing", Strictness.MUST),
    ]


def test_a_wrong_type_and_null_where_none_is_allowed_are_musts_saying_what_was_expected() -> None:
    completed = copy.deepcopy(_events()[-1])
    completed["response"]["usage"]["total_tokens"] = "3"
    completed["response"]["tools"] = None
    assert sorted(_shown(check_event(completed))) == [
        ("response.tools: expected array, got null", Strictness.MUST),
        ('response.usage.total_tokens: expected integer, got "3"', Strictness.MUST),
    ]


def test_a_union_is_judged_by_the_branch_its_type_names() -> None:
    added = copy.deepcopy(_events()[2])
    assert added["type"] == ev.ITEM_ADDED
    added["item"]["role"] = "robot"  # an enum of the message branch: not "valid under none of the branches"
    assert _shown(check_event(added)) == [('item.role: expected one of "assistant"; got "robot"', Strictness.MUST)]
    added["item"] = {"type": "hologram", "id": "x"}
    (violation,) = check_event(added)
    assert violation.path == "item.type" and '"message"' in violation.problem and '"hologram"' in violation.problem
    assert violation.severity is Strictness.MUST


def test_a_value_out_of_range_is_a_should() -> None:
    completed = copy.deepcopy(_events()[-1])
    completed["response"]["top_p"] = 3
    assert _shown(check_event(completed)) == [("response.top_p: 3 is greater than the maximum of 1", Strictness.SHOULD)]


def test_the_spec_s_artefacts_are_fixed_usage_null_while_under_way_and_the_steered_reason() -> None:
    created = _events()[0]
    assert created["response"].get("usage") is None and check_event(created) == []
    incomplete = copy.deepcopy(_events()[-1])
    incomplete["type"], incomplete["response"]["status"] = ev.INCOMPLETE, "incomplete"
    incomplete["response"]["incomplete_details"] = {"reason": "steered"}
    assert check_event(incomplete) == []


def test_errors_are_held_to_the_error_object_over_sse_and_websocket() -> None:
    assert check_body("error", error_object("bad", code="x")) == []
    assert check_event(ws_error_frame(400, "bad")) == []
    assert _shown(check_event({"type": "error", "status": 400, "error": {"message": "bad"}})) == [
        ("error.code: missing", Strictness.MUST),
        ("error.param: missing", Strictness.MUST),
        ("error.type: missing", Strictness.MUST),
    ]
    wrong = {**error_object("bad"), "message": 1}
    assert [str(v) for v in check_body("error", wrong, at=("error",))] == ["error.message: expected string, got 1"]


def test_an_event_type_the_spec_does_not_have_is_not_judged() -> None:
    assert check_event({"type": "codex.rate_limits", "anything": 1}) == []
    assert check_event({"type": "response.steer.accepted"}) == []


@pytest.mark.parametrize("route", sorted(ROUTE_KINDS))
def test_every_route_with_a_body_has_a_kind_and_each_kind_a_schema(route: str) -> None:
    kind = route_kind(route)
    assert kind is not None and isinstance(check_body(kind, {}), list)
    assert route_kind(routes.DELETE) is None  # the spec documents no 200 body for it (artefact only_200_documented)

"""The order checker knows every event the official SDK defines: each type of its `ResponseStreamEvent` union is a
lifecycle event, an event held to an output item, or one explicitly bound to none, so a family the SDK adds fails
here until it is a row; and each row says what the SDK's types say (type strings, item types, field names)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from openai.types.responses.response_output_item import ResponseOutputItem
from openai.types.responses.response_stream_event import ResponseStreamEvent
from pydantic import BaseModel

from rrkit.protocol import events as ev
from rrkit.protocol.event_families import (
    FAMILIES,
    ITEM_BOUND,
    ITEM_EVENTS,
    LIFECYCLE,
    NEEDS_PART,
    NOT_ITEM_BOUND,
    Family,
)


def _by_type(union: Any) -> dict[str, type[BaseModel]]:
    """The models of a discriminated union, by their `type` literal."""
    members = typing.get_args(typing.get_args(union)[0])
    return {typing.get_args(model.model_fields["type"].annotation)[0]: model for model in members}


SDK_EVENTS = _by_type(ResponseStreamEvent)
SDK_ITEMS = _by_type(ResponseOutputItem)
CLASSES = {"lifecycle": LIFECYCLE, "item-bound": ITEM_BOUND, "not item-bound": NOT_ITEM_BOUND}


def classes_of(kind: str) -> list[str]:
    return [name for name, kinds in CLASSES.items() if kind in kinds]


def test_order_sdk_union_is_read_whole() -> None:
    assert len(SDK_EVENTS) == len(typing.get_args(typing.get_args(ResponseStreamEvent)[0]))
    assert {ev.CREATED, ev.TEXT_DELTA, ev.ERROR} <= set(SDK_EVENTS)


@pytest.mark.parametrize("kind", sorted(SDK_EVENTS))
def test_order_knows_every_event_type_of_the_sdk_in_exactly_one_class(kind: str) -> None:
    assert len(classes_of(kind)) == 1, f"{kind}: {classes_of(kind) or 'unknown to rrkit.protocol.order'}"


@pytest.mark.parametrize("kind", sorted(SDK_EVENTS))
def test_order_holds_to_an_item_exactly_the_sdk_events_that_name_an_output_index(kind: str) -> None:
    assert (kind in ITEM_BOUND) == ("output_index" in SDK_EVENTS[kind].model_fields)


@pytest.mark.parametrize("kind", sorted(SDK_EVENTS))
def test_order_lifecycle_events_are_the_sdk_events_that_carry_the_response(kind: str) -> None:
    assert (kind in LIFECYCLE) == ("response" in SDK_EVENTS[kind].model_fields)


def test_order_tables_name_only_event_types_of_the_sdk() -> None:
    named = set(ITEM_EVENTS) | set(NEEDS_PART.values()) | LIFECYCLE | ITEM_BOUND | NOT_ITEM_BOUND
    named |= {kind for family in FAMILIES for kind in (family.delta, family.done, family.opened_by) if kind}
    assert named - set(SDK_EVENTS) == set()


def test_order_side_channels_are_no_event_of_the_sdk() -> None:
    assert ev.SIDE_CHANNELS & set(SDK_EVENTS) == set()
    assert ev.SIDE_CHANNELS.isdisjoint(ITEM_BOUND | LIFECYCLE | NOT_ITEM_BOUND)


@pytest.mark.parametrize(("kind", "item_type"), list(ITEM_EVENTS.items()))
def test_order_item_event_rows_name_an_output_item_type_of_the_sdk(kind: str, item_type: str) -> None:
    assert item_type in SDK_ITEMS


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.delta)
def test_order_family_rows_say_what_the_sdk_models_say(family: Family) -> None:
    assert family.item_type in SDK_ITEMS
    assert SDK_EVENTS[family.delta].model_fields["delta"].annotation is str
    assert SDK_EVENTS[family.done].model_fields[family.field].annotation is str
    if family.in_item is not None:
        assert family.in_item[0] in SDK_ITEMS[family.item_type].model_fields


@pytest.mark.parametrize("kind", sorted(kind for kind in SDK_EVENTS if kind in ITEM_BOUND))
def test_order_every_sdk_item_event_streaming_text_is_a_family_delta(kind: str) -> None:
    """An item's event with a text `delta` is a family row (its done event held to the joined deltas)."""
    delta = SDK_EVENTS[kind].model_fields.get("delta")
    streams_text = delta is not None and delta.annotation is str
    assert streams_text == (kind in {family.delta for family in FAMILIES})


def test_order_sdk_events_bound_to_no_item_are_audio_and_the_flat_error() -> None:
    assert {kind for kind in SDK_EVENTS if classes_of(kind) == ["not item-bound"]} == {
        ev.AUDIO_DELTA,
        ev.AUDIO_DONE,
        ev.AUDIO_TRANSCRIPT_DELTA,
        ev.AUDIO_TRANSCRIPT_DONE,
        ev.ERROR,
    }

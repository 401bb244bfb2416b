"""WebSocket lanes (issue 48; the SDK's `ResponseCreate.stream_id`): creates naming different `stream_id`s stream
side by side on one socket, each of their events tagged with the lane, which the SDK's server event types accept;
creates on one lane are answered in order; a lane's refusal names it; the capture keeps the events as the response
made them (the lane in the request), and a cassette plays the lanes again."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from openai._models import validate_type
from openai.types.beta import BetaResponsesServerEvent

from rrkit.cassette import CassetteSource, cassette_from_capture
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

from .faultclient import Serve, finished, ws_connect

SLOW = reply(text("one two three four five six", chunks=6)).delayed(each=0.02)
"""Eight events 20 ms apart: two lanes started together overlap for most of them."""


def lanes_run(server: FakeServer, creates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send every create at once on one socket, then read until each has ended; every frame received, in order."""
    ends = {"response.completed", "response.failed", "response.incomplete", "error"}
    with ws_connect(server) as websocket:
        for create in creates:
            websocket.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hi", **create}))
        frames: list[dict[str, Any]] = []
        while sum(frame["type"] in ends for frame in frames) < len(creates):
            frames.append(json.loads(websocket.recv(timeout=30)))
    return frames


def by_lane(frames: list[dict[str, Any]]) -> dict[str | None, list[dict[str, Any]]]:
    lanes: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for frame in frames:
        lanes[frame.get("stream_id")].append(frame)
    return lanes


def test_two_lanes_stream_side_by_side_each_event_tagged_and_typed_as_the_sdk_reads_it(serve: Serve) -> None:
    server = serve(Script(default=SLOW))
    frames = lanes_run(server, [{"stream_id": "a"}, {"stream_id": "b"}])
    lanes = by_lane(frames)
    assert set(lanes) == {"a", "b"}
    for events in lanes.values():
        assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
        assert [event["sequence_number"] for event in events] == list(range(len(events)))
        for event in events:
            validate_type(type_=BetaResponsesServerEvent, value=event)  # type: ignore[arg-type]
    order = [frame["stream_id"] for frame in frames]
    assert order.index("b") < len(order) - order[::-1].index("a") - 1  # b began before a ended: side by side
    for exchange in (finished(server, 0, count=2), finished(server, 1, count=2)):
        assert exchange.wire_request is not None and exchange.wire_request["stream_id"] in ("a", "b")
        assert exchange.logical_request is not None and "stream_id" not in exchange.logical_request
        assert all("stream_id" not in sent.event for sent in exchange.events)  # the response's own events


def test_creates_on_one_lane_are_answered_in_order(serve: Serve) -> None:
    server = serve(Script(default=SLOW))
    frames = lanes_run(server, [{"stream_id": "a", "input": "first"}, {"stream_id": "a", "input": "second"}])
    types = [frame["type"] for frame in frames]
    assert types.count("response.created") == 2
    assert types.index("response.completed") < len(types) - 1 - types[::-1].index("response.created")
    server.settle()
    assert [e.wire_request["input"] for e in server.exchanges if e.wire_request] == ["first", "second"]


def test_a_refusal_on_a_lane_names_it_and_the_other_lane_goes_on(serve: Serve) -> None:
    server = serve(Script(default=SLOW))
    frames = lanes_run(server, [{"stream_id": "a", "previous_response_id": "resp_nowhere"}, {"stream_id": "b"}])
    lanes = by_lane(frames)
    [refused] = lanes["a"]
    assert refused["type"] == "error" and refused["error"]["code"] == "previous_response_not_found"
    assert lanes["b"][-1]["type"] == "response.completed"


def test_a_recording_of_two_lanes_plays_them_again_tagged(serve: Serve) -> None:
    server = serve(Script(default=SLOW))
    recorded = by_lane(lanes_run(server, [{"stream_id": "a"}, {"stream_id": "b", "input": "other"}]))
    server.settle()
    cassette = cassette_from_capture(server.exchanges, server.connections)
    with serve.running(source=CassetteSource(cassette)) as replay:
        replayed = by_lane(lanes_run(replay, [{"stream_id": "a"}, {"stream_id": "b", "input": "other"}]))
    assert set(replayed) == {"a", "b"}
    for lane in ("a", "b"):
        assert [e["type"] for e in replayed[lane]] == [e["type"] for e in recorded[lane]]

"""Side-channel frames (`response.metadata`, `codex.response.metadata`, `codex.rate_limits`) scripted over both
transports, placed before the response event they name, recorded, replayed, and left out by every stream rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from rrkit.cassette import cassette_from_capture
from rrkit.cassette.replay import CassetteSource
from rrkit.protocol import events as ev
from rrkit.protocol.order import check_order
from rrkit.protocol.vocabulary import TRANSPORTS, Transport
from rrkit.script import Script, load_script, reply, side_frame
from rrkit.server import FakeServer
from rrkit.tools.validate import validate_cassette

from ..server.faultclient import Serve, post_sse, ws_connect, ws_request

METADATA = side_frame(ev.METADATA, headers={"x-codex-turn-state": "ts-1"}, metadata={"region": "eu"})
LIMITS = side_frame(
    ev.RATE_LIMITS,
    before=3,
    primary={"used_percent": 42.5, "window_minutes": 300, "resets_at": 1767225600},
)
LAST = side_frame(ev.CODEX_METADATA, before=8, headers={"x-models-etag": "m3"})  # before response.completed
SCRIPT = Script(default=reply("Hello there.", frames=[METADATA, LIMITS, LAST]))


def events_over(server: FakeServer, transport: Transport) -> list[dict[str, Any]]:
    if transport == "http":
        return post_sse(server).events
    with ws_connect(server) as websocket:
        return ws_request(websocket).events


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_frames_go_before_the_response_event_they_name_over_both_transports(serve: Serve, transport: str) -> None:
    events = events_over(serve(SCRIPT), transport)  # type: ignore[arg-type]
    types = [event["type"] for event in events]
    assert types[0] == ev.METADATA and events[0] == METADATA.frame
    response = [event for event in events if event["type"] not in ev.SIDE_CHANNELS]
    assert events[types.index(ev.RATE_LIMITS) + 1] is response[3]  # before response event 3
    assert types[-2:] == [ev.CODEX_METADATA, ev.COMPLETED]
    assert check_order(events) == []  # side channels are no response events: numbering and order hold


def test_a_frame_past_the_last_event_goes_after_it(serve: Serve) -> None:
    after = side_frame(ev.CODEX_METADATA, before=99, headers={"x-models-etag": "m3"})
    server = serve(Script(default=reply("Hi.", frames=[after])))
    with httpx.Client(timeout=10) as client:
        body = client.post(server.http_url + "/responses", json={"model": "m", "input": "Hi", "stream": True}).text
    assert body.rstrip().endswith('data: {"type":"codex.response.metadata","headers":{"x-models-etag":"m3"}}')


def test_the_sdk_streams_a_reply_with_frames_after_response_created_to_its_end(serve: Serve) -> None:
    # The SDK's stream helper refuses any event before response.created ("Expected to have received
    # `response.created` before ..."): frames it reads go after it.
    frames = [METADATA.model_copy(update={"before": 1}), LIMITS, LAST]
    server = serve(Script(default=reply("Hello there.", frames=frames)))
    client = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0)
    with client.responses.stream(model="gpt-test", input="Hi") as stream:
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == "Hello there."


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_frames_are_recorded_and_replayed_as_sent_and_the_cassette_validates_clean(
    serve: Serve, transport: str
) -> None:
    server = serve(SCRIPT)
    first = events_over(server, transport)  # type: ignore[arg-type]
    cassette = cassette_from_capture(server.settle().exchanges, server.connections)
    assert validate_cassette(cassette) == []
    with serve.running(source=CassetteSource(cassette)) as replay:
        again = events_over(replay, transport)  # type: ignore[arg-type]
    frames = [event for event in first if event["type"] in ev.SIDE_CHANNELS]
    assert [event for event in again if event["type"] in ev.SIDE_CHANNELS] == frames and len(frames) == 3


def test_a_frame_type_that_is_no_side_channel_is_refused_at_load_with_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "frames.yaml"
    path.write_text("name: frames\ndefault:\n  output: [{text: hi}]\n  frames:\n    - type: response.metdata\n")
    with pytest.raises(Exception) as raised:
        load_script(path)
    message = str(raised.value)
    assert str(path) in message and "line 5" in message and "default.frames[0].type" in message
    assert "did you mean 'response.metadata'" in message


def test_a_frame_in_yaml_is_the_same_as_from_the_builder(tmp_path: Path) -> None:
    path = tmp_path / "frames.yaml"
    path.write_text(
        "name: frames\ndefault:\n  output: [{text: hi}]\n  frames:\n"
        "    - {type: codex.rate_limits, before: 3, primary: {used_percent: 42.5}}\n"
    )
    (frame,) = load_script(path).default.frames  # type: ignore[union-attr]
    assert frame == side_frame(ev.RATE_LIMITS, before=3, primary={"used_percent": 42.5})
    assert frame.frame == {"type": ev.RATE_LIMITS, "primary": {"used_percent": 42.5}}

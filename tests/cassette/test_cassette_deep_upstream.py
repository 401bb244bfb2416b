"""JSON from a hostile upstream nested 100,000 deep is read by the one JSON reader, never recursively: an SSE event
or a WebSocket frame that deep cuts the client's stream and is recorded as a dropped exchange (the events before it
kept), an error body that deep reaches the client as an error; the server goes on serving, no traceback. A cassette
holding an event that deep is refused by `rrkit show` and `rrkit replay`, naming the file and place."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from rrkit.cassette.proxy import RecordingProxy
from rrkit.cli import main as cli
from rrkit.protocol import OutcomeKind
from rrkit.protocol.events import UNPARSABLE
from rrkit.protocol.jsontext import PEER_DEPTH, UnsafeJSON, parse_peer_json
from rrkit.protocol.sse import SSEMessage
from rrkit.protocol.wire_events import event_of_wire, verbatim

from ..errortrap import Serve
from .rawupstream import RawUpstream, sse, whole

BODY = {"model": "m", "input": "hi", "stream": True}
DEEP = '{"type": "response.output_text.delta", "delta": ' + "[" * 100_000 + "]" * 100_000 + "}"
CREATED = json.dumps({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})
COMPLETED = json.dumps({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}})


def frame(data: str) -> bytes:
    return b"event: message\n" + b"".join(b"data: " + line.encode() + b"\n" for line in data.split("\n")) + b"\n"


@pytest.mark.hostile
@pytest.mark.parametrize("deep", [DEEP, DEEP.replace(", ", ",\n")], ids=["one-line", "spanning-lines"])
def test_an_sse_event_nested_100000_deep_cuts_the_stream_and_is_recorded_dropped(serve: Serve, deep: str) -> None:
    upstream = RawUpstream(sse(frame(CREATED), frame(deep), frame(COMPLETED)))
    with upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        seen = []
        with (
            httpx.Client(timeout=60, trust_env=False) as client,
            client.stream("POST", proxy.http_url + "/responses", json=BODY) as answer,
        ):
            assert answer.status_code == 200
            with pytest.raises(httpx.RemoteProtocolError):  # the body ends without its final chunk: a cut
                for line in answer.iter_lines():
                    seen.append(line)
        proxy.settle()
        (exchange,) = proxy.exchanges
        assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.DROPPED
        assert [event.event["type"] for event in exchange.events] == ["response.created"]
        assert any("response.created" in line for line in seen) and not any("completed" in line for line in seen)
        with httpx.Client(timeout=60, trust_env=False) as client:  # the proxy still serves
            upstream.handler = sse(frame(CREATED), frame(COMPLETED))
            assert "response.completed" in client.post(proxy.http_url + "/responses", json=BODY).text


@pytest.mark.hostile
def test_a_websocket_frame_nested_100000_deep_cuts_the_stream_and_is_recorded_dropped(serve: Serve) -> None:
    upstream = RawUpstream(on_frame=lambda text: [CREATED, DEEP, COMPLETED])
    with upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with connect(proxy.responses_ws_url, proxy=None, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "response.create", **BODY}))
            seen = [json.loads(ws.recv(timeout=60))["type"]]
            with pytest.raises(ConnectionClosed):  # cut where the deep frame came: nothing more, never completed
                seen.append(ws.recv(timeout=60))
        proxy.settle()
        assert seen == ["response.created"]
        (exchange,) = proxy.exchanges
        assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.DROPPED


@pytest.mark.hostile
def test_an_error_body_nested_100000_deep_reaches_the_client_as_an_error(serve: Serve) -> None:
    deep = b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    upstream = RawUpstream(whole(400, deep, "application/json"))
    with upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(upstream)
        serve.guard(proxy)
        with httpx.Client(timeout=60, trust_env=False) as client:
            answer = client.post(proxy.http_url + "/responses", json={**BODY, "stream": False})
        proxy.settle()
        (exchange,) = proxy.exchanges
    assert answer.status_code == 400 and answer.content == deep  # passed on as it came
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.REFUSED


@pytest.mark.hostile
def test_json_from_a_peer_is_read_as_sent_but_never_deeper_than_its_bound() -> None:
    assert parse_peer_json('{"x": NaN, "big": 1' + "0" * 30 + "}", what="event")["big"] == 10**30
    assert parse_peer_json("[" * PEER_DEPTH + "]" * PEER_DEPTH, what="event") == parse_peer_json(
        "[" * PEER_DEPTH + "]" * PEER_DEPTH, what="event"
    )
    with pytest.raises(UnsafeJSON, match=f"The SSE event nests arrays and objects deeper than {PEER_DEPTH} levels"):
        SSEMessage(DEEP).json()
    with pytest.raises(UnsafeJSON, match="The body is not valid JSON"):
        parse_peer_json(b"<html>", what="body")


def deep_cassette(tmp_path: Path, depth: int) -> Path:
    """The example cassette with one event holding lists nested `depth` deep."""
    cassette = json.loads((Path(__file__).parents[2] / "cassettes" / "example.http.json").read_text("utf-8"))
    exchange = cassette["exchanges"][0]
    exchange["events"].insert(1, {"at": 0.0, "event": {"type": "response.in_progress", "deep": "DEEP"}})
    exchange["outcome"]["events_sent"] += 1
    path = tmp_path / "deep.http.json"
    path.write_text(json.dumps(cassette).replace('"DEEP"', "[" * depth + "]" * depth), encoding="utf-8")
    return path


@pytest.mark.hostile
@pytest.mark.parametrize("command", ["show", "replay"])
def test_a_cassette_holding_an_event_nested_100000_deep_is_refused_naming_the_file(
    tmp_path: Path, command: str
) -> None:
    path = deep_cassette(tmp_path, 100_000)
    result = CliRunner().invoke(cli, [command, str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: {path}: line 1, column ") and "invalid JSON" in result.output


@pytest.mark.hostile
@pytest.mark.parametrize("depth", [300, 1_000])
def test_a_cassette_event_deeper_than_orjson_writes_back_is_replayed_as_unreadable_not_a_traceback(
    tmp_path: Path, depth: int
) -> None:
    """Nested 256 to 1,024 levels deep, an event loads (orjson reads it) but cannot be written back: read as an
    event it is an unreadable one, as any other the relay cannot read."""
    path = deep_cassette(tmp_path, depth)
    result = CliRunner().invoke(cli, ["replay", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    deep = '{"type":"response.in_progress","deep":' + "[" * depth + "]" * depth + "}"
    assert event_of_wire(deep)["type"] == UNPARSABLE
    with pytest.raises(ValueError, match="deeper than"):
        verbatim(deep, "ws")

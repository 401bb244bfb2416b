"""Record modes (vcrpy's names and meanings), each served by the fake server with a script as upstream."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from rrkit.cassette import CassetteError, load_cassette
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.recordmode import RecordMode, parse_record_mode
from rrkit.script import Script, reply
from rrkit.server import FakeServer

from ..errortrap import Serve


def upstream(label: str) -> Script:
    return Script(default=reply(f"{label} answer"))


def ask(server: FakeServer, question: str) -> httpx.Response:
    return httpx.post(server.http_url + "/responses", json={"model": "m", "input": question, "stream": True})


def run(serve: Serve, deck: CassetteDeck, *questions: str) -> tuple[list[int], list[str]]:
    """Serve the deck, ask the questions, save; return the statuses and the answer texts seen."""
    with serve.running(source=deck.source()) as server:
        responses = [ask(server, question) for question in questions]
        server.settle()
        deck.save(server.exchanges, server.connections)
    texts = []
    for response in responses:
        texts.append(next((line for line in response.text.splitlines() if '"response.output_text.done"' in line), ""))
    return [response.status_code for response in responses], texts


def recorded_inputs(path: Path) -> list[object]:
    return [exchange.wire_request["input"] for exchange in load_cassette(path).exchanges if exchange.wire_request]


def test_once_records_a_missing_cassette_then_only_replays(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "once.json"
    statuses, texts = run(serve, CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first")), "a", "b")
    assert statuses == [200, 200] and "first answer" in texts[0]
    assert recorded_inputs(path) == ["a", "b"]
    deck = CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("second"))
    assert not deck.records
    statuses, texts = run(serve, deck, "a", "c")
    assert statuses == [200, 400]  # "c" was never recorded, and once-with-a-cassette does not record
    assert "first answer" in texts[0]
    assert recorded_inputs(path) == ["a", "b"]


def test_none_replays_and_refuses_unrecorded_requests(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "none.json"
    run(serve, CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first")), "a")
    statuses, texts = run(serve, CassetteDeck.open(path, RecordMode.NONE), "a", "z")
    assert statuses == [200, 400] and "first answer" in texts[0]
    assert recorded_inputs(path) == ["a"]


def test_none_without_a_cassette_says_how_to_record_it(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"record mode 'none' only replays.*'once'"):
        CassetteDeck.open(tmp_path / "missing.json", RecordMode.NONE)


def test_new_episodes_replays_matches_and_records_the_rest(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "episodes.json"
    run(serve, CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first")), "a")
    statuses, texts = run(
        serve, CassetteDeck.open(path, RecordMode.NEW_EPISODES, upstream=upstream("second")), "a", "b"
    )
    assert statuses == [200, 200]
    assert "first answer" in texts[0] and "second answer" in texts[1]
    cassette = load_cassette(path)
    assert [exchange.id for exchange in cassette.exchanges] == [0, 1]
    assert recorded_inputs(path) == ["a", "b"]


def test_all_records_everything_again_and_keeps_what_was_recorded(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "all.json"
    run(serve, CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first")), "a")
    statuses, texts = run(serve, CassetteDeck.open(path, RecordMode.ALL, upstream=upstream("second")), "a")
    assert statuses == [200] and "second answer" in texts[0]
    assert recorded_inputs(path) == ["a", "a"]


def test_rewrite_starts_the_cassette_afresh(serve: Serve, tmp_path: Path) -> None:
    path = tmp_path / "rewrite.json"
    run(serve, CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first")), "a", "b")
    statuses, texts = run(serve, CassetteDeck.open(path, RecordMode.REWRITE, upstream=upstream("second")), "c")
    assert statuses == [200] and "second answer" in texts[0]
    assert recorded_inputs(path) == ["c"]


def test_recording_modes_need_an_upstream(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="needs an upstream"):
        CassetteDeck.open(tmp_path / "x.json", RecordMode.ALL)


def test_a_deck_reads_its_cassette_when_opened_never_when_constructed(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    assert CassetteDeck(path, RecordMode.ONCE, None, upstream=upstream("first")).records  # told what it holds
    with pytest.raises(CassetteError, match=r"broken\.json: line 1, column 2: invalid JSON"):
        CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first"))
    assert CassetteDeck.open(path, "rewrite", upstream=upstream("first")).existing is None  # starts afresh unread


def test_invalid_record_mode_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="invalid record mode 'sometimes'; valid modes are: none, once, new_episodes"):
        parse_record_mode("sometimes")


def websocket_turns(server: FakeServer, *questions: str) -> list[dict[str, object]]:
    """One socket: a full request for the first question, then a delta on the previous response per question;
    returns each response's terminal event."""
    import json

    from websockets.sync.client import connect

    ends: list[dict[str, object]] = []
    previous = None
    with connect(server.responses_ws_url) as ws:
        for question in questions:
            frame: dict[str, object] = {"type": "response.create", "model": "m", "input": [question_item(question)]}
            if previous:
                frame["previous_response_id"] = previous
            ws.send(json.dumps(frame))
            while (event := json.loads(ws.recv(timeout=5)))["type"] not in ("response.completed", "error"):
                pass
            ends.append(event)
            previous = event.get("response", {}).get("id")  # type: ignore[union-attr]
    return ends


def question_item(question: str) -> dict[str, str]:
    return {"type": "message", "role": "user", "content": question}


def test_new_episodes_over_websocket_records_the_delta_on_its_recorded_connection_with_recorded_ids(
    serve: Serve,
    tmp_path: Path,
) -> None:
    path = tmp_path / "ws.json"
    first = CassetteDeck.open(path, RecordMode.ONCE, upstream=upstream("first"))
    with serve.running(source=first.source()) as server:
        websocket_turns(server, "q1")
        server.settle()
        first.save(server.exchanges, server.connections)
    recorded_id = load_cassette(path).exchanges[0].response_id

    more = CassetteDeck.open(path, RecordMode.NEW_EPISODES, upstream=upstream("new"))
    with serve.running(source=more.source()) as server:
        ends = websocket_turns(server, "q1", "q2")
        server.settle()
        more.save(server.exchanges, server.connections)
    assert [end["type"] for end in ends] == ["response.completed"] * 2

    cassette = load_cassette(path)
    assert [c.id for c in cassette.connections] == [0], "the delta was put on a made-up connection"
    delta = cassette.exchanges[1]
    assert delta.connection == 0
    assert delta.wire_request is not None and delta.wire_request["previous_response_id"] == recorded_id
    assert delta.logical_request is not None
    assert [item.get("content") for item in delta.logical_request["input"]][::2] == ["q1", "q2"]

    with serve.running(source=CassetteDeck.open(path, RecordMode.NONE).source()) as replay:
        assert [end["type"] for end in websocket_turns(replay, "q1", "q2")] == ["response.completed"] * 2

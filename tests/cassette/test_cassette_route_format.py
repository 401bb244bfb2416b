"""Which route an exchange took, in the cassette format: method, path and route kept on every exchange of another
route than the create (with its query string and a body that is no JSON object); a create, and every exchange of a
cassette written before other routes were recorded, is a `POST /responses` by the fields' absence."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from rrkit.cassette import (
    Cassette,
    CassetteSource,
    RecordedExchange,
    Redactor,
    dump_cassette,
    load_cassette,
    save_cassette,
)
from rrkit.cassette.format import FORMAT_VERSION
from rrkit.drive import ReferenceClient
from rrkit.protocol import OutcomeKind, routes
from rrkit.protocol.outcome import Outcome
from rrkit.tools.replay import replay_cassette

from ..errortrap import Serve

REPO = Path(__file__).resolve().parents[2]
WRITTEN_BEFORE_ROUTES = [REPO / "cassettes" / "tool-loop.http.json", REPO / "cassettes" / "tool-loop.ws.json"]
"""Committed cassettes written before rrkit recorded any route but the create."""
SECRET = "sk-proj-7c21d4e5b6a8c0d2e4f63f9a"


@pytest.mark.parametrize("path", WRITTEN_BEFORE_ROUTES, ids=[path.name for path in WRITTEN_BEFORE_ROUTES])
def test_a_cassette_written_before_routes_loads_every_exchange_as_a_create_and_writes_back_byte_for_byte(
    path: Path,
) -> None:
    text = path.read_text(encoding="utf-8")
    assert '"route"' not in text and '"method"' not in text
    cassette = load_cassette(path)
    assert cassette.rrkit_cassette == FORMAT_VERSION == 1
    assert {(e.method, e.path, e.route) for e in cassette.exchanges} == {("POST", "/responses", routes.CREATE)}
    assert all(exchange.is_create for exchange in cassette.exchanges)
    assert "".join(dump_cassette(cassette)) == text


@pytest.mark.parametrize("path", WRITTEN_BEFORE_ROUTES, ids=[path.name for path in WRITTEN_BEFORE_ROUTES])
def test_a_cassette_written_before_routes_replays_to_the_reference_client_as_recorded(path: Path) -> None:
    result = asyncio.run(replay_cassette(load_cassette(path), ReferenceClient(), path=path))
    assert result.ok, result.report.differences[:3]
    assert result.unplayed == []


def route_exchange(**fields: object) -> RecordedExchange:
    return RecordedExchange.model_validate(
        {
            "id": 1,
            "transport": "http",
            "method": "POST",
            "path": "/responses/resp_1/cancel",
            "route": routes.CANCEL,
            "response_status": 200,
            "response_body": {"content_type": "application/json", "json": {"id": "resp_1", "object": "response"}},
            "outcome": Outcome(OutcomeKind.ANSWERED, status=200).to_dict(),
            **fields,
        }
    )


def test_a_route_exchange_keeps_its_method_path_route_query_and_raw_body_in_the_file_and_a_create_none(
    tmp_path: Path,
) -> None:
    create = RecordedExchange(id=0, transport="http", wire_request={"model": "gpt-test", "input": "hi"})
    other = route_exchange(
        method="DELETE", path="/files/file-1", route=routes.OTHER, query="force=true", raw_body="[1, 2]"
    )
    path = save_cassette(Cassette(exchanges=[create, other]), tmp_path / "routes.json")
    written = path.read_text(encoding="utf-8")
    assert written.count('"route"') == 1 and '"route": "other"' in written
    loaded = load_cassette(path)
    assert [(e.method, e.path, e.route, e.query, e.raw_body) for e in loaded.exchanges] == [
        ("POST", "/responses", routes.CREATE, None, None),
        ("DELETE", "/files/file-1", routes.OTHER, "force=true", "[1, 2]"),
    ]
    assert loaded.exchanges[1].request_line == "DELETE /files/file-1?force=true"


def test_redaction_reaches_the_headers_query_and_bodies_of_every_route_and_replay_still_matches_it(
    serve: Serve,
) -> None:
    exchange = route_exchange(
        method="GET",
        path="/models",
        route=routes.MODELS_LIST,
        query=f"api-key={SECRET}&limit=2",
        request_headers={"authorization": f"Bearer {SECRET}"},
        response_body={"content_type": "text/plain", "text": f"your key is {SECRET}"},
    )
    posted = route_exchange(
        id=2, path="/conversations", route=routes.CONVERSATIONS_CREATE, wire_request={"metadata": {"api_key": SECRET}}
    )
    cassette = Redactor().apply(Cassette(exchanges=[exchange, posted]))
    assert SECRET not in "".join(dump_cassette(cassette))
    assert cassette.exchanges[0].query == "api-key=[REDACTED]&limit=2"

    with serve.running(source=CassetteSource(cassette)) as replay:
        listed = httpx.get(replay.http_url + f"/models?api-key={SECRET}&limit=2", trust_env=False, timeout=10)
        made = httpx.post(
            replay.http_url + "/conversations", json={"metadata": {"api_key": "sk-other"}}, trust_env=False, timeout=10
        )
    assert (listed.status_code, listed.text) == (200, "your key is [REDACTED]")
    assert made.status_code == 200  # a credential in the body is no part of what is matched

"""Every route of the resource through the recording proxy, into the cassette and back out of it offline: the
newest official SDK walks `responses` and `conversations` (and their items) and `models`, first straight against a
fake server, then through a `RecordingProxy` in front of one, then against the cassette alone (`rrkit serve
--cassette`: a `CassetteDeck` in record mode `none`) with no upstream running. Everything is on 127.0.0.1."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from rrkit.cassette import load_cassette
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.normalize import ID_KINDS, Normalizer
from rrkit.cassette.proxy import RecordingProxy
from rrkit.protocol import routes
from rrkit.script import Script
from rrkit.server.runner import LoopbackServer

from ..errortrap import Serve
from .routewalk import BACKGROUND, TERMINAL_STATUSES, strict_sdk

EVERY_ROUTE = {name for _, _, name in routes.ROUTES}
Answers = list[tuple[str, Any]]
ID_WORD = re.compile(rf"\b{ID_KINDS}_[A-Za-z0-9]{{6,}}\b")


def walk(base_url: str) -> Answers:
    """Every method of the SDK's `responses`, `conversations` (and items) and `models` resources, each answer as the
    SDK parsed it (strictly, but for `responses.compact`: the SDK's CompactedResponse admits only assistant
    messages, where the service returns the user's too)."""
    client = strict_sdk(base_url)
    answers: Answers = []

    def note(label: str, value: Any) -> None:
        answers.append((label, value.to_dict() if hasattr(value, "to_dict") else value))

    created = client.responses.create(model="gpt-test", input="Say hello.")
    note("create", created)
    note("retrieve", client.responses.retrieve(created.id))
    note("input_items", [item.to_dict() for item in client.responses.input_items.list(created.id).data])
    note("input_tokens", client.responses.input_tokens.count(model="gpt-test", input="How many tokens is this?"))
    loose = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    history = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}]
    compacted = loose.responses.compact(model="gpt-test", input=history)  # type: ignore[arg-type]
    note("compact", compacted.to_dict(warnings=False))  # its user messages are not the type's

    cancelled = client.responses.create(model="gpt-test", input="Never mind.", background=True)
    note("cancel", client.responses.cancel(cancelled.id))

    background = client.responses.create(model="gpt-test", input="Think in the background.", background=True)
    note("background", background)
    for _ in range(100):
        polled = client.responses.retrieve(background.id)
        note("poll", polled)
        if polled.status in TERMINAL_STATUSES:
            break
        time.sleep(0.02)
    resumed = client.responses.retrieve(background.id, stream=True, starting_after=2)
    note("resume", [event.to_dict() for event in resumed])
    client.responses.delete(background.id)  # the SDK returns nothing
    try:
        client.responses.retrieve(background.id)
    except openai.NotFoundError as error:
        note("retrieve_deleted", (error.status_code, error.body))

    conversation = client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "First."}], metadata={"topic": "routes"}
    )
    note("conversation", conversation)
    note("conversation_retrieve", client.conversations.retrieve(conversation.id))
    note("conversation_update", client.conversations.update(conversation.id, metadata={"topic": "updated"}))
    in_conversation = client.responses.create(model="gpt-test", input="Second.", conversation=conversation.id)
    note("create_in_conversation", in_conversation)
    added = client.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "Third."}]
    )
    note("items_create", added)
    note("items_list", [item.to_dict() for item in client.conversations.items.list(conversation.id, order="asc").data])
    item_id = added.data[0].id
    assert item_id is not None
    note("items_retrieve", client.conversations.items.retrieve(item_id, conversation_id=conversation.id))
    note("items_delete", client.conversations.items.delete(item_id, conversation_id=conversation.id))
    note("conversation_delete", client.conversations.delete(conversation.id))

    note("models", [model.to_dict() for model in client.models.list().data])
    note("model", client.models.retrieve("gpt-test"))
    note("model_delete", client.models.delete("ft:gpt-4o-mini:acemeco:suffix:abc123"))
    return answers


def fresh_ids_aside(answers: Answers) -> Answers:
    """The answers with each fresh id aliased by first use (also inside a message), and timestamps and token counts
    zeroed."""
    normalizer = Normalizer()
    text = json.dumps([(label, normalizer.json(value)) for label, value in answers])
    aliased: list[tuple[str, Any]] = json.loads(ID_WORD.sub(lambda found: normalizer.alias(found.group(0)), text))
    return [(label, value) for label, value in aliased]


def without_repeated_polls(answers: Answers) -> Answers:
    """The statuses a poll saw, each once: how many polls see `in_progress` depends on when they come."""
    kept: Answers = []
    for label, value in answers:
        if label == "poll" and kept and kept[-1][0] == "poll" and kept[-1][1]["status"] == value["status"]:
            continue
        kept.append((label, value))
    return kept


def replaying(serve: Serve, path: Path) -> Any:
    """What `rrkit serve --cassette PATH` runs: the cassette's deck in record mode `none`, guarded."""
    deck = CassetteDeck.open(path, "none")
    return serve.running(source=deck.source())


def test_the_newest_sdk_walks_every_route_through_the_proxy_and_again_offline_from_its_cassette(
    serve: Serve, tmp_path: Path
) -> None:
    with serve.running(Script(default=BACKGROUND)) as direct_server:
        direct = walk(direct_server.http_url)
    cassette_path = tmp_path / "every-route.json"
    with serve.running(Script(default=BACKGROUND)) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        proxied = walk(proxy.http_url)
        cassette = proxy.save(cassette_path)
        upstream.settle()
        relayed = [(exchange.method, exchange.path, exchange.route) for exchange in upstream.exchanges]

    assert without_repeated_polls(fresh_ids_aside(proxied)) == without_repeated_polls(fresh_ids_aside(direct))
    statuses = [value["status"] for label, value in proxied if label == "poll"]
    assert statuses[0] == "queued" and "in_progress" in statuses and statuses[-1] == "completed"
    resumed = dict(proxied)["resume"]
    assert [event["sequence_number"] for event in resumed] == list(range(3, 3 + len(resumed)))
    # every exchange the upstream answered is in the cassette, with its method, path and route
    assert [(e.method, e.path, e.route) for e in cassette.exchanges] == relayed
    assert [(e.method, e.path, e.route) for e in load_cassette(cassette_path).exchanges] == relayed
    assert {route for _, _, route in relayed} == EVERY_ROUTE

    with replaying(serve, cassette_path) as replay:  # the upstream is stopped: nothing but the cassette answers
        replayed = walk(replay.http_url)
        replay.settle()
        assert all(exchange.replayed for exchange in replay.exchanges)
        assert replay.state.source.unplayed() == []
    assert fresh_ids_aside(replayed) == fresh_ids_aside(proxied)


FILE = {
    "id": "file-abc123",
    "object": "file",
    "bytes": 5,
    "created_at": 1_700_000_000,
    "filename": "notes.txt",
    "purpose": "user_data",
    "status": "processed",
}


class FilesUpstream(LoopbackServer):
    """An upstream with a `/v1/files` resource, a path outside the Responses table: it lists, serves and deletes
    one file, and keeps each request's method, path and query string as they arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str, str]] = []

    def app(self) -> ASGIApp:
        async def files(request: Request) -> Response:
            self.seen.append((request.method, request.url.path, request.url.query))
            path = request.url.path
            if request.method == "GET" and path == "/v1/files":
                page = {"object": "list", "data": [FILE], "first_id": FILE["id"], "last_id": FILE["id"]}
                return JSONResponse({**page, "has_more": False})
            if request.method == "GET" and path == "/v1/files/file-abc123/content":
                return Response(b"notes", media_type="application/octet-stream")
            if request.method == "DELETE" and path == "/v1/files/file-abc123":
                return JSONResponse({"id": FILE["id"], "object": "file", "deleted": True})
            return JSONResponse({"error": {"message": "No such file.", "type": "invalid_request_error"}}, 404)

        return Starlette(routes=[Route("/v1/{path:path}", files, methods=["GET", "DELETE"])])


def files_walk(base_url: str) -> Answers:
    client = strict_sdk(base_url)
    listed = client.files.list(purpose="user_data")
    return [
        ("list", [file.to_dict() for file in listed.data]),
        ("content", client.files.content("file-abc123").read()),
        ("delete", client.files.delete("file-abc123").to_dict()),
    ]


def test_a_path_outside_the_table_is_relayed_as_it_came_and_replayed_offline(serve: Serve, tmp_path: Path) -> None:
    cassette_path = tmp_path / "files.json"
    with FilesUpstream() as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        direct = files_walk(upstream.http_url)
        proxied = files_walk(proxy.http_url)
        cassette = proxy.save(cassette_path)
        seen = list(upstream.seen)

    assert proxied == direct
    assert seen[-3:] == seen[:3]  # the proxy sent what the SDK sends: method, path and query string
    assert [(e.method, e.path, e.route, e.query) for e in cassette.exchanges] == [
        ("GET", "/files", routes.OTHER, "purpose=user_data"),
        ("GET", "/files/file-abc123/content", routes.OTHER, None),
        ("DELETE", "/files/file-abc123", routes.OTHER, None),
    ]
    assert cassette.exchanges[1].response_body is not None
    assert cassette.exchanges[1].response_body.content == b"notes"

    with replaying(serve, cassette_path) as replay:
        assert files_walk(replay.http_url) == proxied
        missing = httpx.get(replay.http_url + "/files?purpose=batch", timeout=10)
    assert missing.status_code == 400
    message = missing.json()["error"]["message"]
    assert "GET /files?purpose=batch (other)" in message
    assert "recorded exchange 0 (GET /files?purpose=user_data, other)" in message
    assert "failed: query" in message


def test_replayed_polls_answer_in_recorded_order_and_a_poll_too_many_names_the_route_it_missed(
    serve: Serve, tmp_path: Path
) -> None:
    cassette_path = tmp_path / "polls.json"
    with serve.running(Script(default=BACKGROUND)) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        client = strict_sdk(proxy.http_url)
        created = client.responses.create(model="gpt-test", input="Poll me.", background=True)
        recorded = [client.responses.retrieve(created.id).status for _ in range(3)]
        proxy.save(cassette_path)
    assert recorded == ["queued", "in_progress", "completed"]

    with replaying(serve, cassette_path) as replay:
        client = strict_sdk(replay.http_url)
        again = client.responses.create(model="gpt-test", input="Poll me.", background=True)
        assert again.id != created.id  # a replay issues its own ids, and reads them back as the recorded ones
        assert [client.responses.retrieve(again.id).status for _ in range(3)] == recorded
        with pytest.raises(openai.BadRequestError) as refused:
            client.responses.retrieve(again.id)
    message = str(refused.value.body)
    assert f"GET /responses/{again.id} (responses.retrieve)" in message
    assert "already replayed" in message


def test_a_deck_in_new_episodes_replays_the_routes_it_holds_and_records_the_new_ones(
    serve: Serve, tmp_path: Path
) -> None:
    cassette_path = tmp_path / "episodes.json"
    with serve.running(Script(default=BACKGROUND)) as upstream:
        deck = CassetteDeck.open(cassette_path, "once", upstream=RecordingProxy(upstream.http_url).upstream)
        with serve.running(source=deck.source()) as first:
            strict_sdk(first.http_url).models.list()
            first.settle()
            deck.save(first.exchanges, first.connections)
        deck = CassetteDeck.open(cassette_path, "new_episodes", upstream=RecordingProxy(upstream.http_url).upstream)
        with serve.running(source=deck.source()) as second:
            client = strict_sdk(second.http_url)
            client.models.list()  # replayed
            client.models.retrieve("gpt-test")  # recorded
            second.settle()
            replayed = [exchange.replayed for exchange in second.exchanges]
            deck.save(second.exchanges, second.connections)
        relayed = [exchange.route for exchange in upstream.exchanges]

    assert replayed == [True, False]
    assert relayed == [routes.MODELS_LIST, routes.MODELS_RETRIEVE]
    assert [e.route for e in load_cassette(cassette_path).exchanges] == [routes.MODELS_LIST, routes.MODELS_RETRIEVE]

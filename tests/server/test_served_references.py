"""Every body and every event `rrkit serve` sends, on its defaults and with every shipped fixture, over SSE and
WebSocket, on every route, holds under three references others wrote: the OpenAPI description, the OpenResponses
models and the newest official SDK's types, strictly (tests/server/three_references.py says what each leaves out);
and each reference refuses a copy with one required field removed."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus

from rrkit.protocol import routes
from rrkit.references import BODY_SCHEMAS, BodyKind, route_kind
from rrkit.script import Script, load_script
from rrkit.script.shipped import shipped_fixtures
from rrkit.server import FakeServer

from ..errortrap import Serve
from .faultclient import BODY, WAIT, loopback_client, post_sse, ws_connect, ws_request
from .three_references import (
    Transport,
    openapi_body,
    openapi_event,
    openresponses_event,
    openresponses_response,
    sdk_body,
    sdk_event,
)

REQUESTS_PER_FIXTURE = 3
"""Requests sent per fixture and transport: enough to reach each fixture's later replies (a retry's, a repeat's)."""
QUIET = 1.0
"""How long a read waits on a stream that stalls on purpose (the `stall` fixture) before taking what came."""
FUNCTION_TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
REQUEST = {**BODY, "tools": [FUNCTION_TOOL], "metadata": {"suite": "references"}, "temperature": 0.5}


UNTYPED_ROUTES = {
    routes.DELETE: "the spec documents its 200 with no schema, and the SDKs discard the body (`responses.delete` "
    "returns None); rrkit answers `{id, object: response, deleted: true}` as the service does",
}
"""Routes whose 2xx body no reference types, each with its reason."""


@dataclass
class Served:
    """Everything one server sent: events by transport, JSON bodies by kind (2xx) and error bodies."""

    events: list[tuple[Transport, str, dict[str, Any]]] = field(default_factory=list)
    bodies: list[tuple[BodyKind, str, Any]] = field(default_factory=list)

    def add_body(self, where: str, route: str, response: httpx.Response) -> None:
        body = response.json()
        if response.status_code >= 400:
            self.bodies.append(("error", f"{where} {response.status_code}", body["error"]))
            return
        kind = route_kind(route)
        if kind is None:
            assert route in UNTYPED_ROUTES, f"{where}: no schema for the route {route}"
            return
        self.bodies.append((kind, where, body))


def _streams(server: FakeServer, served: Served, label: str, read: float) -> None:
    for _ in range(REQUESTS_PER_FIXTURE):
        result = post_sse(server, REQUEST, read_timeout=read)
        if result.json is not None:
            served.bodies.append(("error", f"{label} http {result.status}", result.json["error"]))
        served.events += [("http", label, event) for event in result.events]
        try:
            with ws_connect(server) as websocket:
                answer = ws_request(websocket, REQUEST, timeout=read)
        except InvalidStatus as refused:  # an upgrade refused on purpose (426, 503): the API's error body
            status = refused.response.status_code
            served.bodies.append(("error", f"{label} ws {status}", json.loads(refused.response.body)["error"]))
            continue
        served.events += [("ws", label, event) for event in answer.events]


def _walk_routes(server: FakeServer, served: Served) -> None:
    """Every route of the resource once, the way the SDKs call them, plus the refusals a user meets first."""
    with loopback_client(httpx.Timeout(WAIT)) as client:
        base = server.http_url

        def call(method: str, path: str, route: str, **options: Any) -> Any:
            response = client.request(method, base + path, **options)
            served.add_body(f"{method} {path}", route, response)
            return response.json()

        created = call("POST", "/responses", routes.CREATE, json={**REQUEST, "stream": False})
        rid = created["id"]
        call("GET", f"/responses/{rid}", routes.RETRIEVE)
        call("GET", f"/responses/{rid}/input_items", routes.INPUT_ITEMS)
        call("POST", "/responses", routes.CREATE, json={**REQUEST, "stream": False, "previous_response_id": rid})
        call("POST", "/responses/input_tokens", routes.INPUT_TOKENS, json={"model": "gpt-test", "input": "hi"})
        compact = {"model": "gpt-test", "input": [{"role": "user", "content": "a"}]}
        call("POST", "/responses/compact", routes.COMPACT, json=compact)
        background = call("POST", "/responses", routes.CREATE, json={**REQUEST, "stream": False, "background": True})
        call("POST", f"/responses/{background['id']}/cancel", routes.CANCEL)
        call("GET", f"/responses/{background['id']}", routes.RETRIEVE)
        resumed = post_sse(server, {**REQUEST, "background": True})
        served.events += [("http", "background stream", event) for event in resumed.events]
        with client.stream("GET", f"{base}/responses/{resumed.events[0]['response']['id']}?stream=true") as again:
            lines = [line.removeprefix("data: ") for line in again.iter_lines() if line.startswith("data: {")]
        served.events += [("http", "resumed stream", json.loads(line)) for line in lines]
        conversation = call(
            "POST", "/conversations", routes.CONVERSATIONS_CREATE, json={"items": [{"role": "user", "content": "x"}]}
        )
        cid = conversation["id"]
        call("GET", f"/conversations/{cid}", routes.CONVERSATIONS_RETRIEVE)
        call("POST", f"/conversations/{cid}", routes.CONVERSATIONS_UPDATE, json={"metadata": {"k": "v"}})
        call(
            "POST",
            f"/conversations/{cid}/items",
            routes.ITEMS_CREATE,
            json={"items": [{"role": "user", "content": "y"}]},
        )
        call("POST", "/responses", routes.CREATE, json={**REQUEST, "stream": False, "conversation": cid})
        items = call("GET", f"/conversations/{cid}/items", routes.ITEMS_LIST)
        for item in items["data"]:
            call("GET", f"/conversations/{cid}/items/{item['id']}", routes.ITEMS_RETRIEVE)
        call("DELETE", f"/conversations/{cid}/items/{items['data'][0]['id']}", routes.ITEMS_DELETE)
        call("DELETE", f"/conversations/{cid}", routes.CONVERSATIONS_DELETE)
        call("GET", "/models", routes.MODELS_LIST)
        call("GET", "/models/gpt-test", routes.MODELS_RETRIEVE)
        call("DELETE", "/models/ft:gpt-4o-mini:acemeco:suffix:abc123", routes.MODELS_DELETE)
        call("DELETE", f"/responses/{rid}", routes.DELETE)
        call("GET", f"/responses/{rid}", routes.RETRIEVE)  # 404 now
        call("POST", "/responses", routes.CREATE, json={"model": "gpt-test", "input": 3})  # 400
        call("GET", "/nowhere/a%0Ab", routes.RETRIEVE)  # an unknown path: 404, JSON


def _served(serve: Serve, script: Script | None, label: str) -> Served:
    served = Served()
    server = serve(script)
    _streams(server, served, label, QUIET if label == "stall" else WAIT)
    if script is None:
        _walk_routes(server, served)
    return served


def _scripts() -> Iterator[tuple[str, Script | None]]:
    yield "defaults", None
    for name, path in shipped_fixtures().items():
        yield name, load_script(path)


SCRIPTS = dict(_scripts())


def _event_problems(transport: Transport, event: dict[str, Any]) -> dict[str, list[str]]:
    found = {"openapi": openapi_event(event), "openresponses": openresponses_event(event, transport) or []}
    found["sdk"] = sdk_event(event, transport) or []
    if isinstance(event.get("response"), dict):
        found["openresponses"] += openresponses_response(event["response"])
    return {reference: problems for reference, problems in found.items() if problems}


def _body_problems(kind: BodyKind, body: Any) -> dict[str, list[str]]:
    found = {"openapi": openapi_body(kind, body), "sdk": sdk_body(kind, body) or []}
    if kind == "response":
        found["openresponses"] = openresponses_response(body)
    return {reference: problems for reference, problems in found.items() if problems}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_everything_served_holds_under_the_three_references(serve: Serve, name: str) -> None:
    served = _served(serve, SCRIPTS[name], name)
    assert served.events, f"{name}: nothing was served"
    broken = [
        f"{transport} {label} event {event.get('type')}: {problems}"
        for transport, label, event in served.events
        if (problems := _event_problems(transport, event))
    ]
    broken += [
        f"{where} ({kind}): {problems}"
        for kind, where, body in served.bodies
        if (problems := _body_problems(kind, body))
    ]
    assert not broken, "\n".join(broken[:20])


def test_the_route_walk_reaches_every_route_and_both_transports(serve: Serve) -> None:
    served = _served(serve, None, "defaults")
    assert {transport for transport, _, _ in served.events} == {"http", "ws"}
    kinds = {kind for kind, _, _ in served.bodies}
    assert kinds >= set(BODY_SCHEMAS)


# -- each reference refuses what it should ------------------------------------------------------------------------


def _completed(serve: Serve) -> dict[str, Any]:
    events = post_sse(serve(), REQUEST).events
    assert events[-1]["type"] == "response.completed"
    return events[-1]


@pytest.mark.parametrize(
    ("reference", "removed"),
    [("openapi", "temperature"), ("openresponses", "temperature"), ("openapi", "created_at"), ("sdk", "created_at")],
)
def test_a_reference_refuses_a_response_with_a_required_field_removed(
    serve: Serve, reference: str, removed: str
) -> None:
    completed = _completed(serve)
    assert _event_problems("http", completed) == {}
    broken = copy.deepcopy(completed)
    del broken["response"][removed]
    problems = _event_problems("http", broken).get(reference, [])
    assert any(removed in problem for problem in problems), problems
    body_problems = _body_problems("response", broken["response"]).get(reference, [])
    assert any(removed in problem for problem in body_problems), body_problems


def test_a_reference_refuses_a_wrong_typed_field_in_a_streamed_event(serve: Serve) -> None:
    completed = _completed(serve)
    broken = copy.deepcopy(completed)
    broken["response"]["usage"]["total_tokens"] = "three"
    problems = _event_problems("http", broken)
    assert set(problems) == {"openapi", "openresponses", "sdk"}, problems
    assert all(any("total_tokens" in problem for problem in found) for found in problems.values()), problems

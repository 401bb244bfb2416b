"""Server contracts over whole conversations: rebuilt logical requests, many events on one socket, async use."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

import rrkit.protocol.encoded_runs as encoded_runs
import rrkit.protocol.wire_events as wire_events
from rrkit.protocol import IdGenerator, ResponseEvents, SSEDecoder, done_items, iter_events, response_create
from rrkit.protocol.incremental import Incremental
from rrkit.script import Script, function_call, reply, text
from rrkit.script.reply_plan import plan_reply

from ..errortrap import Serve

BASE: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "Be brief.",
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "stream": True,
    "store": False,
}
USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}


def tool_script() -> Script:
    return Script().queue(
        reply(function_call("get_weather", {"city": "Paris"}, call_id="call_1", chunks=2)),
        reply(text("Sunny.", chunks=2)),
    )


def ws_events(ws: Any) -> list[dict[str, Any]]:
    events = []
    while True:
        event = json.loads(ws.recv(timeout=5))
        events.append(event)
        if event["type"] in ("response.completed", "response.failed", "response.incomplete", "error"):
            return events


def sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    return iter_events(decoder.feed(response.content))


def test_incremental_websocket_request_rebuilds_the_full_http_request(serve: Serve) -> None:
    tool_output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21C"}
    with serve.running(tool_script()) as server, connect(server.responses_ws_url) as ws:
        ws.send(json.dumps(response_create({**BASE, "input": [USER]})))
        first = ws_events(ws)
        calls = done_items(first)
        response_id = first[-1]["response"]["id"]
        delta = Incremental(response_id, [tool_output])
        ws.send(json.dumps(response_create({**BASE, "input": [USER, *calls, tool_output]}, delta)))
        assert ws_events(ws)[-1]["type"] == "response.completed"
        ws_logical = server.exchanges[1].logical_request
        assert server.exchanges[1].wire_request is not None
        assert server.exchanges[1].wire_request["input"] == [tool_output]

    # The same conversation over HTTP sends the full request every time.
    with serve.running(tool_script()) as server, httpx.Client(base_url=server.http_url) as client:
        first_http = sse_events(client.post("/responses", json={**BASE, "input": [USER]}))
        http_calls = done_items(first_http)
        full = {**BASE, "input": [USER, *http_calls, tool_output]}
        assert sse_events(client.post("/responses", json=full))[-1]["type"] == "response.completed"
        assert server.exchanges[1].logical_request == full

    # Ids differ between the two servers; the items are otherwise the same.
    assert [item["call_id"] for item in http_calls] == [item["call_id"] for item in calls]
    normalized = {**full, "input": [USER, *calls, tool_output]}
    assert ws_logical == normalized


def test_completed_response_chain_rebuilds_across_three_requests(serve: Serve) -> None:
    script = Script().queue(reply("one"), reply("two"), reply("three"))
    second_user = {**USER, "content": [{"type": "input_text", "text": "And Rome?"}]}
    with serve.running(script) as server, connect(server.responses_ws_url) as ws:
        ws.send(json.dumps(response_create({**BASE, "input": [USER]})))
        first = ws_events(ws)
        delta = Incremental(first[-1]["response"]["id"], [second_user])
        ws.send(json.dumps(response_create({**BASE, "input": []}, delta)))
        second = ws_events(ws)
        delta = Incremental(second[-1]["response"]["id"], [])
        ws.send(json.dumps(response_create({**BASE, "input": []}, delta)))
        ws_events(ws)
        third = server.exchanges[2].logical_request
    assert third is not None
    assert third["input"] == [USER, *done_items(first), second_user, *done_items(second)]


def test_ten_thousand_events_stream_over_one_socket(serve: Serve) -> None:
    script = Script(default=reply(text("x" * 10_000, chunks=10_000)))
    with serve.running(script) as server, connect(server.responses_ws_url, max_size=None) as ws:
        ws.send(json.dumps(response_create({**BASE, "input": [USER]})))
        events = ws_events(ws)
        server.settle()
    deltas = [event for event in events if event["type"] == "response.output_text.delta"]
    assert len(deltas) == 10_000
    assert events[-1]["type"] == "response.completed"
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert server.exchanges[0].outcome is not None and server.exchanges[0].outcome.events_sent == len(events)


async def test_each_event_is_encoded_once_as_it_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    original = wire_events.encode_json

    def counting(payload: Any) -> bytes:
        nonlocal calls
        calls += 1
        return original(payload)

    def series_counting(self: Any, start: int, stop: int) -> list[str | bytes]:
        nonlocal calls
        wires = series_wires(self, start, stop)
        calls += len(wires)
        return wires

    monkeypatch.setattr(wire_events, "encode_json", counting)
    series_wires = encoded_runs._SeriesWires.wires  # a series of deltas is encoded from one template
    monkeypatch.setattr(encoded_runs._SeriesWires, "wires", series_counting)
    for transport in ("http", "ws"):
        calls = 0
        hello = reply(text("hello world", chunks=5))
        plan = plan_reply(hello, {"model": "m"}, transport=transport, ids=IdGenerator())
        assert calls == 0
        sent = [planned async for run in plan.events for planned in run]
        assert calls == len(sent) == 13


async def test_a_scripted_plan_makes_each_event_only_when_it_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    made = 0
    original = ResponseEvents._emit

    def counting(self: ResponseEvents, type_: str, **fields: Any) -> Any:
        nonlocal made
        made += 1
        return original(self, type_, **fields)

    monkeypatch.setattr(ResponseEvents, "_emit", counting)
    plan = plan_reply(reply(text("x" * 100_000, chunks=100_000)), {"model": "m"}, transport="http", ids=IdGenerator())
    assert plan.response_id.startswith("resp_") and made == 0
    first, *others = await anext(plan.events)
    assert not others  # the first event goes out alone, at once
    assert first.event["type"] == "response.created" and made == 2  # created and in_progress are made together
    await plan.events.aclose()


async def test_server_runs_on_the_current_event_loop(serve: Serve) -> None:
    async with serve.running() as server, httpx.AsyncClient(base_url=server.http_url) as client:
        response = await client.post("/responses", json={"model": "m", "input": "hi", "stream": True})
        assert response.status_code == 200
        assert sse_events(response)[-1]["type"] == "response.completed"
        await server.settle_async()
        assert server.exchanges[0].outcome is not None
        assert server.exchanges[0].outcome.kind == "completed"


def test_captured_exchange_is_readable_while_the_server_runs(serve: Serve) -> None:
    with serve.running(Script(default=reply("hi").delayed(each=0.001))) as server:
        body = {"model": "m", "input": "hi", "stream": True}
        httpx.post(server.http_url + "/responses", json=body, headers={"x-test": "1"})
        exchange = server.settle().exchanges[0]
        assert exchange.transport == "http"
        assert exchange.request_headers["x-test"] == "1"
        assert exchange.wire_request == body
        assert exchange.logical_request == body
        offsets = [sent.at for sent in exchange.events]
        assert offsets == sorted(offsets) and offsets[-1] > 0
        assert exchange.response_headers["content-type"].startswith("text/event-stream")

"""`GET /__rrkit/metrics`: the exchanges by transport and outcome, refusals for a limit, bytes and entries kept per
store, evictions and the budget, in the Prometheus text format (read back with the Prometheus client's own parser);
behind the same guard as every admin call."""

from __future__ import annotations

import gzip
import json

import httpx
from prometheus_client.parser import text_string_to_metric_families
from websockets.sync.client import connect

from rrkit.protocol.limits import Limits
from rrkit.script import Script, reply

from ..errortrap import Serve
from .faultclient import post_sse


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_count_what_the_server_did_and_keeps_in_the_prometheus_text_format(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), keep=100, limits=Limits(body=10_000, decoded_body=50_000))
    assert post_sse(server).status == 200
    with httpx.Client(timeout=30, trust_env=False) as client:
        too_big = {"model": "m", "input": "x" * 20_000, "stream": True}
        assert client.post(server.http_url + "/responses", json=too_big).status_code == 413
        bomb = gzip.compress(json.dumps({**too_big, "input": "x" * 100_000}).encode())  # small as sent, not decoded
        zipped = {"content-encoding": "gzip", "content-type": "application/json"}
        assert client.post(server.http_url + "/responses", content=bomb, headers=zipped).status_code == 413
        with connect(server.responses_ws_url, proxy=None, open_timeout=30) as socket:
            socket.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
            while json.loads(socket.recv(timeout=30))["type"] != "response.completed":
                pass
        server.settle()
        response = client.get(server.admin_url + "/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain; version=0.0.4")
    seen = samples(response.text)
    assert seen["rrkit_exchanges_total", (("outcome", "completed"), ("transport", "http"))] == 1
    assert seen["rrkit_exchanges_total", (("outcome", "refused"), ("transport", "http"))] == 2
    assert seen["rrkit_exchanges_total", (("outcome", "completed"), ("transport", "ws"))] == 1
    assert seen["rrkit_refused_total", (("limit", "body"),)] == 1
    assert seen["rrkit_refused_total", (("limit", "decoded-body"),)] == 1
    assert seen["rrkit_kept_entries", (("store", "exchanges"),)] == 4
    assert seen["rrkit_kept_bytes", (("store", "exchanges"),)] == server.state.capture.kept_bytes > 0
    assert seen["rrkit_kept_entries", (("store", "responses"),)] == 1  # the completed HTTP one
    assert seen["rrkit_evicted_total", (("store", "exchanges"),)] == 0
    assert seen["rrkit_memory_budget_bytes", ()] == Limits().memory
    assert seen["rrkit_connections", ()] == 1


def test_metrics_are_refused_to_a_web_page_like_every_admin_call(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")))
    with httpx.Client(timeout=30, trust_env=False) as client:
        refused = client.get(server.admin_url + "/metrics", headers={"origin": "http://evil.example"})
    assert refused.status_code == 403 and "rrkit_" not in refused.text

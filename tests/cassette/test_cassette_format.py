"""Cassette files: readable, validated with precise errors, written atomically, redacted on both sides."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from rrkit.cassette import Cassette, CassetteError, Redactor, cassette_from_capture, load_cassette, save_cassette
from rrkit.cassette import store as store_module
from rrkit.cassette.redact import MARKER
from rrkit.protocol import response_create
from rrkit.script import Script, reply, text

from ..errortrap import Serve

SECRET = "sk-secret-0123456789abcdef"


def record_small_session(
    serve: Serve, headers: dict[str, str] | None = None, body_extra: dict[str, Any] | None = None
) -> Any:
    script = Script(default=reply(text("Hello there", chunks=3), turn_state="ts-1"))
    with serve.running(script) as server:
        httpx.post(
            server.http_url + "/responses",
            json={"model": "m", "input": "hi", **(body_extra or {})},
            headers=headers or {},
        )
        with connect(server.responses_ws_url, additional_headers=headers or {}) as ws:
            ws.send(json.dumps(response_create({"model": "m", "input": [{"role": "user", "content": "hi"}]})))
            while json.loads(ws.recv(timeout=5))["type"] != "response.completed":
                pass
        server.settle()
        return cassette_from_capture(server.exchanges, server.connections, name="small")


def test_saved_cassette_loads_back_equal(serve: Serve, tmp_path: Path) -> None:
    cassette = record_small_session(serve)
    path = save_cassette(cassette, tmp_path / "small.json")
    loaded = load_cassette(path)
    assert loaded == cassette
    assert [e.event_types for e in loaded.exchanges] == [e.event_types for e in cassette.exchanges]
    assert loaded.exchanges[1].connection == loaded.connections[0].id


def test_cassette_file_keeps_json_readable_with_one_event_per_line(serve: Serve, tmp_path: Path) -> None:
    path = save_cassette(record_small_session(serve), tmp_path / "small.json")
    text_ = path.read_text()
    event_lines = [line for line in text_.splitlines() if line.strip().startswith('{"at":')]
    assert len(event_lines) == sum(len(e.events) for e in load_cassette(path).exchanges)
    # Events are JSON objects on their line, not escaped strings.
    assert all('"event": {"type":' in line for line in event_lines)
    assert '\\"type\\"' not in text_
    # The request bodies are indented JSON.
    assert '"wire_request": {\n' in text_


def test_broken_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "rrkit_cassette": 1,\n  "exchanges": [\n')
    with pytest.raises(CassetteError, match=r"broken\.json: line \d+, column \d+: invalid JSON"):
        load_cassette(path)


def test_invalid_field_names_the_place_inside_the_cassette(serve: Serve, tmp_path: Path) -> None:
    cassette = record_small_session(serve)
    data = json.loads("".join(store_module.dump_cassette(cassette)))
    data["exchanges"][1]["events"][2] = {"at": 0.1, "event": {"no_type": True}}
    data["exchanges"][0]["transport"] = "carrier-pigeon"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    message = str(info.value)
    assert str(path) in message
    assert "exchanges[0].transport" in message
    assert "exchanges[1].events" in message and "[2].event has no string `type`" in message


def test_a_file_that_is_not_a_cassette_is_rejected_clearly(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"interactions": []}')
    with pytest.raises(CassetteError, match="not an rrkit cassette"):
        load_cassette(path)
    with pytest.raises(CassetteError, match="cannot read cassette"):
        load_cassette(tmp_path / "missing.json")


def test_crash_while_writing_leaves_the_previous_cassette_intact(
    serve: Serve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save_cassette(record_small_session(serve), tmp_path / "keep.json")
    before = path.read_bytes()
    original = store_module.dump_cassette

    def crash_midway(cassette: Any) -> Any:
        pieces = original(cassette)
        yield next(pieces)
        yield next(pieces)
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(store_module, "dump_cassette", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        save_cassette(record_small_session(serve), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_secrets_leave_no_trace_in_the_written_file(serve: Serve, tmp_path: Path) -> None:
    headers = {
        "Authorization": f"Bearer {SECRET}",
        "OpenAI-Organization": "org-abcdefgh12345",
        "Cookie": "session=cookie-value-123456",
    }
    cassette = record_small_session(serve, headers, {"metadata": {"note": f"the key is {SECRET}"}})
    path = save_cassette(cassette, tmp_path / "secret.json")
    text_ = path.read_text()
    assert SECRET not in text_
    assert "org-abcdefgh12345" not in text_ and "cookie-value-123456" not in text_
    loaded = load_cassette(path)
    assert loaded.exchanges[0].request_headers["authorization"] == MARKER
    assert loaded.connections[0].handshake.request_headers["authorization"] == MARKER
    assert loaded.exchanges[0].wire_request is not None
    assert loaded.exchanges[0].wire_request["metadata"]["note"] == f"the key is {MARKER}"
    assert loaded.redaction is not None and "authorization" in loaded.redaction.headers


def test_user_given_headers_and_json_paths_are_redacted_with_a_marker(serve: Serve, tmp_path: Path) -> None:
    cassette = record_small_session(
        serve, {"X-Tenant": "tenant-secret-42"}, {"metadata": {"user": "alice@example.com"}}
    )
    redactor = Redactor.with_extra(headers=["x-tenant"], paths=["metadata.user", "response.model"])
    redacted = redactor.apply(cassette)
    text_ = "".join(store_module.dump_cassette(redacted))
    assert "tenant-secret-42" not in text_ and "alice@example.com" not in text_
    assert redacted.exchanges[0].request_headers["x-tenant"] == MARKER
    assert redacted.exchanges[0].wire_request is not None
    assert redacted.exchanges[0].wire_request["metadata"] == {"user": MARKER}
    created = redacted.exchanges[0].events[0].event
    assert created["response"]["model"] == MARKER


def test_response_side_set_cookie_is_redacted(serve: Serve) -> None:
    cassette = record_small_session(serve)
    cassette.exchanges[0].response_headers["set-cookie"] = "sid=server-session-123456; Path=/"
    redacted = Redactor().apply(cassette)
    assert redacted.exchanges[0].response_headers["set-cookie"] == MARKER
    assert "server-session-123456" not in "".join(store_module.dump_cassette(redacted))


def test_a_saved_cassette_gets_the_mode_a_plain_write_would_give(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        fresh = save_cassette(Cassette(), tmp_path / "fresh.json")
        assert fresh.stat().st_mode & 0o777 == 0o644
        os.chmod(fresh, 0o640)
        save_cassette(Cassette(), fresh)
        assert fresh.stat().st_mode & 0o777 == 0o640  # rewriting keeps the file's own mode
    finally:
        os.umask(old)

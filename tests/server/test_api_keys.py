"""`require_key` (`rrkit serve --require-key`, and per session `PUT /__rrkit/key`): a request without the key, or with
another one, gets the service's 401 (its message and code), over HTTP and on the WebSocket upgrade; the official
SDK raises its `AuthenticationError`; the refused request is in the journal; the key given is never echoed whole."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from rrkit.protocol.keys import MISSING_KEY_MESSAGE, shown_key
from rrkit.script import Script, reply

from ..errortrap import Serve

KEY = "sk-test-right-key-0123456789"
WRONG = "sk-proj-wrong-key-abcdefghijklmnop-9876"
BODY = {"model": "m", "input": "hi", "stream": True}


def _post(url: str, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=30, trust_env=False) as client:
        return client.post(url + "/responses", json=BODY, headers=headers)


def test_a_missing_or_wrong_key_gets_the_services_401_and_the_right_one_gets_in(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), require_key=KEY)
    missing = _post(server.http_url, {})
    assert missing.status_code == 401
    assert missing.json() == {
        "error": {"message": MISSING_KEY_MESSAGE, "type": "invalid_request_error", "param": None, "code": None}
    }
    wrong = _post(server.http_url, {"authorization": f"Bearer {WRONG}"})
    assert wrong.status_code == 401
    error = wrong.json()["error"]
    assert error["code"] == "invalid_api_key" and error["type"] == "invalid_request_error"
    assert error["message"].startswith(f"Incorrect API key provided: {shown_key(WRONG)}.")
    assert WRONG not in wrong.text and WRONG[8:-4] not in wrong.text  # never echoed whole
    assert _post(server.http_url, {"authorization": f"Bearer {KEY}"}).status_code == 200
    assert _post(server.http_url, {"api-key": KEY}).status_code == 200  # Azure's header
    server.settle()
    outcomes = [(e.outcome.kind.value, e.outcome.status, e.outcome.code) for e in server.exchanges if e.outcome]
    assert outcomes[:2] == [("refused", 401, None), ("refused", 401, "invalid_api_key")]


def test_the_official_sdk_raises_authentication_error_for_a_wrong_key_and_streams_with_the_right_one(
    serve: Serve,
) -> None:
    server = serve(Script(default=reply("welcome")), require_key=KEY)
    wrong = openai.OpenAI(base_url=server.http_url, api_key=WRONG, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        wrong.responses.create(model="m", input="hi")
    assert refused.value.status_code == 401 and refused.value.code == "invalid_api_key"
    right = openai.OpenAI(base_url=server.http_url, api_key=KEY, max_retries=0)
    with right.responses.stream(model="m", input="hi") as stream:
        assert stream.get_final_response().output_text == "welcome"


def test_the_websocket_upgrade_without_the_key_is_refused_401_with_the_error_body(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), require_key=KEY)
    with pytest.raises(InvalidStatus) as denied:
        connect(server.responses_ws_url, additional_headers={"authorization": f"Bearer {WRONG}"}, proxy=None)
    response = denied.value.response
    assert response.status_code == 401
    assert json.loads(response.body or b"{}")["error"]["code"] == "invalid_api_key"
    headers = {"authorization": f"Bearer {KEY}"}
    with connect(server.responses_ws_url, additional_headers=headers, proxy=None, open_timeout=30) as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        while json.loads(socket.recv(timeout=30))["type"] != "response.completed":
            pass
    assert [c.status for c in server.connections] == [401, 101]


def test_a_sessions_key_is_its_own_and_the_default_session_still_takes_any_key(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")))
    with httpx.Client(timeout=30, trust_env=False) as client:
        put = client.put(server.admin_url + "/key", json={"key": KEY}, headers={"x-rrkit-session": "locked"})
        assert put.json() == {"session": "locked", "key_required": True}
        bad = client.put(server.admin_url + "/key", json={"key": "a\nb"}, headers={"x-rrkit-session": "locked"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "key"
    assert _post(server.http_url, {"x-rrkit-session": "locked"}).status_code == 401
    assert _post(server.http_url, {"x-rrkit-session": "locked", "authorization": f"Bearer {KEY}"}).status_code == 200
    assert _post(server.http_url, {"x-rrkit-session": "open"}).status_code == 200
    assert _post(server.http_url, {}).status_code == 200
    with httpx.Client(timeout=30, trust_env=False) as client:
        cleared = client.delete(server.admin_url + "/key?session=locked")
    assert cleared.json()["key_required"] is False
    assert _post(server.http_url, {"x-rrkit-session": "locked"}).status_code == 200


def test_admin_calls_are_not_held_to_the_api_key(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")), require_key=KEY)
    with httpx.Client(timeout=30, trust_env=False) as client:
        health = client.get(server.admin_url + "/health")
    assert health.status_code == 200 and health.json()["key_required"] is True

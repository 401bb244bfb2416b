"""Who may call the admin API: a DNS name pointed at the server (DNS rebinding), a web page on another origin, a
form body, a caller without the token when one is set, and without one a caller off loopback are all refused
before any endpoint answers; a refused call changes nothing and reads nothing. The rules as a pure function, then
on a real server over loopback, then through `rrkit serve`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rrkit.script import Script, parse_script, reply
from rrkit.server import FakeServer
from rrkit.server.admin_guard import AdminPolicy, admin_refusal, host_name, is_loopback

from ..errortrap import Serve
from .faultclient import post_sse

LOCAL = {"host": "127.0.0.1:8000"}


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"host": "rebind.attacker.example:8000"}, "admin_host_refused"),
        ({"host": "127.0.0.1.nip.io:8000"}, "admin_host_refused"),
        ({"host": ""}, "admin_host_refused"),
        ({**LOCAL, "origin": "http://localhost:3000"}, "admin_cross_origin"),
        ({**LOCAL, "origin": "null"}, "admin_cross_origin"),
        ({**LOCAL, "origin": "https://evil.example"}, "admin_cross_origin"),
        ({**LOCAL, "sec-fetch-site": "cross-site"}, "admin_cross_site"),
        ({**LOCAL, "sec-fetch-site": "same-site"}, "admin_cross_site"),
        ({**LOCAL, "content-type": "text/plain;charset=UTF-8"}, "admin_content_type"),
        ({**LOCAL, "content-type": "application/x-www-form-urlencoded"}, "admin_content_type"),
        ({**LOCAL, "content-type": "multipart/form-data; boundary=x"}, "admin_content_type"),
    ],
)
def test_a_request_a_web_page_can_make_is_refused_before_any_endpoint(headers: dict[str, str], code: str) -> None:
    refused = admin_refusal(AdminPolicy(), "POST", headers, "127.0.0.1")
    assert refused is not None and refused.code == code and refused.status in (403, 415)
    assert refused.message.endswith((".", ")"))


@pytest.mark.parametrize(
    "headers",
    [
        LOCAL,
        {"host": "localhost:8000"},
        {"host": "[::1]:8000"},
        {"host": "10.0.0.7"},  # an IP literal cannot be a rebinding name
        {**LOCAL, "origin": "http://127.0.0.1:8000"},  # the server's own page
        {**LOCAL, "sec-fetch-site": "same-origin"},
        {**LOCAL, "content-type": "application/json"},
        {**LOCAL, "content-type": "application/yaml"},
    ],
)
def test_a_program_on_this_machine_may_call_without_a_token(headers: dict[str, str]) -> None:
    assert admin_refusal(AdminPolicy(), "POST", headers, "127.0.0.1") is None


def test_a_host_name_given_to_the_policy_is_answered_for() -> None:
    policy = AdminPolicy.of(None, ["Fake.Internal."])
    assert admin_refusal(policy, "GET", {"host": "fake.internal:8000"}, "127.0.0.1") is None


def test_with_a_token_set_every_caller_needs_it_and_a_wrong_one_is_a_401() -> None:
    policy = AdminPolicy.of("s3cret")
    for given in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic s3cret"}):
        refused = admin_refusal(policy, "GET", {**LOCAL, **given}, "127.0.0.1")
        assert refused is not None and refused.status == 401 and refused.code == "admin_token_required"
        assert refused.headers == {"www-authenticate": 'Bearer realm="rrkit admin"'}
    assert admin_refusal(policy, "GET", {**LOCAL, "authorization": "Bearer s3cret"}, "10.1.2.3") is None


def test_without_a_token_a_caller_off_loopback_is_refused_and_told_how_to_set_one() -> None:
    refused = admin_refusal(AdminPolicy(), "GET", {"host": "10.0.0.7:8000"}, "10.1.2.3")
    assert refused is not None and refused.status == 403 and "--admin-token" in refused.message
    assert admin_refusal(AdminPolicy(), "GET", {"host": "10.0.0.7:8000"}, None) is not None


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:80", "127.0.0.1"), ("[::1]:9", "::1"), ("LocalHost", "localhost"), ("::1", "::1"), ("[::1", "::1")],
)
def test_the_host_name_is_read_without_its_port(header: str, name: str) -> None:
    assert host_name(header) == name


def test_loopback_addresses_are_known_by_number_and_name() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "::", "example.com", None]))


def test_a_server_bound_off_loopback_makes_up_a_token_and_one_on_loopback_needs_none() -> None:
    assert FakeServer(host="127.0.0.1").admin_token is None
    wide = FakeServer(host="0.0.0.0")  # not started: nothing listens beyond loopback
    assert wide.admin_token and len(wide.admin_token) >= 32 and wide.admin_token_made
    assert FakeServer(host="0.0.0.0", admin_token="mine").admin_token == "mine"


# -- on a real server -------------------------------------------------------------------------------


def test_a_browser_like_call_changes_nothing_and_reads_nothing(serve: Serve) -> None:
    server = serve(Script(default=reply("kept")))
    assert post_sse(server).status == 200
    replacement = {"default": {"output": [{"text": "replaced"}]}}
    hostile = [
        ("POST", "/reset", {"origin": "http://evil.example"}, None),
        ("POST", "/reset", {"host": "rebind.attacker.example"}, None),
        ("POST", "/reset", {"content-type": "application/x-www-form-urlencoded"}, "a=1"),
        ("POST", "/script", {"origin": "null", "content-type": "application/json"}, json.dumps(replacement)),
        ("POST", "/script", {"content-type": "text/plain"}, json.dumps(replacement)),
        ("GET", "/exchanges", {"host": "rebind.attacker.example"}, None),
        ("GET", "/exchanges?full=1", {"sec-fetch-site": "cross-site"}, None),
    ]
    with httpx.Client(timeout=30, trust_env=False) as client:
        for method, path, headers, content in hostile:
            response = client.request(method, server.admin_url + path, headers=headers, content=content)
            assert response.status_code in (403, 415), (method, path, headers, response.text)
            assert "kept" not in response.text and "access-control-allow-origin" not in response.headers
            assert response.json()["error"]["code"].startswith("admin_")
    assert len(server.exchanges) == 1  # not reset
    assert server.script.default is not None and server.script.default.output[0].text == "kept"  # not replaced


def test_with_a_token_calls_without_it_get_401_and_with_it_answer(serve: Serve) -> None:
    server = serve(Script(default=reply("hi")), admin_token="t0ken")
    with httpx.Client(timeout=30, trust_env=False) as client:
        for path in ("", "/health", "/exchanges"):
            refused = client.get(server.admin_url + path)
            assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        assert client.post(server.admin_url + "/reset").status_code == 401
        allowed = client.post(server.admin_url + "/reset", headers={"authorization": "Bearer t0ken"})
        assert allowed.status_code == 200 and allowed.json()["reset"] is True
    assert post_sse(server).status == 200  # the Responses endpoints never ask for it


def test_a_posted_script_as_json_from_a_program_still_loads(serve: Serve) -> None:
    server = serve(Script(default=reply("old")))
    script = {"default": {"output": [{"text": "new"}]}}
    with httpx.Client(timeout=30, trust_env=False) as client:
        assert client.post(server.admin_url + "/script", json=script).status_code == 200
    assert server.script == parse_script({**script, "name": "posted"})


def test_rrkit_serve_takes_a_token_and_writes_it_only_into_a_private_ready_file(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    env = {**os.environ, "RRKIT_ADMIN_TOKEN": "from-env"}
    argv = [sys.executable, "-m", "rrkit", "serve", "--port", "0", "--quiet", "--ready-file", str(ready)]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            if ready.exists() or process.poll() is not None:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        facts = json.loads(ready.read_text(encoding="utf-8"))
        assert facts["admin_token"] == "from-env" and stat.S_IMODE(ready.stat().st_mode) == 0o600
        with httpx.Client(timeout=30, trust_env=False) as client:
            assert client.get(facts["admin_url"] + "/health").status_code == 401
            health = client.get(facts["admin_url"] + "/health", headers={"authorization": "Bearer from-env"})
            assert health.status_code == 200
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=60)
    assert "from-env" not in out  # a token the user gave is never echoed

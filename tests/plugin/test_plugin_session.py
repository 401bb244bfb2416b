"""`rrkit_session` as a user meets it: each test an isolated session of one shared server (the run's own, or an
external `rrkit serve` named by `--rrkit-serve-url`), reset at its start, with the marker's script and chaos; a
request nothing answered fails the test; the session ends at teardown, or stays for a look when the test failed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

TESTS = """
import json
import openai
import pytest
from websockets.sync.client import connect
from rrkit.script import Script, reply

@pytest.mark.rrkit(script="fixture:text")
def test_marker_script(rrkit_session):
    client = rrkit_session.openai(max_retries=0)
    answer = client.responses.create(model="m", input="first")
    assert answer.output_text.startswith("Hello!")
    assert [e["session"] for e in rrkit_session.exchanges()] == [rrkit_session.name]

def test_own_script_and_own_exchanges(rrkit_session):
    rrkit_session.load(Script(default=reply("mine alone")))
    client = rrkit_session.openai(max_retries=0)
    assert client.responses.create(model="m", input="x").output_text == "mine alone"
    with connect(rrkit_session.responses_ws_url, additional_headers=rrkit_session.headers) as ws:
        ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        while json.loads(ws.recv(timeout=30))["type"] != "response.completed":
            pass
    assert [e["transport"] for e in rrkit_session.exchanges()] == ["http", "ws"]

@pytest.mark.rrkit(chaos="rate_limit=1,retry_after=2,seed=1")
def test_marker_chaos(rrkit_session):
    client = rrkit_session.openai(max_retries=0)
    with pytest.raises(openai.RateLimitError) as refused:
        client.responses.create(model="m", input="x")
    assert refused.value.response.headers["retry-after"] == "2"

def test_key(rrkit_session):
    rrkit_session.require_key("sk-right")
    with pytest.raises(openai.AuthenticationError):
        rrkit_session.openai(api_key="sk-wrong", max_retries=0).responses.create(model="m", input="x")
    assert rrkit_session.openai(api_key="sk-right").responses.create(model="m", input="x").output_text
"""


def _serve(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    ready = tmp_path / "ready.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", "serve", "--quiet", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), process.stderr.read().decode() if process.stderr and process.poll() is not None else ""
    return process, json.loads(ready.read_text())["http_url"].removesuffix("/v1")


def test_each_test_gets_its_own_session_of_the_runs_server_with_its_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_sessions_share_an_external_rrkit_serve_and_end_with_their_tests(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    process, root = _serve(tmp_path)
    try:
        pytester.makepyfile(TESTS)
        pytester.runpytest("-p", "no:cacheprovider", f"--rrkit-serve-url={root}").assert_outcomes(passed=4)
        listed = httpx.get(root + "/__rrkit/sessions", trust_env=False, timeout=30).json()
        assert listed["created"] == 4 and listed["live"] == 0 and listed["ended"]["deleted"] == 4
    finally:
        process.terminate()
        process.wait(60)


def test_a_request_nothing_answers_fails_the_test_and_a_failed_tests_session_stays_for_a_look(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    process, root = _serve(tmp_path)
    try:
        pytester.makepyfile(
            """
import httpx
from rrkit.script import Script

def test_unanswered(rrkit_session):
    rrkit_session.load(Script())
    httpx.post(rrkit_session.http_url + "/responses", json={"model": "m", "input": "x"}, headers=rrkit_session.headers)

def test_fails(rrkit_session):
    assert False, "on purpose"
"""
        )
        result = pytester.runpytest("-p", "no:cacheprovider", f"--rrkit-serve-url={root}")
        result.assert_outcomes(passed=1, failed=1, errors=1)
        result.stdout.fnmatch_lines(["*rrkit session *test_unanswered*: 1 request(s) matched no reply*"])
        listed = httpx.get(root + "/__rrkit/sessions", trust_env=False, timeout=30).json()
        assert [s["name"].split("#")[0].split("::")[-1] for s in listed["data"]] == ["test_fails"]
    finally:
        process.terminate()
        process.wait(60)


def test_an_unreachable_serve_url_is_a_usage_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(rrkit_session):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--rrkit-serve-url=http://127.0.0.1:9")
    result.stdout.fnmatch_lines(["*rrkit_session: the server at http://127.0.0.1:9 cannot be reached*"])

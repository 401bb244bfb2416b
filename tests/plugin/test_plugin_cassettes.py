"""The rrkit marker, record modes and their precedence, snapshots, and parallel runs, as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rrkit.cassette import load_cassette
from rrkit.cassette.normalize import normalize_cassette
from rrkit.pytest_plugin import safe_name

TEST_FILE = """
import httpx
import pytest
from rrkit.script import reply, text

def post(server, question):
    return httpx.post(server.http_url + "/responses", json={{"model": "m", "input": question, "stream": True}})

@pytest.mark.rrkit(cassette="weather"{marker})
def test_weather(rrkit_server):
    rrkit_server.add(reply(text("{answer}", chunks=2)), repeat=True)
    response = post(rrkit_server, "{question}")
    assert "{expect}" in response.text, response.text
"""


def write_test(
    pytester: pytest.Pytester, *, answer: str, question: str = "weather?", expect: str | None = None, marker: str = ""
) -> None:
    pytester.makepyfile(
        test_user=TEST_FILE.format(answer=answer, question=question, expect=expect or answer, marker=marker)
    )


def cassette_path(pytester: pytest.Pytester) -> Path:
    return pytester.path / "cassettes" / "test_user" / "weather.json"


def recorded_questions(pytester: pytest.Pytester) -> list[object]:
    cassette = load_cassette(cassette_path(pytester))
    return [e.wire_request["input"] for e in cassette.exchanges if e.wire_request]


def test_once_records_from_the_test_script_then_replays(pytester: pytest.Pytester) -> None:
    write_test(pytester, answer="Sunny")
    pytester.runpytest("--rrkit-record-mode=once").assert_outcomes(passed=1)
    assert recorded_questions(pytester) == ["weather?"]
    # The script now says something else, but `once` with a cassette only replays the recording.
    write_test(pytester, answer="Rainy", expect="Sunny")
    pytester.runpytest("--rrkit-record-mode=once").assert_outcomes(passed=1)


def test_none_mode_without_a_cassette_tells_how_to_record(pytester: pytest.Pytester) -> None:
    write_test(pytester, answer="Sunny")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*weather.json: no such cassette, and record mode 'none' only replays*'once'*"])


def test_unrecorded_request_in_none_mode_fails_with_diff_and_hint(pytester: pytest.Pytester) -> None:
    write_test(pytester, answer="Sunny")
    pytester.runpytest("--rrkit-record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, answer="Sunny", question="snow?", expect="rrkit_no_match")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*exchange 0 (http) was answered by nothing; run with --rrkit-record-mode=new_episodes*",
            "*matchers passed: model, stream; failed: input*",
            '*Value of input changed from "weather?" to "snow?"*',
        ]
    )


def test_new_episodes_adds_the_unrecorded_request(pytester: pytest.Pytester) -> None:
    write_test(pytester, answer="Sunny")
    pytester.runpytest("--rrkit-record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, answer="Snowy", question="snow?")
    pytester.runpytest("--rrkit-record-mode=new_episodes").assert_outcomes(passed=1)
    assert recorded_questions(pytester) == ["weather?", "snow?"]


def test_all_records_again_and_rewrite_starts_afresh(pytester: pytest.Pytester) -> None:
    write_test(pytester, answer="Sunny")
    pytester.runpytest("--rrkit-record-mode=once").assert_outcomes(passed=1)
    write_test(pytester, answer="Cloudy")
    pytester.runpytest("--rrkit-record-mode=all").assert_outcomes(passed=1)
    assert recorded_questions(pytester) == ["weather?", "weather?"]
    pytester.runpytest("--rrkit-record-mode=rewrite").assert_outcomes(passed=1)
    assert recorded_questions(pytester) == ["weather?"]


def test_command_line_beats_marker_beats_rrkit_config(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

@pytest.fixture
def rrkit_config(rrkit_config):
    return {**rrkit_config, "record_mode": "once"}
"""
    )
    write_test(pytester, answer="Sunny")
    pytester.runpytest().assert_outcomes(passed=1)  # config: once records
    assert cassette_path(pytester).exists()
    write_test(pytester, answer="Rainy", marker=', record_mode="rewrite"')
    pytester.runpytest().assert_outcomes(passed=1)  # marker: rewrite beats config
    write_test(pytester, answer="Hail", expect="Rainy", marker=', record_mode="rewrite"')
    pytester.runpytest("--rrkit-record-mode=none").assert_outcomes(passed=1)  # command line beats marker


def test_invalid_record_mode_is_rejected_with_the_valid_ones(pytester: pytest.Pytester) -> None:
    write_test(pytester, answer="Sunny")
    result = pytester.runpytest("--rrkit-record-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*invalid record mode 'sometimes'; valid modes are: none, once, new_episodes, all, rewrite*"]
    )
    write_test(pytester, answer="Sunny", marker=', record_mode="often"')
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*invalid record mode 'often'; valid modes are: none, once*"])


def test_default_cassette_names_are_safe_and_bounded_for_parametrized_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_params="""
import httpx, pytest
from rrkit.script import reply

@pytest.mark.rrkit(record_mode="once")
@pytest.mark.parametrize("question", ["a/b c", "x" * 300])
def test_ask(rrkit_server, question):
    rrkit_server.add(reply("ok"))
    httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": question})
"""
    )
    pytester.runpytest().assert_outcomes(passed=2)
    names = sorted(p.name for p in (pytester.path / "cassettes" / "test_params").iterdir())
    assert len(names) == 2
    assert "test_ask_a_b_c.json" in names
    assert all(len(name) <= 105 and "/" not in name for name in names)
    assert safe_name("test_ask[" + "x" * 300 + "]") != safe_name("test_ask[" + "x" * 299 + "y]")


SNAPSHOT_TEST = """
import httpx
from rrkit.script import reply, text

def test_recording(rrkit_server, rrkit_snapshot):
    rrkit_server.add(reply(text("{answer}", chunks=2)))
    httpx.post(rrkit_server.http_url + "/responses", json={{"model": "m", "input": "hi"}})
    assert rrkit_server.recording == rrkit_snapshot
"""


def test_snapshot_is_created_matched_and_fails_with_a_semantic_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_snap=SNAPSHOT_TEST.format(answer="Hello"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)  # no snapshot yet
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    stored = list((pytester.path / "__snapshots__").rglob("*.json"))
    assert len(stored) == 1
    data = json.loads(stored[0].read_text())
    assert data["exchanges"][0]["response_id"] == "resp_1"  # ids aliased, so reruns compare equal
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.makepyfile(test_snap=SNAPSHOT_TEST.format(answer="Goodbye"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(['*exchange 0: Value of events?6??\'text\'? changed from "Hello" to "Goodbye"*'])
    assert "sequence_number" not in result.stdout.str()  # not a wall of JSON


PARALLEL_TESTS = """
import httpx, pytest
from rrkit.script import reply, text

@pytest.mark.rrkit(record_mode="once")
@pytest.mark.parametrize("n", range(6))
def test_many(rrkit_server, n):
    rrkit_server.add(reply(text(f"answer {n}", chunks=3)))
    response = httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": f"q{n}"})
    assert f"answer {n}" in response.text
"""


def normalized_cassettes(folder: Path) -> dict[str, str]:
    result = {}
    for path in sorted(folder.rglob("*.json")):
        cassette = normalize_cassette(load_cassette(path))
        for exchange in cassette.exchanges:
            exchange.request_headers = {}
        result[path.name] = cassette.model_dump_json(exclude={"recorded_at"})
    return result


def test_parallel_run_yields_the_same_cassettes_as_a_serial_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_par=PARALLEL_TESTS)
    pytester.runpytest_subprocess("-n", "0", "-p", "no:cacheprovider").assert_outcomes(passed=6)
    serial = normalized_cassettes(pytester.path / "cassettes")
    for path in (pytester.path / "cassettes").rglob("*.json"):
        path.unlink()
    pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider").assert_outcomes(passed=6)
    parallel = normalized_cassettes(pytester.path / "cassettes")
    assert len(serial) == 6
    assert parallel == serial


def test_rrkit_upstream_url_answers_what_is_recorded(pytester: pytest.Pytester) -> None:
    from rrkit.script import Script, reply
    from rrkit.server import FakeServer

    pytester.makepyfile(
        test_upstream="""
import httpx, pytest

@pytest.mark.rrkit(cassette="upstream")
def test_ask(rrkit_server):
    response = httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": "hi", "stream": True})
    assert "from the real upstream" in response.text
"""
    )
    with FakeServer(Script(default=reply("from the real upstream"))) as upstream:
        result = pytester.runpytest("--rrkit-record-mode=once", f"--rrkit-upstream={upstream.http_url}")
        result.assert_outcomes(passed=1)
        assert len(upstream.exchanges) == 1
    cassette = load_cassette(pytester.path / "cassettes" / "test_upstream" / "upstream.json")
    assert cassette.exchanges[0].outcome is not None and cassette.exchanges[0].outcome.kind == "completed"
    pytester.runpytest().assert_outcomes(passed=1)  # replayed with the upstream gone

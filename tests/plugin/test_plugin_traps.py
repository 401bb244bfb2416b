"""pytest without traps: one report per mismatch, `--rrkit-update` (re-record and refresh snapshots, deleting
none of a failing test's), `@pytest.mark.rrkit(script=...)`, checked marker values, syrupy's filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

OPENAI_MISMATCH = """
import httpx
import openai
import pytest
from rrkit.script import Match, reply

def test_wrong_model(rrkit_server):
    rrkit_server.add(reply("hi"), when=Match(model="gpt-5"))
    rrkit_server.allow_unused()
    client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
    client.responses.create(model="m", input="hi")

def test_status_checked(rrkit_server):
    rrkit_server.add(reply("hi"), when=Match(model="gpt-5"))
    rrkit_server.allow_unused()
    assert httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": "hi"}).status_code == 200

def test_expects_the_400(rrkit_server):
    rrkit_server.add(reply("hi"), when=Match(model="gpt-5"))
    rrkit_server.allow_unused()
    assert httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": "hi"}).status_code == 400
"""


@pytest.fixture(autouse=True)
def _inner_runs_are_not_xdist_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `pytest -n`, the inner run inherits PYTEST_XDIST_WORKER: syrupy would take it for a worker, and
    neither print its report nor delete unused snapshots."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


def _count(lines: list[str], text: str) -> int:
    """How many lines above pytest's short summary hold `text`: on CI (env `CI` set) pytest repeats each whole
    failure message there, which is pytest's echo, not a second report."""
    end = next((i for i, line in enumerate(lines) if "short test summary info" in line), len(lines))
    return sum(text in line for line in lines[:end])


@pytest.mark.parametrize("args", [(), ("-n", "1")], ids=["plain", "xdist"])
def test_a_mismatch_that_fails_the_test_is_one_failure_with_its_report_printed_once(
    pytester: pytest.Pytester, args: tuple[str, ...]
) -> None:
    pytester.makepyfile(test_user=OPENAI_MISMATCH)
    result = pytester.runpytest("-k", "wrong_model", *args)
    result.assert_outcomes(failed=1)  # not "1 failed, 1 error"
    lines = result.stdout.lines
    assert _count(lines, "Closest:") == 1, result.stdout.str()  # the client's error; no teardown copy, no log copy
    assert _count(lines, "failed: model == 'gpt-5'") == 1
    assert not [line for line in lines if "Captured log" in line]
    assert "error" not in lines[-1]
    result.stdout.fnmatch_lines(
        [
            "*openai.BadRequestError: Error code: 400 - rrkit: no scripted reply matches this http request*",
            "*- rrkit -*",
            "*test_wrong_model: exchange 0 (http) was answered by nothing; add a reply for it to the script*",
            "(its closest-match report is the error above)",
            "FAILED test_user.py::test_wrong_model - openai.BadRequestError*",
            "*= 1 failed*",
        ]
    )


def test_a_failure_that_does_not_show_the_report_gets_it_in_the_rrkit_section(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=OPENAI_MISMATCH)
    result = pytester.runpytest("-k", "status_checked")
    result.assert_outcomes(failed=1)
    assert _count(result.stdout.lines, "Closest:") == 1
    result.stdout.fnmatch_lines(
        ["*assert 400 == 200*", "*- rrkit -*", "*exchange 0 (http) was answered by nothing*", "Closest:", "*gpt-5*"]
    )


def test_a_test_that_passes_despite_a_mismatch_gets_one_teardown_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=OPENAI_MISMATCH)
    result = pytester.runpytest("-k", "expects_the_400")
    result.assert_outcomes(passed=1, errors=1)
    assert _count(result.stdout.lines, "Closest:") == 1  # the server's warning is not captured a second time
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_expects_the_400*", "*answered by nothing*"])


# -- --rrkit-update -------------------------------------------------------------------------------------------

RECORDED = """
import os
import openai
import pytest
from rrkit.script import reply

@pytest.mark.rrkit(cassette="talk", record_mode="once")
def test_talk(rrkit_server, rrkit_snapshot):
    rrkit_server.add(reply(os.environ["ANSWER"]))
    client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
    assert client.responses.create(model="m", input="hi").output_text == os.environ["ANSWER"]
    assert rrkit_server.recording == rrkit_snapshot
"""


def _stored(pytester: pytest.Pytester) -> list[Path]:
    return sorted((pytester.path / "__snapshots__").rglob("*.json"))


def test_rrkit_update_re_records_cassettes_and_refreshes_snapshots_together(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=RECORDED)
    monkeypatch.setenv("ANSWER", "old answer")
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_user" / "talk.json"
    assert "old answer" in cassette.read_text()
    monkeypatch.setenv("ANSWER", "new answer")
    pytester.runpytest().assert_outcomes(failed=1)  # replays "old answer"; the new script's reply is unused
    result = pytester.runpytest("--rrkit-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 snapshot updated*"])
    assert "new answer" in cassette.read_text() and "old answer" not in cassette.read_text()
    (snapshot,) = _stored(pytester)
    assert "new answer" in snapshot.read_text()
    pytester.runpytest().assert_outcomes(passed=1)


def test_an_explicit_record_mode_wins_over_rrkit_update(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=RECORDED)
    monkeypatch.setenv("ANSWER", "old answer")
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWER", "new answer")
    pytester.runpytest("--rrkit-update", "--rrkit-record-mode=none").assert_outcomes(failed=1)


FAILS_BEFORE_ASSERTING = """
import os
import openai
from rrkit.script import reply

def test_recording({fixture}, rrkit_server):
    rrkit_server.add(reply("hi"))
    client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
    client.responses.create(model="m", input="hi")
    assert not os.environ.get("BREAK"), "the test broke before its snapshot assert"
    assert {value} == {fixture}
"""


def test_syrupy_snapshot_update_deletes_the_snapshot_of_a_test_that_failed_before_asserting(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trap, with syrupy's own `snapshot`: following its hint after a failure loses the stored snapshot."""
    pytester.makepyfile(test_user=FAILS_BEFORE_ASSERTING.format(fixture="snapshot", value="'hi'"))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    assert list((pytester.path / "__snapshots__").rglob("*.ambr"))
    monkeypatch.setenv("BREAK", "1")
    result = pytester.runpytest("--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*1 unused snapshot deleted*"])
    assert not list((pytester.path / "__snapshots__").rglob("*.ambr"))


@pytest.mark.parametrize("flag", ["--snapshot-update", "--rrkit-update"])
def test_updating_keeps_the_rrkit_snapshot_of_a_test_that_failed_before_asserting_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    pytester.makepyfile(
        test_user=FAILS_BEFORE_ASSERTING.format(fixture="rrkit_snapshot", value="rrkit_server.recording")
    )
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (stored,) = _stored(pytester)
    before = stored.read_text()
    monkeypatch.setenv("BREAK", "1")
    result = pytester.runpytest(flag)
    result.assert_outcomes(failed=1)
    assert "deleted" not in result.stdout.str()
    assert stored.read_text() == before
    monkeypatch.delenv("BREAK")
    pytester.runpytest().assert_outcomes(passed=1)


# -- @pytest.mark.rrkit(script=...) ---------------------------------------------------------------------------

SCRIPT = """
responses:
  - output:
      - text: "from the script file"
"""
SCRIPTED_TEST = """
import openai
import pytest

@pytest.mark.rrkit(script={script!r})
def test_scripted(rrkit_server):
    client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
    assert {expected!r} in client.responses.create(model="m", input="hi").output_text
"""


def test_marker_script_is_found_next_to_the_test_file(pytester: pytest.Pytester) -> None:
    pytester.mkdir("tests")
    (pytester.path / "tests" / "fixtures").mkdir()
    (pytester.path / "tests" / "fixtures" / "x.yaml").write_text(SCRIPT)
    test = SCRIPTED_TEST.format(script="fixtures/x.yaml", expected="from the script file")
    (pytester.path / "tests" / "test_user.py").write_text(test)
    pytester.runpytest().assert_outcomes(passed=1)


def test_marker_script_is_found_under_the_rootdir(pytester: pytest.Pytester) -> None:
    pytester.mkdir("tests")
    (pytester.path / "scripts").mkdir()
    (pytester.path / "scripts" / "x.yaml").write_text(SCRIPT)
    test = SCRIPTED_TEST.format(script="scripts/x.yaml", expected="from the script file")
    (pytester.path / "tests" / "test_user.py").write_text(test)
    pytester.runpytest().assert_outcomes(passed=1)


def test_marker_script_names_a_shipped_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=SCRIPTED_TEST.format(script="fixture:text", expected="plain streamed text reply"))
    pytester.runpytest().assert_outcomes(passed=1)


def test_marker_script_steps_count_in_the_teardown_checks_and_the_test_adds_to_them(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_user="""
import httpcore
import httpx
import pytest

@pytest.mark.rrkit(script="fixture:drop-mid-stream")
def test_retry_after_a_drop(rrkit_server):
    url = rrkit_server.http_url + "/responses"
    body = {"model": "m", "input": "hi", "stream": True}
    with pytest.raises((httpx.RemoteProtocolError, httpcore.RemoteProtocolError)):  # the stream is cut
        httpx.post(url, json=body)
    assert "Not this time." in httpx.post(url, json=body).text

@pytest.mark.rrkit(script="fixture:drop-mid-stream")
def test_never_asks(rrkit_server):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_never_asks: 1 scripted reply was never requested: step 0*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            'script="fixtures/missing.yaml"',
            "*test_user.py::test_it: @pytest.mark.rrkit(script='fixtures/missing.yaml'): no such file (looked for "
            "*fixtures/missing.yaml and *fixtures/missing.yaml); give a path relative to the test file or the rootdir*",
        ),
        ('script="fixture:drop-mid-stram"', "*script='fixture:drop-mid-stram'*did you mean fixture:drop-mid-stream?*"),
        ('script="bad.yaml"', "*test_it: @pytest.mark.rrkit(script='bad.yaml'): *bad.yaml: invalid rrkit script*"),
        ('scirpt="x.yaml"', "*unknown @pytest.mark.rrkit argument 'scirpt' (did you mean 'script'?)*"),
        ('assert_all_used="no"', "*@pytest.mark.rrkit argument 'assert_all_used' must be True or False, got 'no'*"),
        ("script=3", "*@pytest.mark.rrkit argument 'script' must be a script file path*got 3*"),
        ('"talk"', "*@pytest.mark.rrkit takes keyword arguments only (script, cassette, *got ('talk',)*"),
    ],
    ids=["missing", "unknown-fixture", "bad-file", "typo", "bool", "type", "positional"],
)
def test_marker_mistakes_fail_naming_the_marker_the_test_and_the_file(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    (pytester.path / "bad.yaml").write_text("responses:\n  - output: 3\n")
    pytester.makepyfile(
        test_user=f"import pytest\n\n@pytest.mark.rrkit({marker})\ndef test_it(rrkit_server):\n    pass\n"
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])


# -- syrupy's exclude / include / matcher -------------------------------------------------------------------

FILTERED = """
import openai
from syrupy.filters import paths, props
from syrupy.matchers import path_type
from rrkit.script import reply

def test_recording(rrkit_server, rrkit_snapshot):
    rrkit_server.add(reply("hi"))
    client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
    client.responses.create(model="m", input="hi")
    assert rrkit_server.recording == {assertion}
"""


@pytest.mark.parametrize(
    ("assertion", "check"),
    [
        ('rrkit_snapshot(exclude=props("request_headers"))', "no-headers"),
        ('rrkit_snapshot.with_defaults(exclude=props("request_headers"))', "no-headers"),
        (
            'rrkit_snapshot(include=paths("exchanges", "exchanges.0", "exchanges.0.request_headers"))',
            "only-headers",
        ),
        ('rrkit_snapshot(matcher=path_type({"exchanges.0.request_headers.content-type": (str,)}))', "typed"),
    ],
    ids=["exclude", "with_defaults", "include", "matcher"],
)
def test_syrupy_exclude_include_and_matcher_apply_to_the_stored_recording(
    pytester: pytest.Pytester, assertion: str, check: str
) -> None:
    pytester.makepyfile(test_user=FILTERED.format(assertion=assertion))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (stored,) = _stored(pytester)
    tree = json.loads(stored.read_text())
    if check == "no-headers":
        assert "request_headers" not in tree["exchanges"][0] and "events" in tree["exchanges"][0]
    elif check == "only-headers":
        assert list(tree) == ["exchanges"] and list(tree["exchanges"][0]) == ["request_headers"]
    else:
        assert tree["exchanges"][0]["request_headers"]["content-type"] == "str"
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_snapshot_without_filters_keeps_the_cassette_layout(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=FILTERED.format(assertion="rrkit_snapshot"))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (stored,) = _stored(pytester)
    assert '"exchanges": [' in stored.read_text()


RAISING_SOURCE = """
import httpx
from rrkit.script.select import ReplySource

class Boom(ReplySource):
    async def select(self, request):
        raise RuntimeError("the test's own source is broken")

def test_expects_the_500(rrkit_server):
    rrkit_server.server.state.source = Boom()
    assert httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": "hi"}).status_code == 500

def test_unmatched(rrkit_server):
    assert httpx.post(rrkit_server.http_url + "/responses", json={"model": "m", "input": "hi"}).status_code == 400
"""


def test_a_reply_source_that_raises_fails_the_test_at_teardown_as_an_unmatched_request_does(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_sources=RAISING_SOURCE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        ["*test_expects_the_500: exchange 0 (http): rrkit: the reply source Boom failed: RuntimeError*"]
    )
    result.stdout.fnmatch_lines(["*test_unmatched: exchange 0 (http) was answered by nothing*"])

"""Matching settings through the marker and rrkit_config, the unplayed-exchange teardown check, and unknown keys,
as a user meets them."""

from __future__ import annotations

import json

import pytest

HEADER = """
import httpx
import pytest
from rrkit.script import reply, text

def ask(server, question):
    response = httpx.post(server.http_url + "/responses", json={"model": "m", "input": question, "stream": True})
    return response.text
"""


def write(pytester: pytest.Pytester, body: str, conftest: str | None = None) -> None:
    pytester.makepyfile(test_user=HEADER + body)
    if conftest is not None:
        pytester.makeconftest(conftest)


def record(pytester: pytest.Pytester, *questions: str) -> None:
    """Record `cassettes/test_user/talk.json` with one exchange per question, answered `answer N`."""
    write(
        pytester,
        f"""
@pytest.mark.rrkit(cassette="talk")
def test_talk(rrkit_server):
    rrkit_server.queue(*(reply(text(f"answer {{i}}")) for i in range({len(questions)})))
    for question in {list(questions)!r}:
        ask(rrkit_server, question)
""",
    )
    pytester.runpytest("--rrkit-record-mode=once").assert_outcomes(passed=1)


def replay_test(marker: str = "", body: str = 'assert "answer 0" in ask(rrkit_server, "first")') -> str:
    return f"""
@pytest.mark.rrkit(cassette="talk"{marker})
def test_talk(rrkit_server):
    {body}
"""


def test_replay_only_session_fails_at_teardown_listing_the_exchanges_never_requested(pytester: pytest.Pytester) -> None:
    record(pytester, "first", "second\nline")
    write(pytester, replay_test())
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_talk: 1 recorded exchange of *talk.json was never requested:",
            "*  - exchange 1 (http, model 'm', last input: user message \"second\\nline\")",
            "*record the cassette again (--rrkit-record-mode=rewrite)*@pytest.mark.rrkit(assert_all_played=False)*"
            "rrkit_server.allow_unplayed()*",
        ]
    )


@pytest.mark.parametrize(
    ("marker", "body", "conftest"),
    [
        (", assert_all_played=False", 'ask(rrkit_server, "first")', None),
        ("", 'rrkit_server.allow_unplayed(); ask(rrkit_server, "first")', None),
        (
            "",
            'ask(rrkit_server, "first")',
            "import pytest\n@pytest.fixture\ndef rrkit_config(rrkit_config):\n"
            "    return {**rrkit_config, 'assert_all_played': False}\n",
        ),
    ],
    ids=["marker", "allow_unplayed", "rrkit_config"],
)
def test_unplayed_exchanges_are_allowed_when_the_check_is_relaxed(
    pytester: pytest.Pytester, marker: str, body: str, conftest: str | None
) -> None:
    record(pytester, "first", "second")
    write(pytester, replay_test(marker, body), conftest)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_recording_session_does_not_check_for_unplayed_exchanges(pytester: pytest.Pytester) -> None:
    record(pytester, "first", "second")
    write(pytester, replay_test(body='rrkit_server.add(reply("new")); ask(rrkit_server, "third")'))
    pytester.runpytest("--rrkit-record-mode=new_episodes").assert_outcomes(passed=1)


def test_marker_match_settings_reach_the_replay(pytester: pytest.Pytester) -> None:
    record(pytester, "first at 12:00")
    asked = 'assert "answer 0" in ask(rrkit_server, "first at 13:05")'
    write(pytester, replay_test(', match={"normalize": {"input": r"\\d\\d:\\d\\d"}}', asked))
    pytester.runpytest().assert_outcomes(passed=1)
    write(pytester, replay_test("", asked))
    pytester.runpytest().assert_outcomes(failed=1)  # the mismatch is reported with the failure, not again


def test_allow_repeats_and_match_preset_shortcuts_on_the_marker(pytester: pytest.Pytester) -> None:
    record(pytester, "first")
    twice = 'assert "answer 0" in ask(rrkit_server, "first"); assert "answer 0" in ask(rrkit_server, "first")'
    write(pytester, replay_test(', allow_repeats=True, match_preset="codex"', twice))
    pytester.runpytest().assert_outcomes(passed=1)
    write(pytester, replay_test("", twice))
    pytester.runpytest().assert_outcomes(failed=1)


def test_rrkit_config_match_and_the_marker_merge_key_by_key(pytester: pytest.Pytester) -> None:
    record(pytester, "first at 12:00")
    conftest = """
import pytest

@pytest.fixture
def rrkit_config(rrkit_config):
    return {**rrkit_config, "match": {"normalize": {"input": r"\\d\\d:\\d\\d"}}, "allow_repeats": True}
"""
    thrice = "\n    ".join([f'assert "answer 0" in ask(rrkit_server, "first at 1{n}:00")' for n in range(3)])
    write(pytester, replay_test(', match={"presets": ["openai-sdk"]}', thrice), conftest)
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("marker", "conftest_config", "message"),
    [
        ('casette="talk"', None, "*unknown @pytest.mark.rrkit argument 'casette' (did you mean 'cassette'?)*"),
        ('cassette="talk", match_presets="codex"', None, "*argument 'match_presets' (did you mean 'match_preset'?)*"),
        (
            'cassette="talk"',
            '"record_mod": "none"',
            "*unknown rrkit_config key 'record_mod' (did you mean 'record_mode'?)*",
        ),
        ('cassette="talk"', '"zzz": 1', "*unknown rrkit_config key 'zzz'; valid: record_mode, upstream,*"),
        (
            'cassette="talk", match={"ignroe": ["x"]}',
            None,
            "*rrkit match configuration: unknown match setting 'ignroe' (did you mean 'ignore'?)*",
        ),
        (
            'cassette="talk", match_preset="codx"',
            None,
            "*unknown match preset 'codx' (did you mean 'codex'?); valid: codex, openai-sdk*",
        ),
        ('cassette="talk"', '"match": {"normalize": {"input": "("}}', "*normalize 'input': invalid regex '('*"),
        ('cassette="talk"', '"time_scale": "fast"', "*rrkit_config key 'time_scale' must be a number, got 'fast'*"),
        (
            'cassette="talk"',
            '"record_mode": "often"',
            "*rrkit_config key 'record_mode': invalid record mode 'often'; valid modes are: none, once*",
        ),
        ('cassette="talk"', '"redact_paths": [1]', "*rrkit_config key 'redact_paths' must be a string or a list*"),
    ],
)
def test_unknown_or_invalid_settings_are_usage_errors_with_the_closest_valid_name(
    pytester: pytest.Pytester, marker: str, conftest_config: str | None, message: str
) -> None:
    record(pytester, "first")
    conftest = None
    if conftest_config is not None:
        conftest = (
            "import pytest\n@pytest.fixture\ndef rrkit_config(rrkit_config):\n"
            f"    return {{**rrkit_config, {conftest_config}}}\n"
        )
    pytester.makepyfile(test_user=HEADER + f"\n@pytest.mark.rrkit({marker})\ndef test_talk(rrkit_server):\n    pass\n")
    if conftest is not None:
        pytester.makeconftest(conftest)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])


SNAPSHOT_TEST = """
import openai
import pytest
from rrkit.script import reply

@pytest.mark.rrkit({marker})
def test_recording(rrkit_server, rrkit_snapshot):
    rrkit_server.add(reply("hi"))
    client = openai.OpenAI(base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0)
    client.responses.create(model="m", input="hi")
    assert rrkit_server.recording == rrkit_snapshot
"""


@pytest.mark.parametrize(("marker", "kept"), [("", True), ('match_preset="openai-sdk"', False)])
def test_openai_sdk_preset_leaves_the_stainless_headers_out_of_snapshots(
    pytester: pytest.Pytester, marker: str, kept: bool
) -> None:
    pytester.makepyfile(test_snap=SNAPSHOT_TEST.format(marker=marker))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (stored,) = (pytester.path / "__snapshots__").rglob("*.json")
    headers = json.loads(stored.read_text())["exchanges"][0]["request_headers"]
    assert any(name.startswith("x-stainless-") for name in headers) is kept
    assert "content-type" in headers
    pytester.runpytest().assert_outcomes(passed=1)


PLATFORM_TEST = """
import os

import openai
from rrkit.script import reply

def test_recording(rrkit_server, rrkit_snapshot):
    rrkit_server.add(reply("hi"))
    platform = dict(item.split("=", 1) for item in os.environ["PLATFORM"].split(","))
    client = openai.OpenAI(
        base_url=rrkit_server.http_url, api_key="sk-test", max_retries=0, default_headers=platform
    )
    client.responses.create(model="m", input="hi")
    assert rrkit_server.recording == rrkit_snapshot
"""
MAC = "x-stainless-os=MacOS,x-stainless-arch=arm64,x-stainless-package-version=1.99.0,user-agent=OpenAI/Python 1.99"
LINUX = "x-stainless-os=Linux,x-stainless-arch=x64,x-stainless-package-version=2.8.0,user-agent=OpenAI/Python 2.8"


def test_a_snapshot_made_on_another_os_and_sdk_release_still_matches(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_snap=PLATFORM_TEST)
    monkeypatch.setenv("PLATFORM", MAC)
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    (stored,) = (pytester.path / "__snapshots__").rglob("*.json")
    headers = json.loads(stored.read_text())["exchanges"][0]["request_headers"]
    assert headers["x-stainless-os"] == "*" and headers["x-stainless-arch"] == "*"  # present, any value
    monkeypatch.setenv("PLATFORM", LINUX)
    pytester.runpytest().assert_outcomes(passed=1)

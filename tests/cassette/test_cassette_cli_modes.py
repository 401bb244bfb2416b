"""Record modes and matching from the command line: `rrkit record --record-mode`, `rrkit serve --cassette C
--upstream URL`, the `--match-*` options and the report of recorded exchanges no request played."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from rrkit.cassette import load_cassette
from rrkit.protocol import OutcomeKind
from rrkit.script import Match, Script, reply, text

from ..errortrap import Serve


@contextmanager
def running(*args: str, stop: signal.Signals = signal.SIGTERM) -> Iterator[tuple[str, list[str]]]:
    """`rrkit ARGS` until it prints its HTTP base URL; yields (URL, [stdout, stderr] filled in at exit)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", *args, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    output: list[str] = []
    try:
        assert process.stdout is not None
        url = None
        for line in process.stdout:
            output.append(line)
            if found := re.search(r"HTTP base URL:\s+(\S+)", line):
                url = found.group(1)
                break
        assert url, f"no URL printed: {''.join(output)} {process.stderr.read() if process.stderr else ''}"
        result: list[str] = []
        yield url, result
        process.send_signal(stop)
        out, err = process.communicate(timeout=20)
        result += ["".join(output) + out, err]
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def ask(url: str, question: str) -> str:
    answer = httpx.post(url + "/responses", json={"model": "gpt-test", "input": question, "stream": True}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.text


def by_question() -> Script:
    return (
        Script()
        .add(reply(text("one")), when=Match(input_text="first"), repeat=True)
        .add(reply(text("two")), when=Match(input_text="second"), repeat=True)
    )


def test_record_command_new_episodes_replays_what_the_cassette_has_and_records_the_rest(
    serve: Serve, tmp_path: Path
) -> None:
    cassette = tmp_path / "gaps.json"
    with serve.running(by_question()) as upstream:
        with running("record", "--upstream", upstream.http_url, "--cassette", str(cassette)) as (url, _):
            ask(url, "first")
        assert len(upstream.exchanges) == 1
        mode = ("--record-mode", "new_episodes")
        with running("record", "--upstream", upstream.http_url, "--cassette", str(cassette), *mode) as (url, out):
            assert '"one"' in ask(url, "first")  # replayed: the upstream is not asked again
            assert '"two"' in ask(url, "second")  # recorded
        assert len(upstream.exchanges) == 2
    assert "(1 exchange recorded)" in out[0]
    recorded = load_cassette(cassette)
    assert recorded.source == "proxy"
    assert [e.logical_request["input"] for e in recorded.exchanges if e.logical_request] == ["first", "second"]


def test_serve_with_upstream_fills_an_existing_cassette_and_sigterm_still_writes_it(
    serve: Serve, tmp_path: Path
) -> None:
    cassette = tmp_path / "filled.json"
    with serve.running(by_question()) as upstream:
        args = ("serve", "--cassette", str(cassette), "--upstream", upstream.http_url, "--record-mode", "all")
        with running(*args, stop=signal.SIGTERM) as (url, out):
            ask(url, "first")
            ask(url, "second")
    assert "wrote" in out[0]
    assert [e.outcome.kind for e in load_cassette(cassette).exchanges if e.outcome] == [OutcomeKind.COMPLETED] * 2


def test_serve_replay_reports_recorded_exchanges_no_request_played(serve: Serve, tmp_path: Path) -> None:
    cassette = tmp_path / "stale.json"
    with (
        serve.running(by_question()) as upstream,
        running("record", "--upstream", upstream.http_url, "--cassette", str(cassette)) as (url, _),
    ):
        ask(url, "first")
        ask(url, "second")
    with running("serve", "--cassette", str(cassette), stop=signal.SIGINT) as (url, out):
        ask(url, "second")
    assert "1 recorded exchange(s) were never requested" in out[1]
    assert "exchange 0" in out[1] and "exchange 1" not in out[1]


def test_serve_match_options_ignore_a_changed_tool_output_and_allow_repeats(serve: Serve, tmp_path: Path) -> None:
    cassette = tmp_path / "tool.json"
    call = {"type": "function_call", "call_id": "c1", "name": "clock", "arguments": "{}"}
    body = {"model": "gpt-test", "stream": True, "input": [call, {"type": "function_call_output", "call_id": "c1"}]}
    with (
        serve.running(Script().add(reply(text("noted")), repeat=True)) as upstream,
        running("record", "--upstream", upstream.http_url, "--cassette", str(cassette)) as (url, _),
    ):
        body["input"][1]["output"] = "Wall time: 0.012 seconds\nok"
        httpx.post(url + "/responses", json=body, timeout=10)
    body["input"][1]["output"] = "Wall time: 3.5 seconds\nok"
    with running("serve", "--cassette", str(cassette)) as (url, _):
        assert httpx.post(url + "/responses", json=body, timeout=10).status_code == 400  # the output differs
    options = ["--match-normalize", r"input[*].output=Wall time: ([\d.]+)", "--allow-repeats"]
    with running("serve", "--cassette", str(cassette), *options) as (url, _):
        for _ in range(2):
            assert '"noted"' in httpx.post(url + "/responses", json=body, timeout=10).text
    body["input"][1]["output"] = "Wall time: 3.5 seconds\nfailed"
    with running("serve", "--cassette", str(cassette), "--match-ignore", "input[*].output") as (url, _):
        assert '"noted"' in httpx.post(url + "/responses", json=body, timeout=10).text


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--match-preset", "codx"], "did you mean 'codex'"),
        (["--match-normalize", "input[*].output"], "PATH=REGEX"),
        (["--match-normalize", "input[*].output=(unclosed"], "input[*].output"),
    ],
)
def test_bad_match_option_is_a_usage_error_naming_it(tmp_path: Path, option: list[str], says: str) -> None:
    cassette = tmp_path / "any.json"
    cassette.write_text('{"rrkit_cassette": 1}')
    result = subprocess.run(
        [sys.executable, "-m", "rrkit", "serve", "--cassette", str(cassette), *option],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and says in result.stderr, result.stderr


def test_sdk_non_streaming_create_through_rrkit_record_replays_from_rrkit_serve(serve: Serve, tmp_path: Path) -> None:
    import openai

    cassette = tmp_path / "sdk.json"
    with (
        serve.running(Script().add(reply(text("Not streamed.")))) as upstream,
        running("record", "--upstream", upstream.http_url, "--cassette", str(cassette)) as (url, _),
    ):
        client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="gpt-test", input="hi").output_text == "Not streamed."
    (exchange,) = load_cassette(cassette).exchanges
    assert exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED
    with running("serve", "--cassette", str(cassette)) as (url, _):
        client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
        assert client.responses.create(model="gpt-test", input="hi").output_text == "Not streamed."


def test_record_headline_shows_the_upstream_url_without_its_secrets(serve: Serve, tmp_path: Path) -> None:
    secret = "sk-proj-2f9a7c21d4e5b6a8c0d2e4f6"
    with (
        serve.running() as upstream,
        running(
            "record", "--upstream", f"{upstream.http_url}?api-key={secret}", "--cassette", str(tmp_path / "c.json")
        ) as (_, out),
    ):
        pass
    assert "api-key=[REDACTED]" in out[0] and secret not in out[0] + out[1]

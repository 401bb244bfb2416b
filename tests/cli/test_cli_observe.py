"""A CLI server is observable and stops safely: one line per exchange as it ends (`--quiet` silences them), a
`--journal` of JSON lines, a `--ready-file` for harnesses, and a second stop signal that never cuts the cassette
being written."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from rrkit.cassette.store import load_cassette
from rrkit.cli.running import _StopSignals
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.server.capture import Capture, Exchange
from rrkit.server.exchange_log import LinePrinter, exchange_line, exchange_record
from rrkit.tools import self_check

from ..rrkit_process import start
from ..server.test_shutdown import CEILING, assert_stopped_quietly

BODY = {"model": "gpt-5", "input": "hi", "stream": True}
LINE = re.compile(r"^#(\d+)\s+(http|ws)\s+(full|incr|warmup)\s+(\S+)\s+(\d+) ev\s+(.+?)\s+(\d+) ms")
BIG_SCRIPT = """\
name: big
default:
  output:
    - text: "{text}"
      chunks: 200
""".format(text="abcdefghij " * 40)


@contextmanager
def serving(*args: str, command: str = "serve") -> Iterator[tuple[subprocess.Popen[str], str]]:
    process, url = start(*args, command=command)
    try:
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=CEILING)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    return out, err


def ws_two_requests(url: str) -> None:
    """A full request, then an incremental one on the same socket, then a warmup."""
    with connect(url.replace("http://", "ws://") + "/responses", open_timeout=5) as websocket:
        previous: str | None = None
        for kind in ("full", "incremental", "warmup"):
            request: dict[str, object] = {"type": "response.create", "model": "gpt-5", "input": "hi"}
            if kind == "incremental":
                request["previous_response_id"] = previous
            if kind == "warmup":
                request["generate"] = False
            websocket.send(json.dumps(request))
            while True:
                event = json.loads(websocket.recv(timeout=10))
                if event["type"] in ("response.completed", "error", "response.failed"):
                    previous = event.get("response", {}).get("id")
                    break


def test_serve_prints_one_line_per_exchange_as_it_ends(tmp_path: Path) -> None:
    with serving() as (process, url):
        assert process.stdout is not None
        httpx.post(url + "/responses", json=BODY, trust_env=False)
        # Printed as the exchange ends, before the server stops. The headline's last lines come first; they are
        # read here, as `communicate` would not see what this buffered reader has taken off the pipe.
        first = next(line for line in process.stdout if LINE.match(line))
        ws_two_requests(url)
        httpx.post(url + "/responses", json={"model": 5}, trust_env=False)  # a 400
        out, _ = stop(process)
    lines = [first, *out.splitlines()]
    parsed = [match.groups() for line in lines if (match := LINE.match(line))]
    assert [(number, transport, kind) for number, transport, kind, *_ in parsed] == [
        ("0", "http", "full"),
        ("1", "ws", "full"),
        ("2", "ws", "incr"),
        ("3", "ws", "warmup"),
        ("4", "http", "full"),
    ], out
    assert parsed[0][3] == "gpt-5" and int(parsed[0][4]) > 0 and parsed[0][5] == "completed"
    assert parsed[4][5].startswith("refused 400"), parsed[4]
    assert out.rstrip().endswith("rrkit: stopped")


def test_quiet_prints_no_exchange_line(tmp_path: Path) -> None:
    with serving("--quiet") as (process, url):
        for _ in range(3):
            httpx.post(url + "/responses", json=BODY, trust_env=False)
        out, _ = stop(process)
    assert not [line for line in out.splitlines() if LINE.match(line)], out
    assert "rrkit: stopped" in out


def test_journal_appends_each_exchange_as_one_json_line_as_it_ends(tmp_path: Path) -> None:
    journal = tmp_path / "exchanges.jsonl"
    journal.write_text("")  # appended to, never truncated
    with serving("--journal", str(journal), "--quiet") as (process, url):
        httpx.post(url + "/responses", json=BODY, headers={"authorization": "Bearer sk-secret"}, trust_env=False)
        deadline = time.monotonic() + CEILING
        while not journal.read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert journal.read_text().count("\n") == 1  # on disk while the server runs
        ws_two_requests(url)
        stop(process)
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [record["id"] for record in records] == [0, 1, 2, 3]
    first = records[0]
    assert set(first) >= {
        "id", "started_at", "ms", "transport", "connection_id", "kind", "model", "previous_response_id",
        "response_id", "status", "events", "outcome", "replayed", "headers", "request",
    }  # fmt: skip
    assert (first["transport"], first["kind"], first["model"], first["status"]) == ("http", "full", "gpt-5", 200)
    assert first["outcome"]["kind"] == "completed" and first["events"] == first["outcome"]["events_sent"] > 0
    assert first["request"] == BODY
    assert first["headers"]["authorization"] == "<redacted>" and "sk-secret" not in journal.read_text()
    assert [record["kind"] for record in records[1:]] == ["full", "incremental", "warmup"]
    assert records[2]["previous_response_id"] == records[1]["response_id"]
    assert records[1]["connection_id"] == records[2]["connection_id"] is not None


def test_ready_file_gives_port_urls_and_pid_once_listening_and_is_removed_at_exit(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    with serving("--ready-file", str(ready)) as (process, url):
        info = json.loads(ready.read_text())  # written before the URLs were printed
        assert info == {
            "port": int(url.rsplit(":", 1)[1].split("/")[0]),
            "http_url": url,
            "ws_url": url.replace("http://", "ws://"),
            "admin_url": url.removesuffix("/v1") + "/__rrkit",
            "pid": process.pid,
        }
        assert httpx.post(info["http_url"] + "/responses", json=BODY, trust_env=False).status_code == 200
        assert not list(tmp_path.glob(".*.tmp"))
        stop(process)
    assert not ready.exists()


def test_record_prints_lines_and_writes_the_ready_file(tmp_path: Path) -> None:
    cassette, ready = tmp_path / "session.json", tmp_path / "ready.json"
    with serving() as (upstream, upstream_url):
        args = ("--upstream", upstream_url, "--cassette", str(cassette), "--ready-file", str(ready))
        with serving(*args, command="record") as (process, url):
            assert json.loads(ready.read_text())["http_url"] == url
            httpx.post(url + "/responses", json=BODY, trust_env=False)
            out, _ = stop(process)
        stop(upstream)
    assert next(line for line in out.splitlines() if LINE.match(line)).split()[1:3] == ["http", "full"]
    assert "(1 exchange recorded)" in out and not ready.exists()


BROKEN_SCRIPT = """\
name: broken
default:
  output: [{text: "clean"}]
responses:
  - times: 2
    events:  # no response.in_progress; a response.failed whose response says it completed, with no error
      - event: {type: response.created, sequence_number: 0, response: {id: resp_b, status: in_progress}}
      - event: {type: response.output_item.added, sequence_number: 1, output_index: 0,
                item: {type: message, id: msg_b, role: assistant, content: []}}
      - event: {type: response.output_item.done, sequence_number: 2, output_index: 0,
                item: {type: message, id: msg_b, role: assistant, content: []}}
      - event: {type: response.failed, sequence_number: 3, response: {id: resp_b, status: completed, error: null}}
"""


def test_serve_and_record_lines_say_which_rules_a_stream_breaks_and_a_clean_one_none(tmp_path: Path) -> None:
    """The server's own check of what it sent (a script's verbatim events), and the recorder's of what an upstream
    sent: the line names the rules as `rrkit validate` does."""
    script = tmp_path / "broken.yaml"
    script.write_text(BROKEN_SCRIPT)
    with serving("--script", str(script)) as (upstream, upstream_url):
        cassette = tmp_path / "session.json"
        with serving("--upstream", upstream_url, "--cassette", str(cassette), command="record") as (proxy, url):
            httpx.post(url + "/responses", json=BODY, trust_env=False)
            recorded, _ = stop(proxy)
        for _ in range(2):  # the broken reply's second use, then the default reply: clean
            httpx.post(upstream_url + "/responses", json=BODY, trust_env=False)
        served, _ = stop(upstream)
    lines = [line for line in served.splitlines() if LINE.match(line)]
    assert len(lines) == 3  # the relayed request, the one sent direct, the clean one
    assert all(line.endswith("  breaks in_progress, terminal_state") for line in lines[:2]), lines
    assert "breaks" not in lines[2], lines
    proxied = next(line for line in recorded.splitlines() if LINE.match(line))
    assert proxied.endswith("  breaks in_progress, terminal_state"), recorded


def test_a_check_that_fails_on_what_a_peer_sent_says_so_and_the_log_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(exchange: Exchange) -> list[str]:
        raise RecursionError("nested too deeply")

    monkeypatch.setattr(self_check, "broken_rules", failing)
    lines: list[str] = []
    printer = LinePrinter(lines.append, after=self_check.breaks_text)
    for _ in range(2):
        printer(exchange(Outcome(OutcomeKind.COMPLETED, 3)))
    printer.close()
    assert [line.endswith("  unchecked (RecursionError)") for line in lines] == [True, True]


# -- the line and the record, from a captured exchange ----------------------------------------------------


def exchange(outcome: Outcome, **wire: object) -> Exchange:
    made = Capture().new_exchange("http", {"Authorization": "Bearer x", "x-api-key": "k"}, {"model": "m", **wire})
    made.started_at = time.time() - 0.038
    made.outcome = outcome
    return made


@pytest.mark.parametrize(
    ("outcome", "says"),
    [
        (Outcome(OutcomeKind.COMPLETED, 14, status=200), "completed"),
        (Outcome(OutcomeKind.FAILED, 3, code="context_length_exceeded"), "failed context_length_exceeded"),
        (Outcome(OutcomeKind.REFUSED, status=429, code="rate_limit_exceeded"), "refused 429 rate_limit_exceeded"),
        (Outcome(OutcomeKind.INCOMPLETE, 5, reason="max_output_tokens"), "incomplete max_output_tokens"),
        (Outcome(OutcomeKind.DROPPED, 3), "dropped"),
    ],
)
def test_the_line_says_the_outcome_with_its_code_or_status(outcome: Outcome, says: str) -> None:
    line = exchange(outcome, previous_response_id="resp_1")
    match = LINE.match(exchange_line(line))
    assert match is not None, exchange_line(line)
    assert match.group(3) == "incr" and match.group(5) == str(outcome.events_sent)
    assert match.group(6) == says
    assert 30 <= int(match.group(7)) < 1000


def test_the_record_redacts_secret_headers_and_is_json() -> None:
    record = exchange_record(exchange(Outcome(OutcomeKind.COMPLETED, 2)))
    assert record["headers"] == {"Authorization": "<redacted>", "x-api-key": "<redacted>"}
    assert json.loads(json.dumps(record)) == record


def test_a_stdout_nobody_reads_never_blocks_the_server() -> None:
    release = threading.Event()

    def write(line: str) -> None:
        release.wait(60)

    printer = LinePrinter(write, limit=3)
    made = exchange(Outcome(OutcomeKind.COMPLETED, 1))
    begun = time.monotonic()
    for _ in range(20):
        printer(made)
    assert time.monotonic() - begun < 30, "a line waited on the stuck writer"  # it holds each line 60 s
    assert printer.dropped >= 16  # a writer that blocked the caller would have taken them all in the end
    release.set()
    printer.close()


# -- stopping: a second signal never cuts the cassette being written -------------------------------------------


def test_stop_signals_stop_the_start_then_are_held_with_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGINT)  # pytest's own; SIG_IGN in a run started in the background
    with _StopSignals("rrkit: still writing the cassette, please wait") as signals:
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        signals.holding = True
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)
    assert capsys.readouterr().err.count("rrkit: still writing the cassette, please wait") == 2
    assert signal.getsignal(signal.SIGINT) is before


def test_in_the_rrkit_program_a_held_stop_signal_stays_held_after_the_server_is_done(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setattr(_StopSignals, "until_exit", True)
    try:
        with _StopSignals("rrkit: stopping") as signals:
            signals.holding = True
        try:
            signal.raise_signal(signal.SIGINT)  # between the server's end and the process's
        except KeyboardInterrupt:
            pytest.fail("a stop signal after the server is done interrupted the rrkit program's exit")
        assert capsys.readouterr().err.count("rrkit: stopping") == 1
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def recording(tmp_path: Path, requests: int, command: str = "serve") -> tuple[subprocess.Popen[str], Path]:
    script, cassette = tmp_path / "big.yaml", tmp_path / "session.json"
    script.write_text(BIG_SCRIPT)
    process, url = start("--script", str(script), "--cassette", str(cassette), "--record-mode", "all", "--quiet")
    with httpx.Client(trust_env=False, timeout=10) as client:
        for number in range(requests):
            client.post(url + "/responses", json={**BODY, "input": f"question {number}"})
    return process, cassette


def finish(process: subprocess.Popen[str], began: float) -> tuple[str, str]:
    out, err = process.communicate(timeout=CEILING)
    assert_stopped_quietly(time.monotonic() - began, process.returncode, err)
    return out, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_50_ms_after_the_first_still_writes_the_whole_cassette(
    tmp_path: Path, sig: signal.Signals
) -> None:
    process, cassette = recording(tmp_path, 40)
    began = time.monotonic()
    process.send_signal(sig)
    time.sleep(0.05)
    process.send_signal(sig)
    out, _ = finish(process, began)
    assert f"rrkit: wrote {cassette} (40 exchanges recorded)" in out
    assert len(load_cassette(cassette).exchanges) == 40


def test_a_signal_while_the_cassette_is_written_is_held_with_a_message(tmp_path: Path) -> None:
    process, cassette = recording(tmp_path, 150)
    began = time.monotonic()
    process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + CEILING
    while not list(tmp_path.glob(".session.json.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.001)  # the write has begun: its temporary file is there
    process.send_signal(signal.SIGINT)
    out, err = finish(process, began)
    assert "rrkit: still writing the cassette, please wait" in err
    assert err.count("\n") == 1, err
    assert len(load_cassette(cassette).exchanges) == 150
    assert out.rstrip().endswith(f"rrkit: wrote {cassette} (150 exchanges recorded)")
    assert not list(tmp_path.glob(".session.json.*.tmp"))

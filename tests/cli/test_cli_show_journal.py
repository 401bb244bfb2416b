"""`rrkit show` for a `rrkit serve --journal` file: one line per exchange the filters keep (the serve log's line,
read from the record), then `N of TOTAL exchanges`; `--json` prints the records; a last line cut by a crash is a
warning and the rest is shown; a line that is not UTF-8 or not JSON is a file error naming the file and line; the
filters given for a cassette are a usage error. The journal is written by `JournalFile` from a real server's
exchanges (and a session's, made in the session's own capture)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from rrkit.cli import main
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.script import parse_script
from rrkit.server import Exchange
from rrkit.server.capture import Capture
from rrkit.server.exchange_log import JournalFile, exchange_line, exchange_record, record_line

from ..errortrap import Serve

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "cassettes" / "text.http.json"
SCRIPT = {
    "responses": [{"when": {"model": "gpt-limited"}, "reject": {"status": 429}, "repeat": True}],
    "default": {"output": [{"text": "hi"}]},
}


@pytest.fixture(scope="module")
def exchanges() -> Iterator[list[Exchange]]:
    """A real server's exchanges (creates that complete or are refused 429 or 400, retrieves, model lists), then
    two of the session `ci-7`."""
    serve = Serve()
    server = serve(parse_script(SCRIPT))
    with httpx.Client(timeout=10.0, trust_env=False) as client:
        for n in range(30):
            model = ("gpt-a", "gpt-limited", "gpt-b")[n % 3]
            created = client.post(server.http_url + "/responses", json={"model": model, "input": "hi"})
            if created.status_code == 200:
                client.get(f"{server.http_url}/responses/{created.json()['id']}")
            if n % 5 == 0:
                client.get(server.http_url + "/models")
                client.post(server.http_url + "/responses", json={"model": 5, "input": "hi"})
        server.settle()
    session = Capture(session="ci-7")
    for _ in range(2):
        exchange = session.new_exchange("http", {}, {"model": "gpt-limited", "input": "hi"})
        exchange.response_status = 429
        exchange.outcome = Outcome(OutcomeKind.REFUSED, status=429, code="rate_limit_exceeded")
    yield [*server.exchanges, *session.exchanges]
    serve.finish()


@pytest.fixture
def journal(tmp_path: Path, exchanges: list[Exchange]) -> Path:
    path = tmp_path / "exchanges.jsonl"
    warned: list[str] = []
    write = JournalFile(path, warned.append)
    for exchange in exchanges:
        write(exchange)
    write.close()
    assert not warned
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def show(*args: str) -> Result:
    return CliRunner().invoke(main, ["show", *args])


def shown(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_a_journal_line_is_the_serve_logs_line_read_from_the_record(exchanges: list[Exchange]) -> None:
    now = time.time()
    for exchange in exchanges:
        assert record_line(exchange_record(exchange, now)) == exchange_line(exchange, now)


def test_show_prints_each_matching_exchange_then_how_many_of_all(journal: Path) -> None:
    everything = records(journal)
    refused = [record for record in everything if record["outcome"].get("status") == 429]
    lines = shown(show(str(journal), "--status", "429"))
    assert lines == [*map(record_line, refused), f"{len(refused)} of {len(everything)} exchanges"]
    assert len(refused) == 12 and all("refused 429" in line for line in lines[:-1])


@pytest.mark.parametrize(
    ("options", "wanted"),
    [
        (("--route", "responses.retrieve", "--method", "get"), lambda r: r["route"] == "responses.retrieve"),
        (("--route", "models.list"), lambda r: r["route"] == "models.list"),
        (("--status", "4xx", "--model", "gpt-limited"), lambda r: r["model"] == "gpt-limited"),
        (("--outcome", "REFUSED", "--status", "400"), lambda r: r["status"] == 400),
        (("--session", "ci-7"), lambda r: r["session"] == "ci-7"),
        (("--since", "10", "--until", "20"), lambda r: 10 < r["id"] <= 20),
        (("--model", "gpt-none"), lambda r: False),
    ],
)
def test_each_filter_option_keeps_exactly_the_matching_records(
    journal: Path, options: tuple[str, ...], wanted: Any
) -> None:
    everything = records(journal)
    expected = [record for record in everything if wanted(record)]
    assert shown(show(str(journal), *options)) == [
        *map(record_line, expected),
        f"{len(expected)} of {len(everything)} exchanges",
    ]


def test_since_and_until_times_bound_the_start_inclusive_and_exclusive(journal: Path) -> None:
    everything = records(journal)
    first, last = everything[5]["started_at"], everything[40]["started_at"]
    expected = [r["id"] for r in everything if first <= r["started_at"] < last]
    result = show(str(journal), "--json", "--since", f"{first:.6f}", "--until", f"{last:.6f}")
    assert [json.loads(line)["id"] for line in shown(result)] == expected


def test_json_prints_the_matching_records_as_written_and_the_count_on_stderr(journal: Path) -> None:
    lines = journal.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["route"] == "models.list"]
    result = show(str(journal), "--route", "models.list", "--json")
    assert shown(result) == kept
    assert result.stderr.strip() == f"{len(kept)} of {len(lines)} exchanges"


def test_a_journal_is_told_by_its_content_whatever_its_name(journal: Path, tmp_path: Path) -> None:
    other = tmp_path / "served.log"
    other.write_bytes(journal.read_bytes())
    assert shown(show(str(other), "--status", "429"))[-1].endswith(f"of {len(records(journal))} exchanges")


@pytest.mark.parametrize(
    "cut", [b'{"id": 99, "started_at": 1765098000.1, "ou', '{"id": 99, "model": "caf\u00e9'.encode()[:-1]]
)
def test_a_last_line_cut_by_a_crash_is_a_warning_and_the_rest_is_shown(journal: Path, cut: bytes) -> None:
    count = len(records(journal))
    with journal.open("ab") as handle:
        handle.write(cut)
    result = show(str(journal))
    assert shown(result)[-1] == f"{count} of {count} exchanges"
    assert f"{journal}: line {count + 1}: the last line is cut" in result.stderr


def test_a_line_that_is_not_utf8_is_a_file_error_naming_the_file_and_line(journal: Path) -> None:
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines[:3], lines[3].replace(b'"http"', b'"htt\xff"'), *lines[4:]]))
    result = show(str(journal))
    assert result.exit_code == 2
    assert f"{journal}: line 4: byte offset" in result.stderr and "not UTF-8" in result.stderr
    assert "Traceback" not in result.output


def test_a_line_that_is_not_json_before_the_last_is_a_file_error_naming_it(journal: Path) -> None:
    lines = journal.read_text(encoding="utf-8").splitlines(keepends=True)
    journal.write_text("".join([*lines[:2], lines[2][:40] + "\n", *lines[3:]]), encoding="utf-8")
    result = show(str(journal))
    assert result.exit_code == 2 and f"{journal}: line 3: not JSON" in result.stderr


def test_a_recordings_journal_is_named_as_one_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "session.json.123.journal.jsonl"
    path.write_text('{"rrkit_journal": 1, "name": "session"}\n', encoding="utf-8")
    result = show(str(path))
    assert result.exit_code == 2 and "rrkit recover" in result.stderr


@pytest.mark.parametrize("options", [("--status", "429"), ("--json",), ("--since", "3", "--route", "models.list")])
def test_filters_given_for_a_cassette_are_a_usage_error(options: tuple[str, ...]) -> None:
    result = show(str(CASSETTE), *options)
    assert result.exit_code == 2 and "apply to journal files" in result.stderr, result.output


def test_a_bad_filter_value_is_a_usage_error_naming_the_option(journal: Path) -> None:
    result = show(str(journal), "--route", "create")
    assert result.exit_code == 2
    assert "'--route'" in result.stderr and "did you mean responses.create" in result.stderr


def test_html_is_for_a_cassette_not_a_journal(journal: Path, tmp_path: Path) -> None:
    result = show(str(journal), "--html", str(tmp_path / "page.html"))
    assert result.exit_code == 2 and "--html" in result.stderr

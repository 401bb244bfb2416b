"""Numbers that are not numbers (issue 65), on every surface that reads one from text: a query's `limit` of input
items and conversation items, a resumed stream's `starting_after`, the admin API's `limit` and journal filters
(`since`, `until`, `status`), `rrkit show FILE.jsonl`'s filter options, a `--limit` size, an `--ignore` path's index
and a `--chaos` setting. A digit Python calls a digit but `int()` refuses (`²`), another script's digit `int()` takes
(`٣`), a sign, spaces, `_`, and thousands of digits (past the interpreter's 4,300-digit conversion limit) are each the
API's 400 naming the parameter on a real server (never a 500, never taken), and a usage error (exit 2) naming the
option on the command line (never a traceback)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.protocol.exceptions import SettingError
from rrkit.protocol.numbers import MAX_DIGITS, integer
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.protocol.resources import MAX_PAGE_LIMIT
from rrkit.server import FakeServer
from rrkit.server.capture import Capture
from rrkit.server.exchange_log import JournalFile

from . import shared_server

pytestmark = pytest.mark.hostile
server = shared_server.server  # the module's fixtures
client = shared_server.client

THOUSANDS = "7" * 5000
NOT_NUMBERS = ["²", "٣", "\uff15", THOUSANDS, "+5", " 5", "5 ", "1_0", "0x10", "5.0", "-1", "1e3"]
"""Not a count: each of them reached `int()` (a 500), or was taken by it (`٣` as 3), before issue 65."""


def refusal(answer: httpx.Response, param: str) -> str:
    """The message of the API's 400 naming `param` (anything else fails)."""
    assert answer.status_code == 400, (answer.status_code, answer.text[:300])
    error = answer.json()["error"]
    assert error["param"] == param and param in error["message"], error
    assert error["type"] == "invalid_request_error"
    message: str = error["message"]
    assert len(message) < 500, "a refused value is quoted in part, not whole"
    return message


@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
def test_a_page_limit_that_is_not_a_count_is_the_api_s_400_naming_limit(
    server: FakeServer, client: httpx.Client, value: str
) -> None:
    created = client.post(server.http_url + "/responses", json={"model": "m", "input": "hi"}).json()
    conversation = client.post(server.http_url + "/conversations", json={}).json()
    for path in (f"/responses/{created['id']}/input_items", f"/conversations/{conversation['id']}/items"):
        refusal(client.get(server.http_url + path, params={"limit": value}), "limit")


def test_a_page_limit_in_range_still_pages(server: FakeServer, client: httpx.Client) -> None:
    created = client.post(server.http_url + "/responses", json={"model": "m", "input": "hi"}).json()
    path = f"{server.http_url}/responses/{created['id']}/input_items"
    for limit in ("1", str(MAX_PAGE_LIMIT)):
        answer = client.get(path, params={"limit": limit})
        assert answer.status_code == 200 and len(answer.json()["data"]) == 1, answer.text
    for outside in ("0", str(MAX_PAGE_LIMIT + 1)):
        assert f"from 1 to {MAX_PAGE_LIMIT}" in refusal(client.get(path, params={"limit": outside}), "limit")


@pytest.mark.parametrize("value", ["²", "٣", THOUSANDS, "+5", "1_0"], ids=repr)
def test_a_resumed_stream_s_starting_after_that_is_not_an_integer_is_a_400_naming_it(
    server: FakeServer, client: httpx.Client, value: str
) -> None:
    created = client.post(server.http_url + "/responses", json={"model": "m", "input": "hi", "background": True})
    path = f"{server.http_url}/responses/{created.json()['id']}"
    refusal(client.get(path, params={"stream": "true", "starting_after": value}), "starting_after")


@pytest.mark.parametrize("param", ["limit", "since", "until", "status"])
@pytest.mark.parametrize("value", ["²", "٣", THOUSANDS, "+5", "1_0", "9" * 30 + ".5"], ids=repr)
def test_an_admin_query_number_that_is_not_one_is_a_400_naming_it(
    server: FakeServer, client: httpx.Client, param: str, value: str
) -> None:
    admin = server.http_url.removesuffix("/v1") + "/__rrkit"
    message = refusal(client.get(admin + "/exchanges", params={param: value}), param)
    if value == THOUSANDS:
        assert "5000 characters" in message
    if param == "limit":
        refusal(client.get(admin + "/unmatched", params={param: value}), param)


def test_admin_filters_in_range_still_filter(server: FakeServer, client: httpx.Client) -> None:
    admin = server.http_url.removesuffix("/v1") + "/__rrkit"
    for _ in range(2):
        client.post(server.http_url + "/responses", json={"model": "m", "input": "hi"})
    ids = [one["id"] for one in client.get(admin + "/exchanges").json()["data"]]
    kept = client.get(admin + "/exchanges", params={"since": str(ids[0]), "until": "9" * MAX_DIGITS, "limit": "1"})
    assert kept.status_code == 200 and [one["id"] for one in kept.json()["data"]] == [ids[1]], kept.text
    by_time = client.get(admin + "/exchanges", params={"since": "0.5", "status": "200"})
    assert by_time.status_code == 200 and by_time.json()["total"] >= 1


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """A journal of two exchanges, as `rrkit serve --journal` writes it."""
    capture = Capture()
    for status in (200, 429):
        exchange = capture.new_exchange("http", {}, {"model": "m", "input": "hi"})
        exchange.response_status = status
        exchange.outcome = Outcome(OutcomeKind.COMPLETED if status == 200 else OutcomeKind.REFUSED, status=status)
    path = tmp_path / "exchanges.jsonl"
    write = JournalFile(path, pytest.fail)
    for exchange in capture.exchanges:
        write(exchange)
    write.close()
    return path


@pytest.mark.parametrize(
    ("option", "value"),
    [("since", THOUSANDS), ("until", THOUSANDS), ("status", THOUSANDS), ("since", "9" * 30 + ".5"), ("status", "²")],
    ids=["since-digits", "until-digits", "status-digits", "since-seconds", "status-superscript"],
)
def test_rrkit_show_s_filter_that_is_not_a_number_is_a_usage_error_naming_the_option(
    journal: Path, option: str, value: str
) -> None:
    result = CliRunner().invoke(main, ["show", str(journal), f"--{option}", value])
    assert result.exit_code == 2, result.output
    assert f"--{option}" in result.output and "Traceback" not in result.output
    shown = CliRunner().invoke(main, ["show", str(journal), "--status", "4xx", "--since", "0"])
    assert shown.exit_code == 0 and "1 of 2 exchanges" in shown.output, shown.output


def test_one_reader_takes_only_ascii_digits_of_a_bounded_length_in_the_range_stated() -> None:
    assert integer("42", "n") == 42 and integer("-7", "n", low=-10) == -7
    assert integer("9" * MAX_DIGITS, "n") == 10**MAX_DIGITS - 1
    for value in [*NOT_NUMBERS, "", "-", "9" * (MAX_DIGITS + 1), "11"]:
        with pytest.raises(ValueError, match="Invalid 'n'"):
            integer(value, "n", high=10)


CASSETTE = str(Path(__file__).resolve().parents[2] / "cassettes" / "text.http.json")


@pytest.mark.parametrize(
    ("args", "environment", "named"),
    [
        (["diff", CASSETTE, CASSETTE, "--ignore", f"input[{THOUSANDS}]"], {}, "over 18 digits"),
        (["serve", "--port", "0", "--limit", f"body={THOUSANDS}"], {}, "--limit"),
        (["show", CASSETTE], {"RRKIT_LIMITS": "cassette-file=٣MiB"}, "RRKIT_LIMITS"),
    ],
    ids=["ignore-index", "limit-digits", "limit-arabic-indic"],
)
def test_a_number_on_the_command_line_that_is_not_one_is_a_usage_error(
    args: list[str], environment: dict[str, str], named: str
) -> None:
    result = CliRunner().invoke(main, args, env=environment)
    assert result.exit_code == 2 and named in result.output, result.output[-500:]


@pytest.mark.parametrize("chaos", ["seed=٣", "drop=\uff11", "retry_after=1_0", f"seed={THOUSANDS}"])
def test_a_chaos_setting_that_is_not_a_number_is_refused_naming_it(chaos: str) -> None:
    name = chaos.partition("=")[0]
    with pytest.raises(SettingError, match=f"chaos {name}="):
        FakeServer(chaos=chaos)

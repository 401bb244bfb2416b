"""Journal queries on `GET /__rrkit/exchanges`: each filter (route, method, status or its class, outcome, model,
since / until as an exchange id or a time) and their combinations keep exactly the exchanges an independent
reading of the whole list keeps, with the right `total`, with and without `limit`; a bad value is a 400 naming
its parameter. The journal is 10,000 real requests over HTTP to a real server. And the one filter model itself:
how it reads times and ids, and that an exchange and its journal record always agree."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.protocol.routes import MODELS_LIST, RETRIEVE
from rrkit.script import parse_script
from rrkit.server import FakeServer
from rrkit.server.capture import Capture
from rrkit.server.exchange_filter import ExchangeFilter, FilterError
from rrkit.server.exchange_log import exchange_record

from ..errortrap import Serve

EXCHANGES = 10_000
SCRIPT = {
    "responses": [
        {"when": {"model": "gpt-limited"}, "reject": {"status": 429, "code": "rate_limit_exceeded"}, "repeat": True},
        {"when": {"model": "gpt-broken"}, "fail": {"code": "server_error"}, "repeat": True},
    ],
    "default": {"output": [{"text": "hi"}]},
}
Summary = dict[str, Any]


def _send_one(client: httpx.Client, url: str, rng: random.Random, responses: list[str]) -> None:
    """One request of a mix: warmup creates of two models, a 429, a failed response, a 400, retrieves of known and
    unknown responses, model lists, deletes."""
    pick = rng.random()
    if pick < 0.35:
        answer = client.post(url + "/responses", json={"model": rng.choice(["gpt-a", "gpt-b"]), "generate": False})
        responses.append(answer.json()["id"])
    elif pick < 0.45:
        client.post(url + "/responses", json={"model": "gpt-limited", "input": "hi"})
    elif pick < 0.50:
        client.post(url + "/responses", json={"model": "gpt-broken", "input": "hi"})
    elif pick < 0.55:
        client.post(url + "/responses", json={"model": 5, "input": "hi"})
    elif pick < 0.75 and responses:
        client.get(f"{url}/responses/{rng.choice(responses)}")
    elif pick < 0.80:
        client.get(url + "/responses/resp_unknown")
    elif pick < 0.97:
        client.get(url + "/models")
    else:
        client.delete(f"{url}/responses/{responses.pop() if responses else 'resp_gone'}")


@pytest.fixture
def journal() -> Iterator[tuple[FakeServer, list[Summary]]]:
    """A server that answered EXCHANGES real requests (about 10 s on a loaded 2-core machine), and its whole
    unfiltered list of summaries."""
    serve = Serve()
    server = serve(parse_script(SCRIPT))
    rng, responses = random.Random(7), list[str]()
    with httpx.Client(timeout=30.0, trust_env=False) as client:
        for _ in range(EXCHANGES):
            _send_one(client, server.http_url, rng, responses)
        server.settle()
        listing = client.get(server.admin_url + "/exchanges").json()
    assert listing["total"] == len(listing["data"]) == EXCHANGES
    yield server, listing["data"]
    serve.finish()


def status_of(summary: Summary) -> int | None:
    outcome = summary["outcome"] or {}
    return outcome.get("status") if outcome.get("status") is not None else summary["status"]


def time_between(summaries: list[Summary], near: int) -> float:
    """A time between two exchanges' starts (from exchange `near` on), clear of both by more than the rounding."""
    for before, after in zip(summaries[near:], summaries[near + 1 :], strict=False):
        if after["started_at"] - before["started_at"] > 20e-6:
            return float(before["started_at"] + after["started_at"]) / 2
    raise AssertionError("no gap between exchanges")


def iso(at: float, zone: str = "Z") -> str:
    """`at` in ISO 8601: `...Z`, `...+00:00`, or with no offset at all (`zone=""`)."""
    return datetime.fromtimestamp(at, UTC).replace(tzinfo=None).isoformat() + zone


def queries(summaries: list[Summary]) -> list[tuple[str, Callable[[Summary], bool]]]:
    """Each query, and the same question asked of a summary without the filter's code."""
    early, late = time_between(summaries, 2_500), time_between(summaries, 7_500)
    return [
        ("route=responses.create", lambda s: s["route"] == "responses.create"),
        ("route=responses.retrieve", lambda s: s["route"] == RETRIEVE),
        ("route=models.list", lambda s: s["route"] == MODELS_LIST),
        ("method=get", lambda s: s["method"] == "GET"),
        ("method=DELETE", lambda s: s["method"] == "DELETE"),
        ("status=429", lambda s: status_of(s) == 429),
        ("status=400", lambda s: status_of(s) == 400),
        ("status=4xx", lambda s: 400 <= (status_of(s) or 0) < 500),
        ("status=2XX", lambda s: 200 <= (status_of(s) or 0) < 300),
        ("outcome=refused", lambda s: s["outcome"]["kind"] == "refused"),
        ("outcome=failed", lambda s: s["outcome"]["kind"] == "failed"),
        ("outcome=answered", lambda s: s["outcome"]["kind"] == "answered"),
        ("model=gpt-a", lambda s: s["model"] == "gpt-a"),
        ("since=6000", lambda s: s["id"] > 6000),
        ("until=1234", lambda s: s["id"] <= 1234),
        ("since=3000&until=3100", lambda s: 3000 < s["id"] <= 3100),
        (f"since={early:.6f}", lambda s: s["started_at"] >= early),
        (f"until={iso(late)}", lambda s: s["started_at"] < late),
        (f"since={iso(early, '+00:00')}&until={late:.6f}", lambda s: early <= s["started_at"] < late),
        (f"until={iso(early, '')}", lambda s: s["started_at"] < early),  # no offset: UTC
        ("route=responses.retrieve&status=404", lambda s: s["route"] == RETRIEVE and status_of(s) == 404),
        ("method=POST&outcome=refused&status=429", lambda s: s["method"] == "POST" and status_of(s) == 429),
        ("model=gpt-b&since=5000", lambda s: s["model"] == "gpt-b" and s["id"] > 5000),
        (
            f"status=4xx&route=responses.create&since={early:.6f}&until=9000",
            lambda s: (
                400 <= (status_of(s) or 0) < 500
                and s["route"] == "responses.create"
                and s["started_at"] >= early
                and s["id"] <= 9000
            ),
        ),
        ("model=gpt-none", lambda s: False),
    ]


def params_of(query: str) -> dict[str, str]:
    """`a=1&b=2` as parameters, to be sent URL-encoded (an ISO time's `+` must reach the server as one)."""
    return dict(pair.split("=", 1) for pair in query.split("&") if pair)


def listing(server: FakeServer, query: str) -> dict[str, Any]:
    answer = httpx.get(f"{server.admin_url}/exchanges", params=params_of(query), timeout=30.0, trust_env=False)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def ids(page: dict[str, Any]) -> list[int]:
    return [summary["id"] for summary in page["data"]]


def the_journal_mixes_routes_methods_statuses_outcomes_and_models(
    journal: tuple[FakeServer, list[Summary]],
) -> None:
    _, summaries = journal
    assert {s["route"] for s in summaries} == {
        "responses.create",
        "responses.retrieve",
        "responses.delete",
        "models.list",
    }
    assert {s["method"] for s in summaries} == {"POST", "GET", "DELETE"}
    assert {status_of(s) for s in summaries} >= {200, 400, 404, 429}
    assert {s["outcome"]["kind"] for s in summaries} == {"completed", "failed", "refused", "answered"}
    assert {s["path"] for s in summaries} >= {"/responses", "/models", "/responses/resp_unknown"}


def each_filter_and_combination_keeps_exactly_the_matching_exchanges_with_their_total(
    journal: tuple[FakeServer, list[Summary]],
) -> None:
    server, summaries = journal
    for query, wanted in queries(summaries):
        expected = [s["id"] for s in summaries if wanted(s)]
        page = listing(server, query)
        assert (ids(page), page["total"], page["has_more"]) == (expected, len(expected), False), query
        assert (page["first_id"], page["last_id"]) == (expected[0], expected[-1]) if expected else (None, None)


def limit_keeps_the_total_of_every_match_and_pages_from_since_or_shows_the_most_recent(
    journal: tuple[FakeServer, list[Summary]],
) -> None:
    server, summaries = journal
    for query, wanted in queries(summaries):
        expected = [s["id"] for s in summaries if wanted(s)]
        starts = "since=" in query
        page = listing(server, query + "&limit=25")
        assert ids(page) == (expected[:25] if starts else expected[-25:]), query
        assert (page["total"], page["has_more"]) == (len(expected), len(expected) > 25), query


def a_filtered_listing_pages_through_every_match_by_since_and_last_id(
    journal: tuple[FakeServer, list[Summary]],
) -> None:
    server, summaries = journal
    expected = [s["id"] for s in summaries if status_of(s) == 429]
    seen, since = [], 0
    while True:
        page = listing(server, f"status=429&since={since}&limit=400")
        seen += ids(page)
        if not page["has_more"]:
            break
        since = page["last_id"]
    assert seen == [i for i in expected if i > 0]


@pytest.mark.parametrize(
    ("query", "param", "says"),
    [
        ("route=create", "route", "did you mean responses.create"),
        ("route=responses.creat", "route", "models.list"),
        ("method=G-T", "method", "GET or POST"),
        ("status=6xx", "status", "1xx to 5xx"),
        ("status=42", "status", "100 to 599"),
        ("outcome=exploded", "outcome", "completed, failed"),
        ("since=yesterday", "since", "ISO 8601"),
        ("since=-1", "since", "whole number"),
        ("until=2026-13-45T00:00:00Z", "until", "Unix seconds"),
        ("until=1765098000,5", "until", "decimal point"),
    ],
)
def test_a_bad_filter_value_is_a_400_naming_the_parameter_and_what_to_give(
    serve: Serve, query: str, param: str, says: str
) -> None:
    server = serve()
    answer = httpx.get(f"{server.admin_url}/exchanges", params=params_of(query), trust_env=False)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["param"], error["code"]) == (param, "invalid_query")
    assert error["message"].startswith(param) and says in error["message"], error["message"]


def test_a_summary_names_the_method_path_and_route(serve: Serve) -> None:
    server = serve()
    httpx.get(server.http_url + "/models/gpt-x", trust_env=False)
    server.settle()
    (summary,) = listing(server, "")["data"]
    assert (summary["method"], summary["path"], summary["route"]) == ("GET", "/models/gpt-x", "models.retrieve")


# -- the filter model, without a server ------------------------------------------------------------


def test_a_whole_number_is_an_exchange_id_and_anything_else_a_time() -> None:
    moment = datetime(2026, 12, 7, 9, 0, tzinfo=UTC).timestamp()
    assert ExchangeFilter.parse({"since": "41", "until": "50"}) == ExchangeFilter(after_id=41, up_to_id=50)
    for written in ("2026-12-07T09:00:00Z", "2026-12-07T09:00:00", "2026-12-07T10:00:00+01:00", f"{moment:.1f}"):
        assert ExchangeFilter.parse({"since": written, "until": written}) == ExchangeFilter(since=moment, until=moment)
    assert ExchangeFilter.parse({"since": "2026-12-07"}).since == datetime(2026, 12, 7, tzinfo=UTC).timestamp()


def test_since_a_time_is_inclusive_and_until_a_time_exclusive() -> None:
    capture = Capture()
    exchange = capture.new_exchange("http", {}, {"model": "m"})
    at = exchange.started_at
    assert ExchangeFilter(since=at).matches(exchange) and not ExchangeFilter(until=at).matches(exchange)
    assert ExchangeFilter(until=at + 1e-3).matches(exchange) and not ExchangeFilter(since=at + 1e-3).matches(exchange)


def test_an_empty_value_is_no_filter_and_other_parameters_are_left_alone() -> None:
    assert ExchangeFilter.parse({"status": "", "limit": "5", "full": "1"}) == ExchangeFilter()


def test_a_bad_value_is_a_filter_error_naming_the_parameter() -> None:
    with pytest.raises(FilterError, match=r"^outcome must be .*got 'ok'") as raised:
        ExchangeFilter.parse({"outcome": "ok"})
    assert raised.value.param == "outcome"


def an_exchange_and_its_journal_record_always_agree(journal: tuple[FakeServer, list[Summary]]) -> None:
    server, summaries = journal
    alice = Capture(session="alice").new_exchange("http", {}, {"model": "gpt-a", "input": "hi"})
    alice.response_status, alice.outcome = 429, Outcome(OutcomeKind.REFUSED, status=429, code="rate_limit_exceeded")
    exchanges = [*server.exchanges[:2_000], alice]
    filters = [ExchangeFilter.parse({"since": "0.0"})]
    filters += [ExchangeFilter.parse(params_of(query)) for query, _ in queries(summaries)]
    filters += [
        ExchangeFilter(session="alice"),
        ExchangeFilter(session="alice", status="4xx", outcome=OutcomeKind.REFUSED),
    ]
    for wanted in filters:
        by_exchange = [e.id for e in exchanges if wanted.matches(e)]
        assert by_exchange == [e.id for e in exchanges if wanted.matches(exchange_record(e, time.time()))], wanted
    assert [e.session for e in exchanges if ExchangeFilter(session="alice").matches(exchange_record(e))] == ["alice"]


def test_on_a_journal_of_ten_thousand_exchanges_filters_keep_exactly_the_matches_and_count_their_total(
    journal: tuple[FakeServer, list[Summary]],
) -> None:
    """One test over the one journal (built once: xdist would build it in each worker running a test of it), its
    contracts each a function named for it."""
    the_journal_mixes_routes_methods_statuses_outcomes_and_models(journal)
    each_filter_and_combination_keeps_exactly_the_matching_exchanges_with_their_total(journal)
    limit_keeps_the_total_of_every_match_and_pages_from_since_or_shows_the_most_recent(journal)
    a_filtered_listing_pages_through_every_match_by_since_and_last_id(journal)
    an_exchange_and_its_journal_record_always_agree(journal)

"""`rrkit show`, `validate` and `diff` on exchanges of every route: a retrieve's body is no stream, a resumed stream
(`starting_after=N`) is judged as the tail it is, numbered from N + 1, and exchanges pair by method, path and ids."""

from __future__ import annotations

from rrkit.cassette import Cassette, RecordedExchange
from rrkit.protocol import routes
from rrkit.tools.diff import Kind, diff_cassettes
from rrkit.tools.show import build_timeline
from rrkit.tools.validate import validate_cassette

from ..errortrap import Serve
from .routewalk import record_background_walk


def resumed(cassette: Cassette) -> RecordedExchange:
    return next(e for e in cassette.exchanges if e.query and "starting_after=2" in e.query)


def test_show_names_each_exchange_by_method_and_route_and_finds_nothing_wrong_with_a_resumed_stream(
    serve: Serve,
) -> None:
    cassette = record_background_walk(serve)
    timeline = build_timeline(cassette)
    titles = [view.title for view in timeline.exchanges]
    assert titles[0] == "#0 · http · full"
    assert "#1 · http · GET responses.retrieve" in titles
    assert titles[-2:] == [
        f"#{len(titles) - 2} · http · DELETE responses.delete",
        f"#{len(titles) - 1} · http · GET models.list",
    ]
    stream = next(view for view in timeline.exchanges if view.id == resumed(cassette).id)
    request = dict((row.label, row.text) for row in stream.rows())["request"]
    assert request == f"GET /responses/{cassette.exchanges[0].response_id}?starting_after=2&stream=true · no body"
    assert stream.event_count > 0 and stream.runs[-1].type == "response.completed"
    assert all(view.problems == () for view in timeline.exchanges)
    assert (
        "on other routes: 1 models.list, 1 responses.delete"
        in dict((row.label, row.text) for row in timeline.summary())["exchanges"]
    )


def test_validate_holds_a_resumed_stream_to_its_numbering_from_starting_after_and_a_create_to_every_rule(
    serve: Serve,
) -> None:
    cassette = record_background_walk(serve)
    assert validate_cassette(cassette) == []

    tail = resumed(cassette)
    events = list(tail.events)
    gap = tail.model_copy(update={"events": [*events[:2], *events[3:]]})
    findings = validate_cassette(cassette.model_copy(update={"exchanges": [gap]}))
    assert [(finding.rule, finding.place.event) for finding in findings] == [("sequence", 2)]
    assert "expected sequence_number 5 (resumed after 2), got 6" in findings[0].evidence

    as_create = tail.model_copy(update={"method": "POST", "path": "/responses", "route": routes.CREATE, "query": None})
    rules = {finding.rule for finding in validate_cassette(cassette.model_copy(update={"exchanges": [as_create]}))}
    assert {"sequence", "created_first"} <= rules  # the same events, as a stream from its start, are broken


def test_diff_pairs_route_exchanges_by_method_path_and_ids_and_names_a_changed_path(serve: Serve) -> None:
    first, second = record_background_walk(serve), record_background_walk(serve)
    assert diff_cassettes(first, second).differences == []

    moved = second.model_copy(deep=True)
    moved.exchanges[-2].path = "/responses/resp_somewhereelse"
    differences = diff_cassettes(first, moved).differences
    assert [(d.kind, d.path) for d in differences] == [(Kind.ROUTE, "path[1]")]

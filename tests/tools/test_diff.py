"""`rrkit diff`: two recordings of one session compare equal once normalized, and each kind of change is reported
at its place (connection, exchange, event, field) with both values; its JSON shape, rendering and exit codes."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

from rrkit.cassette import Cassette, cassette_from_capture, load_cassette, save_cassette
from rrkit.cli import main
from rrkit.demo import golden_name, run_demo, run_one
from rrkit.protocol.vocabulary import TRANSPORTS
from rrkit.report.json_text import to_json
from rrkit.script import Match, Script, function_call, load_script, reply, text
from rrkit.script.shipped import script_files
from rrkit.tools.diff import DIFF_FORMAT, Difference, DiffReport, Kind, diff_cassettes
from rrkit.tools.diff_render import report_text

from ..errortrap import Serve

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "cassettes"
FIXTURES = REPO / "fixtures"
CONTEXT = [{"role": "user", "content": "You are in a test."}]
QUESTION = {"role": "user", "content": "Weather in Paris?"}


# -- recordings ---------------------------------------------------------------------------------------------------


async def record_demo_session(serve: Serve, fixture: str, transport: str) -> Cassette:
    """The reference client through a fixture, recorded as captured: random ids, real clocks, a fresh port."""
    script = load_script(FIXTURES / f"{fixture}.yaml")
    async with serve.running(script) as server:
        await run_one(server, script, transport)
        await server.settle_async()
        return cassette_from_capture(server.exchanges, server.connections, name=f"{fixture}.{transport}")


def weather_script(city: str = "Paris", *, drop_after: int | None = None) -> Script:
    answer = reply(text("Sunny, 21C.", chunks=3))
    return (
        Script()
        .add(reply(function_call("get_weather", {"city": city}, chunks=2)))
        .add(answer.drop_after(drop_after) if drop_after is not None else answer, when=tool_output())
    )


def tool_output() -> Match:
    return Match(last_input_type="function_call_output")


def until_done(events: Iterator[Any]) -> tuple[Any, list[dict[str, Any]]]:
    """Reads a stream to its end: the final response (None if it was cut) and the done items as sent."""
    done: list[dict[str, Any]] = []
    try:
        for event in events:
            if event.type == "response.output_item.done":
                done.append(event.item.model_dump(exclude_unset=True))
            if event.type in ("response.completed", "response.failed", "response.incomplete"):
                return event.response, done
    except (openai.APIError, openai.APIConnectionError):
        pass
    return None, done


def record_sdk_session(serve: Serve, script: Script, *, transport: str = "http", incremental: bool = True) -> Cassette:
    """The official SDK through a tool loop: over HTTP two streamed requests; over a WebSocket a warmup, then the
    question and the tool output, each as a delta on the previous response or as the full request."""
    with serve.running(script) as server:
        client = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0)
        if transport == "http":
            _, items = until_done(iter(client.responses.create(model="gpt-test", input=[QUESTION], stream=True)))
            output = {"type": "function_call_output", "call_id": items[0]["call_id"], "output": "21C"}
            history = [QUESTION, *items, output]
            until_done(iter(client.responses.create(model="gpt-test", input=history, stream=True)))
        else:
            with client.responses.connect() as connection:
                connection.response.create(model="gpt-test", input=CONTEXT, generate=False)
                warmup, _ = until_done(iter(connection))
                if incremental:
                    connection.response.create(model="gpt-test", input=[QUESTION], previous_response_id=warmup.id)
                else:
                    connection.response.create(model="gpt-test", input=[*CONTEXT, QUESTION])
                first, items = until_done(iter(connection))
                output = {"type": "function_call_output", "call_id": items[0]["call_id"], "output": "21C"}
                if incremental:
                    connection.response.create(model="gpt-test", input=[output], previous_response_id=first.id)
                else:
                    connection.response.create(model="gpt-test", input=[*CONTEXT, QUESTION, *items, output])
                until_done(iter(connection))
        server.settle()
        closing = time.monotonic() + 30  # settle() waits for outcomes; a socket's close is seen a moment later
        while any(c.status == 101 and c.closed_by is None for c in server.connections) and time.monotonic() < closing:
            time.sleep(0.005)
        return cassette_from_capture(server.exchanges, server.connections, name=f"sdk.{transport}")


def copy_of(cassette: Cassette) -> Cassette:
    return cassette.model_copy(deep=True)


def of_kind(report: DiffReport, kind: Kind) -> list[Difference]:
    return [difference for difference in report.differences if difference.kind is kind]


def place(difference: Difference) -> tuple[Any, ...]:
    a, b = difference.a, difference.b
    return difference.kind.value, a.connection, a.exchange, a.event, b.connection, b.exchange, b.event, difference.path


# -- the same session, recorded twice ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("fixture", ["tool-loop", "example", "http-429-retry-after", "ws-refuse-503"])
async def test_two_recordings_of_the_same_session_made_at_different_times_differ_only_when_strict(
    serve: Serve, fixture: str, transport: str
) -> None:
    first = await record_demo_session(serve, fixture, transport)
    second = await record_demo_session(serve, fixture, transport)

    normalized = diff_cassettes(first, second)
    assert normalized.equal, report_text(normalized, width=120)
    assert len(normalized.pairs) == len(first.exchanges) == len(second.exchanges)

    strict = diff_cassettes(first, second, strict=True)
    assert not strict.equal
    paths = {difference.path for difference in strict.differences}
    assert "events[0].response.id" in paths  # random ids (the clock, in whole seconds, may not have moved)
    assert any(path.endswith(".host") for path in paths)  # another port
    assert Kind.TIMING in {difference.kind for difference in strict.differences}


def test_two_sdk_recordings_of_the_same_script_differ_only_when_strict(serve: Serve) -> None:
    for transport in TRANSPORTS:
        first = record_sdk_session(serve, weather_script(), transport=transport)
        second = record_sdk_session(serve, weather_script(), transport=transport)
        assert diff_cassettes(first, second).equal
        strict = diff_cassettes(first, second, strict=True)
        ids = [d for d in strict.differences if re.fullmatch(r'"(resp|fc|call|msg)_\w+"', d.a.value or "")]
        assert ids, f"{transport}: ids differ when strict"


async def test_every_golden_cassette_equals_a_fresh_demo_recording_of_its_fixture(tmp_path: Path) -> None:
    rows = await run_demo(FIXTURES, record=tmp_path)
    assert all(row.ok for row in rows)
    names = [golden_name(path, transport) for path in script_files(FIXTURES) for transport in TRANSPORTS]
    assert names
    for name in names:
        report = diff_cassettes(load_cassette(GOLDEN / name), load_cassette(tmp_path / name))
        assert report.equal, f"{name}:\n{report_text(report, width=120)}"


# -- each kind of change at its place --------------------------------------------------------------------------------


def test_a_changed_tool_argument_is_reported_in_the_events_and_in_the_next_request(serve: Serve) -> None:
    paris = record_sdk_session(serve, weather_script("Paris"))
    london = record_sdk_session(serve, weather_script("London"))

    report = diff_cassettes(paris, london)

    content = of_kind(report, Kind.CONTENT)
    assert [place(d) for d in content] == [("content", None, 1, None, None, 1, None, "input[1].arguments")]
    assert (content[0].a.value, content[0].b.value) == (r'"{\"city\": \"Paris\"}"', r'"{\"city\": \"London\"}"')
    fields = of_kind(report, Kind.EVENT_FIELD)
    assert fields and {(d.a.exchange, d.b.exchange) for d in fields} == {(0, 0)}
    done = [d for d in fields if d.path.endswith(".arguments") and d.a.event == d.b.event]
    assert done and all("Paris" in (d.a.value or "") and "London" in (d.b.value or "") for d in done)
    assert {d.kind for d in report.differences} <= {Kind.CONTENT, Kind.EVENT_FIELD}


def test_a_missing_event_is_reported_at_its_index_and_the_later_events_stay_aligned(serve: Serve) -> None:
    recorded = record_sdk_session(serve, weather_script())
    cut = copy_of(recorded)
    events = cut.exchanges[1].events = list(cut.exchanges[1].events)  # held compactly, as a loaded cassette's
    index = next(i for i, e in enumerate(events) if e.type == "response.output_text.delta")
    removed = events.pop(index)

    report = diff_cassettes(recorded, cut)

    missing = of_kind(report, Kind.EVENTS)
    assert [place(d) for d in missing] == [("events", None, 1, index, None, 1, None, f"events[{index}]")]
    assert missing[0].b.value is None and missing[0].a.value is not None
    assert removed.event["delta"] in missing[0].a.value
    # B now breaks the stream rules (a gap in sequence_number, a done text its deltas do not add up to)
    assert {d.rule for d in of_kind(report, Kind.PROTOCOL)} == {"sequence", "done_matches_deltas"}
    assert all(d.b.exchange == 1 and d.b.value is not None for d in of_kind(report, Kind.PROTOCOL))
    assert {d.kind for d in report.differences} == {Kind.EVENTS, Kind.PROTOCOL}


def test_a_different_outcome_is_reported_with_both_outcomes_and_the_events_only_one_side_sent(serve: Serve) -> None:
    completed = record_sdk_session(serve, weather_script())
    dropped = record_sdk_session(serve, weather_script(drop_after=5))
    assert dropped.exchanges[1].outcome is not None and dropped.exchanges[1].outcome.kind.value == "dropped"

    report = diff_cassettes(completed, dropped)

    outcome = of_kind(report, Kind.OUTCOME)
    assert [place(d) for d in outcome] == [("outcome", None, 1, None, None, 1, None, "outcome.kind")]
    assert (outcome[0].a.value, outcome[0].b.value) == ('"completed"', '"dropped"')
    missing = of_kind(report, Kind.EVENTS)
    assert [d.a.event for d in missing] == list(range(5, len(completed.exchanges[1].events)))
    assert all(d.b.value is None and d.b.exchange == 1 for d in missing)
    assert report.pairs == [(0, 0), (1, 1)]


def test_a_full_request_where_the_other_sent_a_delta_is_an_incrementality_difference_not_content(serve: Serve) -> None:
    deltas = record_sdk_session(serve, weather_script(), transport="ws", incremental=True)
    full = record_sdk_session(serve, weather_script(), transport="ws", incremental=False)
    assert [e.incremental for e in deltas.exchanges] == [False, True, True]
    assert [e.incremental for e in full.exchanges] == [False, False, False]

    report = diff_cassettes(deltas, full)

    assert [place(d) for d in report.differences] == [
        ("incrementality", 0, 1, None, 0, 1, None, "previous_response_id"),
        ("incrementality", 0, 2, None, 0, 2, None, "previous_response_id"),
    ]
    first = report.differences[0]
    assert first.a.value is not None and first.a.value.startswith("incremental: previous_response_id resp_")
    assert first.b.value == "full: 2 input items"
    assert "B sends the full request where A sent a delta" in first.detail
    assert diff_cassettes(deltas, full, view="logical").equal
    assert [d.kind for d in diff_cassettes(deltas, full, view="wire").differences] == [Kind.INCREMENTALITY] * 2
    reverse = diff_cassettes(full, deltas)
    assert "B sends a delta" in reverse.differences[0].detail


def test_an_id_used_differently_is_a_difference_though_ids_are_normalized(serve: Serve) -> None:
    recorded = record_sdk_session(serve, weather_script(), transport="ws")
    again = copy_of(recorded)
    warmup_id = again.exchanges[0].response_id
    wire = again.exchanges[2].wire_request
    assert wire is not None and warmup_id
    wire["previous_response_id"] = warmup_id  # chained on the warmup instead of the tool call's response

    report = diff_cassettes(recorded, again)

    wire_changes = of_kind(report, Kind.WIRE)
    assert [place(d) for d in wire_changes] == [("wire", 0, 2, None, 0, 2, None, "previous_response_id")]
    assert f"B's {warmup_id} stands for A's {warmup_id}" in wire_changes[0].detail
    assert {d.rule for d in of_kind(report, Kind.PROTOCOL)} == {"rebuilds"}  # B's delta no longer rebuilds


def test_one_missing_exchange_leaves_the_later_exchanges_aligned() -> None:
    golden = load_cassette(GOLDEN / "example.http.json")
    shorter = copy_of(golden)
    removed = shorter.exchanges.pop(1)

    report = diff_cassettes(golden, shorter)

    assert report.pairs == [(0, 0), (1, None), (2, 2)]
    assert [place(d) for d in report.differences] == [("exchange_missing", None, 1, None, None, None, None, "")]
    assert report.differences[0].a.value == f"http exchange {removed.id}, full, 5 events, dropped"
    extra = diff_cassettes(shorter, golden)
    assert [d.kind for d in extra.differences] == [Kind.EXCHANGE_EXTRA]


def test_a_connection_change_is_reported_on_the_connection() -> None:
    golden = load_cassette(GOLDEN / "ws-close-frame.ws.json")
    changed = copy_of(golden)
    changed.connections[0].close_code = 1000

    report = diff_cassettes(golden, changed)

    assert [place(d) for d in report.differences] == [("connection", 0, 0, None, 0, 0, None, "connection.close_code")]
    assert (report.differences[0].a.value, report.differences[0].b.value) == ("1011", "1000")


def test_status_headers_and_turn_state_are_compared_but_per_run_headers_are_not() -> None:
    golden = load_cassette(GOLDEN / "turn-state.http.json")
    changed = copy_of(golden)
    exchange = changed.exchanges[0]
    exchange.response_headers = {**exchange.response_headers, "x-codex-turn-state": "other", "date": "then"}
    exchange.request_headers = {**exchange.request_headers, "x-stainless-os": "Plan9"}
    exchange.response_status = 201

    report = diff_cassettes(golden, changed)

    assert [(d.kind, d.path) for d in report.differences] == [
        (Kind.STATUS, "response_status"),
        (Kind.HEADERS, "response_headers.x-codex-turn-state"),
    ]
    assert len(diff_cassettes(golden, changed, strict=True).differences) == 4


def test_ignored_paths_leave_out_requests_fields_and_reported_paths(serve: Serve) -> None:
    paris = record_sdk_session(serve, weather_script("Paris"))
    london = record_sdk_session(serve, weather_script("London"))

    report = diff_cassettes(paris, london, ignore=["input[*].arguments"])
    assert not of_kind(report, Kind.CONTENT) and of_kind(report, Kind.EVENT_FIELD)

    ignore = ["input[*].arguments", "events[*].delta", "events[*].arguments", "events[*].item", "events[*].response"]
    assert diff_cassettes(paris, london, ignore=ignore).equal
    with pytest.raises(ValueError, match=r"invalid ignore path 'input\[\*\.output'"):
        diff_cassettes(paris, london, ignore=["input[*.output"])


# -- the report -----------------------------------------------------------------------------------------------------


def test_the_json_report_has_a_stable_documented_shape(serve: Serve) -> None:
    deltas = record_sdk_session(serve, weather_script(), transport="ws", incremental=True)
    full = record_sdk_session(serve, weather_script(), transport="ws", incremental=False)
    report = diff_cassettes(deltas, full, names=("a.json", "b.json"))

    written = json.loads(to_json(report.to_report()))
    data = written["detail"]  # the diff's own shape, in the report every judge writes

    assert written["tool"] == "diff" and written["ok"] is False
    assert data == report.to_dict()
    assert list(data) == ["rrkit_diff", "a", "b", "options", "equal", "counts", "pairs", "differences"]
    assert data["rrkit_diff"] == DIFF_FORMAT == 1
    assert data["a"] == {"name": "a.json", "exchanges": 3, "events": deltas.event_count}
    assert data["options"] == {"strict": False, "ignore": [], "view": "both"}
    assert (data["equal"], data["counts"], data["pairs"]) == (False, {"incrementality": 2}, [[0, 0], [1, 1], [2, 2]])
    difference = data["differences"][0]
    assert list(difference) == ["kind", "path", "detail", "a", "b"]
    assert list(difference["a"]) == ["connection", "exchange", "event", "path", "value"]
    assert difference["kind"] == "incrementality" and difference["a"]["exchange"] == 1


def test_the_rendering_shows_a_beside_b_within_80_columns_and_colours_only_on_request(serve: Serve) -> None:
    paris = record_sdk_session(serve, weather_script("Paris"))
    london = record_sdk_session(serve, weather_script("London"))
    report = diff_cassettes(paris, london)

    plain = report_text(report, width=80)

    assert all(len(line) <= 80 for line in plain.splitlines())
    assert "\x1b[" not in plain
    assert "A exchange 1 | B exchange 1" in plain
    line = next(line for line in plain.splitlines() if "Paris" in line and "London" in line)
    assert line.index("Paris") < line.index("London")
    assert re.search(r"\d+ differences: content 1, event_field \d+", plain)
    assert "\x1b[" in report_text(report, width=80, color=True)
    assert "No differences" in report_text(diff_cassettes(paris, paris))


# -- the command line -----------------------------------------------------------------------------------------------


def test_cli_exits_0_without_differences_1_with_them_and_2_on_usage_or_file_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    golden = GOLDEN / "example.http.json"
    shorter = load_cassette(golden)
    shorter.exchanges.pop(1)
    changed = save_cassette(shorter, tmp_path / "changed.json")

    same = runner.invoke(main, ["diff", str(golden), str(golden)])
    assert same.exit_code == 0, same.output
    assert "No differences" in same.output

    differs = runner.invoke(main, ["diff", str(golden), str(changed)])
    assert differs.exit_code == 1
    assert "exchange_missing" in differs.output

    as_json = runner.invoke(main, ["diff", str(golden), str(changed), "--json", "--view", "logical"])
    assert as_json.exit_code == 1
    written = json.loads(as_json.output)
    assert written["tool"] == "diff" and written["counts"]["must"] == 1
    data = written["detail"]
    assert data["options"]["view"] == "logical" and data["counts"] == {"exchange_missing": 1}
    assert data["a"]["name"] == str(golden)

    missing = runner.invoke(main, ["diff", str(golden), str(tmp_path / "nowhere.json")])
    assert missing.exit_code == 2
    assert "nowhere.json: cannot read cassette" in missing.output
    (tmp_path / "broken.json").write_text("{")
    broken = runner.invoke(main, ["diff", str(tmp_path / "broken.json"), str(golden)])
    assert broken.exit_code == 2 and "broken.json: line 1" in broken.output
    bad_path = runner.invoke(main, ["diff", str(golden), str(golden), "--ignore", "input[*.output"])
    assert bad_path.exit_code == 2 and "invalid ignore path" in bad_path.output
    bad_view = runner.invoke(main, ["diff", str(golden), str(golden), "--view", "sideways"])
    assert bad_view.exit_code == 2

    ignored = runner.invoke(main, ["diff", str(golden), str(golden), "--strict", "--ignore", "input[*].output"])
    assert ignored.exit_code == 0, ignored.output


def test_cli_help_shows_an_example() -> None:
    result = CliRunner().invoke(main, ["diff", "--help"])
    assert result.exit_code == 0
    assert "rrkit diff cassettes/tool-loop.ws.json" in result.output
    assert "--strict" in result.output and "--view [logical|wire|both]" in result.output


def test_codex_identity_headers_count_by_presence_not_by_their_per_session_values(serve: Serve) -> None:
    import asyncio

    from rrkit.cassette import cassette_from_capture
    from rrkit.client import Conversation, ModelClient, Prompt
    from rrkit.script import Script, reply
    from rrkit.tools.diff import diff_cassettes

    async def session(session_id: str) -> Cassette:
        async with serve.running(Script(default=reply("Hello."))) as server:
            async with ModelClient(server.http_url, supports_websockets=False, session_id=session_id) as client:
                await Conversation(client, Prompt(model="gpt-test")).run_turn("Hi.")
            await server.settle_async()
            return cassette_from_capture(server.exchanges, server.connections)

    first, second = asyncio.run(session("session-a")), asyncio.run(session("session-b"))
    assert first.exchanges[0].request_headers["session-id"] != second.exchanges[0].request_headers["session-id"]
    assert diff_cassettes(first, second).equal
    assert {d.path for d in diff_cassettes(first, second, strict=True).differences} >= {"request_headers.session-id"}
    first.exchanges[0].request_headers.pop("thread-id")
    (missing,) = [d for d in diff_cassettes(first, second).differences if "thread-id" in d.path]
    assert missing.a.value is None and missing.b.value is not None


def test_presets_compare_requests_as_matching_under_them_sees_them() -> None:
    def in_directory(cwd: str) -> Cassette:
        cassette = load_cassette(GOLDEN / "text.http.json")
        for exchange in cassette.exchanges:
            context = f"<environment_context><cwd>{cwd}</cwd></environment_context>"
            message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]}
            for request in (exchange.logical_request, exchange.wire_request):
                assert request is not None
                request["input"] = [message]
        return cassette

    here, elsewhere = in_directory("/home/a/project"), in_directory("/tmp/elsewhere")
    plain = diff_cassettes(here, elsewhere)
    assert [(d.kind, d.path) for d in plain.differences][:1] == [(Kind.CONTENT, "input[0].content[0].text")]
    assert diff_cassettes(here, elsewhere, presets=("codex",)).equal
    assert not diff_cassettes(here, elsewhere, presets=("codex",), strict=True).equal

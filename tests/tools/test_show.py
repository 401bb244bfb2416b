"""`rrkit show`: a cassette's timeline in the terminal (rich, any width) and as one self-contained HTML page."""

from __future__ import annotations

import io
import itertools
import json
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console

from rrkit.cassette import Cassette, load_cassette, parse_cassette
from rrkit.cli import main
from rrkit.tools.show import build_timeline
from rrkit.tools.show_html import render_html, write_html
from rrkit.tools.show_model import Timeline, Tone
from rrkit.tools.show_terminal import MAX_RUNS, print_timeline

from ..chromium import HOSTILE, dump_dom, needs_chromium

REPO = Path(__file__).resolve().parents[2]
GOLDEN_FILES = sorted((REPO / "cassettes").glob("*.json"))


def terminal(timeline: Timeline, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), force_terminal=False, color_system=None)
    print_timeline(timeline, console)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


def flat(output: str) -> str:
    """The terminal text with the cards' borders taken off and wrapped lines joined again."""
    return " ".join(" ".join(line.strip("│ ").split()) for line in output.splitlines())


def shown(path: Path) -> tuple[Cassette, Timeline, str]:
    cassette = load_cassette(path)
    timeline = build_timeline(cassette, path=str(path))
    return cassette, timeline, terminal(timeline)


def longest_run(types: list[str], kind: str) -> int:
    best = run = 0
    for each in types:
        run = run + 1 if each == kind else 0
        best = max(best, run)
    return best


def event(kind: str, sequence: int, **fields: Any) -> dict[str, Any]:
    return {"at": 0.01 * sequence, "event": {"type": kind, "sequence_number": sequence, **fields}}


def stream(*kinds: str, response_id: str = "resp_1") -> list[dict[str, Any]]:
    entries = []
    for sequence, kind in enumerate(kinds):
        extra: dict[str, Any] = {"response": {"id": response_id}} if kind.count(".") == 1 else {}
        if kind == "response.output_item.added":
            extra = {"output_index": 0, "item": {"type": "message", "id": "msg_1"}}
        if kind == "response.completed":
            extra["response"]["usage"] = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        entries.append(event(kind, sequence, **extra))
    return entries


def synthetic(exchanges: list[dict[str, Any]], connections: list[dict[str, Any]] | None = None, **top: Any) -> Cassette:
    return parse_cassette({"rrkit_cassette": 1, "connections": connections or [], "exchanges": exchanges, **top})


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[path.name for path in GOLDEN_FILES])
def test_every_golden_cassette_renders_each_exchange_with_its_mode_events_and_outcome(path: Path) -> None:
    cassette, _, output = shown(path)
    joined = flat(output)
    assert f"rrkit show: {cassette.name}" in output
    assert f"WebSocket connections ({len(cassette.connections)})" in output
    for exchange in cassette.exchanges:
        mode = "incremental" if exchange.incremental else "full"
        title = f"#{exchange.id} · {exchange.transport}"
        if exchange.connection is not None:
            title += f" conn {exchange.connection}"
        title += f" · {mode}" + (" · warmup" if (exchange.wire_request or {}).get("generate") is False else "")
        assert title in output
        assert exchange.outcome is not None
        assert f"outcome {exchange.outcome.kind.value}, " in joined
        assert f"{exchange.outcome.events_sent} event" in joined
        if exchange.events:
            assert f"events {len(exchange.events)}: {exchange.event_types[0].removeprefix('response.')}" in joined
        runs = [kind for kind, _ in itertools.groupby(exchange.event_types)]
        deltas = longest_run(exchange.event_types, "response.output_text.delta")
        if len(runs) > MAX_RUNS:
            assert f"... ({len(runs) - MAX_RUNS} more runs)" in joined
        elif deltas > 1:
            assert f"{deltas} x output_text.delta" in joined
    assert sum(line.count("incremental") for line in output.splitlines() if " · " in line) == sum(
        exchange.incremental for exchange in cassette.exchanges
    )


def test_drop_mid_stream_over_websocket_shows_the_drop_after_its_events_on_an_incremental_request() -> None:
    cassette, timeline, output = shown(REPO / "cassettes" / "drop-mid-stream.ws.json")
    dropped = next(each for each in cassette.exchanges if each.outcome and each.outcome.kind == "dropped")
    assert dropped.incremental and dropped.outcome is not None
    view = timeline.exchanges[dropped.id]
    assert view.tone is Tone.BAD
    assert f"#{dropped.id} · ws conn {dropped.connection} · incremental" in output
    assert f"dropped, {dropped.outcome.events_sent} events sent" in output
    assert f"{len(dropped.events)}: created, in_progress" in output
    assert "previous resp_1" in flat(output)
    assert "by tcp, no close frame" in output  # the dropped connection; the retry ran on a new one
    assert "outcomes 2 completed, 1 dropped" in flat(output)


def test_compressed_delta_runs_carry_the_count_from_the_cassette() -> None:
    cassette, _, output = shown(REPO / "cassettes" / "delays.ws.json")
    exchange = cassette.exchanges[-1]
    deltas = longest_run(exchange.event_types, "response.output_text.delta")
    assert deltas > 1
    assert f"{deltas} x output_text.delta," in output


def test_connections_show_handshake_turn_state_and_how_they_closed() -> None:
    _, _, example = shown(REPO / "cassettes" / "example.ws.json")
    row = next(line for line in example.splitlines() if line.startswith("#0 "))
    assert "101 accepted" in row and "ts-1" in row and "by tcp, no close frame" in row and "#0, #1, #2" in row
    _, _, close_frame = shown(REPO / "cassettes" / "ws-close-frame.ws.json")
    assert "by server, code 1011 (internal error)" in close_frame
    _, timeline, refused = shown(REPO / "cassettes" / "ws-refuse-426.ws.json")
    assert "426 refused" in refused and "never opened" in refused
    assert timeline.connections[0].tone is Tone.BAD


def test_a_whole_body_answer_shows_its_content_type_size_and_retry_advice() -> None:
    cassette, _, output = shown(REPO / "cassettes" / "http-429-retry-after.http.json")
    body = cassette.exchanges[0].response_body
    assert body is not None
    joined = flat(output)
    assert f"body application/json, {len(body.content)} B, status 429" in joined
    assert "refused, status 429, code rate_limit_exceeded, 0 events sent, retryable after 1 s" in joined


def test_request_sizes_count_input_items_and_json_bytes_of_wire_and_logical() -> None:
    cassette, timeline, output = shown(REPO / "cassettes" / "tool-loop.ws.json")
    exchange = cassette.exchanges[2]
    assert exchange.wire_request is not None and exchange.logical_request is not None
    wire_bytes = len(json.dumps(exchange.wire_request, separators=(",", ":"), ensure_ascii=False).encode())
    view = timeline.exchanges[2]
    assert (view.wire.items, view.wire.bytes) == (len(exchange.wire_request["input"]), wire_bytes)
    assert view.wire.items is not None
    assert view.logical.items == len(exchange.logical_request["input"]) > view.wire.items
    assert f"wire {view.wire.describe()} · logical {view.logical.describe()}" in output


def test_order_violations_are_shown_and_a_cut_stream_is_checked_as_a_prefix() -> None:
    broken = stream("response.in_progress", "response.completed")
    cut = stream("response.created", "response.in_progress")
    cassette = synthetic(
        [
            {"id": 0, "transport": "http", "events": broken, "outcome": {"kind": "completed", "events_sent": 2}},
            {"id": 1, "transport": "http", "events": cut, "outcome": {"kind": "dropped", "events_sent": 2}},
            {"id": 2, "transport": "http", "events": cut, "outcome": {"kind": "completed", "events_sent": 2}},
        ]
    )
    timeline = build_timeline(cassette)
    output = flat(terminal(timeline))
    assert timeline.exchanges[0].problems == (
        "event 0: breaks 'response.created comes first': first event is 'response.in_progress'",
    )
    assert timeline.exchanges[1].problems == ()  # dropped: no terminal event is expected
    assert "no terminal event" in timeline.exchanges[2].problems[0]
    assert "problem event 0: breaks 'response.created comes first'" in output
    assert "problems 2" in output


def test_a_long_list_of_problems_is_cut_short_in_the_terminal_and_kept_whole_in_the_page() -> None:
    entries = [event("response.created", 100, response={"id": "r"})] * 30  # every sequence number wrong
    cassette = synthetic(
        [{"id": 0, "transport": "http", "events": entries, "outcome": {"kind": "dropped", "events_sent": 30}}]
    )
    timeline = build_timeline(cassette)
    assert len(timeline.exchanges[0].problems) == 30
    output = terminal(timeline)
    assert output.count("breaks 'sequence_number") == 10
    assert "... and 20 more" in output
    assert render_html(timeline).count("breaks &#x27;sequence_number") == 30


def test_sse_comments_are_counted_as_keepalives_not_as_events() -> None:
    entries = stream("response.created", "response.in_progress", "response.completed")
    comment = {"at": 0.5, "event": {"type": "rrkit.sse_comment", "comment": "ping"}}
    entries = [{**entries[0], "at": 0.2}, comment, comment, entries[1], entries[2]]
    cassette = synthetic(
        [{"id": 0, "transport": "http", "events": entries, "outcome": {"kind": "completed", "events_sent": 3}}]
    )
    view = build_timeline(cassette).exchanges[0]
    assert (view.event_count, view.keepalives, view.problems) == (3, 2, ())
    assert view.first_event == 0.2
    output = terminal(build_timeline(cassette))
    assert "3: created, in_progress, completed" in output
    assert "keep-alive 2 SSE comments" in output
    assert "first event 200 ms" in output


def huge_and_hostile() -> Cassette:
    long_id = "resp_" + "x" * 300
    kinds = ["response.created"] + ["response.output_text.delta", "response.reasoning_text.delta"] * 60
    return synthetic(
        [
            {
                "id": 0,
                "transport": "ws",
                "connection": 0,
                "wire_request": {"model": HOSTILE, "input": [HOSTILE], "previous_response_id": long_id + HOSTILE},
                "logical_request": {"model": HOSTILE, "input": [HOSTILE] * 3},
                "events": [event(kind + HOSTILE * (index == 5), index) for index, kind in enumerate(kinds)],
                "outcome": {"kind": "failed", "events_sent": 121, "code": HOSTILE, "message": HOSTILE * 5},
                "response_id": long_id,
            },
            {
                "id": 1,
                "transport": "http",
                "response_status": 500,
                "response_headers": {"x-codex-turn-state": HOSTILE},
                "response_body": {"content_type": "text/html" + HOSTILE, "text": "<html>" + HOSTILE},
                "outcome": {"kind": "answered", "status": 500},
            },
        ],
        [{"id": 0, "handshake": {"status": 101, "response_headers": {"x-codex-turn-state": HOSTILE * 3}}}],
        name="hostile " + HOSTILE,
    )


def test_control_characters_in_a_cassette_are_shown_as_escapes_never_sent_to_the_terminal() -> None:
    sneaky = "\x1b]0;owned\x07\x1b[2J\u202eevil"
    cassette = synthetic(
        [{"id": 0, "transport": "http", "outcome": {"kind": "failed", "code": "x", "message": sneaky}}],
        name=sneaky,
    )
    timeline = build_timeline(cassette)
    output = terminal(timeline)
    assert "\x1b" not in output and "\x07" not in output and "\u202e" not in output
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202eevil" in output
    page = render_html(timeline)
    assert "\x1b" not in page and "\\x1b]0;owned" in page


@pytest.mark.parametrize("width", [80, 60])
def test_no_line_is_wider_than_the_terminal(width: int) -> None:
    outputs = [terminal(build_timeline(load_cassette(path)), width) for path in GOLDEN_FILES]
    outputs.append(terminal(build_timeline(huge_and_hostile()), width))
    for output in outputs:
        too_wide = [line for line in output.splitlines() if cell_len(line) > width]
        assert not too_wide, too_wide[:3]
    assert "... (" in outputs[-1]  # 121 alternating runs are cut short in the terminal


def test_html_escapes_untrusted_cassette_content_and_loads_nothing() -> None:
    page = render_html(build_timeline(huge_and_hostile()))
    assert "<script" not in page.lower()
    assert escape(HOSTILE) in page
    assert "<html>" + HOSTILE not in page
    assert 'http-equiv="Content-Security-Policy" content="default-src \'none\'' in page
    assert not re.search(r"\b(src|href)=|url\(|@import|<link|<iframe|<object|<embed", page, re.IGNORECASE)


def test_html_page_holds_every_row_of_the_terminal_view() -> None:
    timeline = build_timeline(load_cassette(REPO / "cassettes" / "example.ws.json"))
    page = render_html(timeline)
    texts = [re.sub(r"<[^>]+>", "", line) for line in page.splitlines()]
    joined = "\n".join(texts)
    for exchange in timeline.exchanges:
        assert escape(exchange.title) in page
        for row in exchange.rows():
            assert escape(row.text) in joined, row
    for connection in timeline.connections:
        assert escape(connection.closed) in page


def test_write_html_replaces_the_file_atomically_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "page.html"
    target.write_text("old")
    write_html(build_timeline(load_cassette(REPO / "cassettes" / "text.ws.json")), target)
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert [path.name for path in tmp_path.iterdir()] == ["page.html"]


def test_cli_show_prints_the_timeline_and_writes_the_page(tmp_path: Path) -> None:
    page = tmp_path / "drop.html"
    path = REPO / "cassettes" / "drop-mid-stream.ws.json"
    result = CliRunner().invoke(main, ["show", str(path), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "dropped, 5 events sent" in result.output
    assert f"rrkit: wrote {page}" in result.output
    assert "dropped, 5 events sent" in page.read_text()


def test_cli_show_help_has_an_example() -> None:
    result = CliRunner().invoke(main, ["show", "--help"])
    assert result.exit_code == 0
    assert "rrkit show cassettes/" in result.output and "--html" in result.output


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read cassette"),
        ("{not json", "invalid JSON"),
        ('{"name": "x"}', "not an rrkit cassette"),
        ('{"rrkit_cassette": 1, "exchanges": [{"id": "zero"}]}', "exchanges[0]"),
    ],
    ids=["missing", "not-json", "not-a-cassette", "invalid"],
)
def test_cli_show_exits_2_naming_the_file_on_a_missing_or_invalid_cassette(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    result = CliRunner().invoke(main, ["show", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.output and problem in result.output
    assert "Traceback" not in result.output


def test_cli_show_exits_2_naming_the_page_it_cannot_write(tmp_path: Path) -> None:
    page = tmp_path / "no-such-dir" / "page.html"
    result = CliRunner().invoke(main, ["show", str(REPO / "cassettes" / "text.ws.json"), "--html", str(page)])
    assert result.exit_code == 2
    assert str(page) in result.output and "cannot write the HTML page" in result.output


@needs_chromium
def test_html_page_renders_in_headless_chromium_with_its_content_and_no_injected_script(tmp_path: Path) -> None:
    cassette = load_cassette(REPO / "cassettes" / "drop-mid-stream.ws.json")
    cassette.name = HOSTILE  # untrusted text in the title, the heading and the summary
    page = write_html(build_timeline(cassette), tmp_path / "show.html")
    dom = dump_dom(page)
    assert 'id="exchange-1"' in dom and 'class="exchange sev-bad"' in dom
    assert "dropped, 5 events sent" in dom
    assert "#1 · ws conn 0 · incremental" in dom
    assert "by tcp, no close frame" in dom
    assert "&lt;script&gt;document.body.setAttribute('data-x'" in dom  # shown as text
    assert "pwned" not in dom  # and never run

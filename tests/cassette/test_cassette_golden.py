"""Golden cassettes (cassettes/): the reference client through every fixture over SSE and WebSocket, recorded.

They must be what a fresh recording of today's fixtures gives (after normalization), and each must replay to
the reference client with the outcome its fixture's `expect` names.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses import ResponseStreamEvent, response_output_item

from rrkit.cassette import CassetteSource, load_cassette
from rrkit.cassette.match import json_diff
from rrkit.cassette.normalize import normalize_cassette
from rrkit.demo import golden_name, run_demo, run_one
from rrkit.protocol.calls import CLIENT_CALLS
from rrkit.protocol.vocabulary import TRANSPORTS
from rrkit.script import load_script
from rrkit.script.shipped import script_files

from ..errortrap import Serve

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
GOLDEN = REPO / "cassettes"
REGENERATE = "rrkit demo --record cassettes/"
GOLDEN_FILES = sorted(GOLDEN.glob("*.json"))


def stale_message(problems: list[str]) -> str:
    return (
        "the golden cassettes in cassettes/ are out of date with fixtures/ (or the toolkit's output changed):\n"
        + "\n".join(f"  {problem}" for problem in problems)
        + f"\nRegenerate them from the repository root with:  {REGENERATE}\nthen review the diff and commit it."
    )


async def test_golden_cassettes_equal_a_fresh_recording_of_every_fixture_over_every_transport(
    tmp_path: Path,
) -> None:
    rows = await run_demo(FIXTURES, record=tmp_path)
    assert all(row.ok for row in rows), [f"{row.script} {row.transport}: {row.problems}" for row in rows if not row.ok]
    expected = {golden_name(path, transport) for path in script_files(FIXTURES) for transport in TRANSPORTS}
    assert {path.name for path in tmp_path.glob("*.json")} == expected
    committed = {path.name for path in GOLDEN_FILES}
    problems = [f"missing: cassettes/{name}" for name in sorted(expected - committed)]
    problems += [f"no fixture records it any more: cassettes/{name}" for name in sorted(committed - expected)]
    for name in sorted(expected & committed):
        fresh = normalize_cassette(load_cassette(tmp_path / name)).model_dump(mode="json")
        golden = normalize_cassette(load_cassette(GOLDEN / name)).model_dump(mode="json")
        if fresh != golden:
            diff = json_diff(golden, fresh, "cassette")
            problems.append(f"differs: cassettes/{name}: " + "; ".join(diff[:3]) + (" ..." if len(diff) > 3 else ""))
    assert not problems, stale_message(problems)


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[path.name for path in GOLDEN_FILES])
async def test_golden_cassette_replays_to_the_reference_client_with_the_outcome_its_fixture_expects(
    serve: Serve, path: Path
) -> None:
    fixture, transport = path.name.removesuffix(".json").rsplit(".", 1)
    scripts = [candidate for candidate in script_files(FIXTURES) if candidate.stem == fixture]
    assert scripts, f"cassettes/{path.name} has no fixture in fixtures/; {REGENERATE} removes it"
    script = load_script(scripts[0])
    async with serve.running() as server:
        row = await run_one(server, script, transport, source=CassetteSource(load_cassette(path)))
        await server.settle_async()
        assert server.exchanges and all(exchange.replayed for exchange in server.exchanges)
    assert row.ok, f"{path.name} replayed: first attempt {row.first}, outcome {row.final}: {row.problems}"


def _sdk_types(union: Any) -> set[str]:
    members = typing.get_args(typing.get_args(union)[0])
    return {str(typing.get_args(member.model_fields["type"].annotation)[0]) for member in members}


def test_the_golden_cassettes_show_every_stream_event_and_output_item_of_the_newest_sdk() -> None:
    """The fixtures exercise the whole protocol (issue 48): every event type of openai 3.63 is streamed in some
    golden cassette but `response.queued`, which only a background response sends (the `background-*`
    conformance scenarios); every output item type is streamed, or, for the answers to the calls a client runs,
    sent by the client in a request's input."""
    events: set[str] = set()
    items: set[str] = set()
    for path in GOLDEN_FILES:
        for exchange in load_cassette(path).exchanges:
            for sent in exchange.events:
                events.add(str(sent.event.get("type")))
                item = sent.event.get("item")
                items.add(str(item.get("type")) if isinstance(item, dict) else "")
            request = exchange.wire_request or {}
            sent_items = request.get("input") if isinstance(request.get("input"), list) else []
            items |= {str(item.get("type")) for item in sent_items or () if isinstance(item, dict)}
    assert _sdk_types(ResponseStreamEvent) - events == {"response.queued"}
    assert not _sdk_types(response_output_item.ResponseOutputItem) - items
    assert {call.answer_type for call in CLIENT_CALLS.values()} <= items

"""Streaming physics: time to the first token, tokens per second and jitter, drawn from a seed; the same pace
times a stream the same way on every run, and a real client sees the first delta no sooner than its ttft.

Only lower bounds on time are asserted: a loaded machine makes a stream later, never sooner."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import openai
import pytest

from rrkit.protocol.events import estimate_tokens
from rrkit.protocol.pace import Pace
from rrkit.script import Script, load_script, reply, text
from rrkit.server import FakeServer

from .faultclient import Serve, ws_connect, ws_request

ROOT = Path(__file__).resolve().parents[2]
WORDS = "one two three four five six seven eight nine ten eleven twelve"
EVENTS = [
    {"type": "response.created"},
    *({"type": "response.output_text.delta", "delta": word * 4} for word in WORDS.split()),
    {"type": "response.completed"},
]


def delays(pace: Pace) -> list[float]:
    return [delay for _, delay in pace.paced(EVENTS)]


def test_the_first_delta_waits_ttft_and_each_later_one_its_tokens_at_the_rate() -> None:
    got = delays(Pace(ttft=0.5, tokens_per_second=100))
    assert got[0] == 0.0 and got[-1] == 0.0  # no delta: at once
    assert got[1] == 0.5
    assert got[2:-1] == [estimate_tokens(word * 4) / 100 for word in WORDS.split()[1:]]


def test_the_same_seed_gives_the_same_jittered_delays_and_another_seed_others() -> None:
    pace = Pace(ttft=0.2, tokens_per_second=50, jitter=0.4, seed=7)
    assert delays(pace) == delays(Pace(ttft=0.2, tokens_per_second=50, jitter=0.4, seed=7))
    assert delays(pace) != delays(Pace(ttft=0.2, tokens_per_second=50, jitter=0.4, seed=8))
    steady = delays(Pace(ttft=0.2, tokens_per_second=50))
    for jittered, base in zip(delays(pace), steady, strict=True):
        assert base * 0.6 <= jittered <= base * 1.4
    assert delays(pace) != steady


@pytest.mark.parametrize(
    ("fields", "problem"),
    [({"ttft": -1}, "ttft"), ({"tokens_per_second": 0}, "tokens_per_second"), ({"jitter": 1.5}, "jitter")],
)
def test_a_pace_out_of_range_is_refused_naming_the_field(fields: dict[str, float], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Pace(**fields)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=problem):
        Script.model_validate({"default": {"output": [{"text": "x"}], "fault": {"pace": fields}}})


PACED = reply(text(WORDS, chunks=12)).paced(ttft=0.4, tokens_per_second=400, jitter=0.5, seed=3)


def sent_gaps(server: FakeServer) -> list[float]:
    [exchange] = server.settle().exchanges
    times = [0.0, *(sent.at for sent in exchange.events)]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def planned_delays(server: FakeServer) -> list[float]:
    [exchange] = server.exchanges
    pace = Pace(ttft=0.4, tokens_per_second=400, jitter=0.5, seed=3)
    return [delay for _, delay in pace.paced([sent.event for sent in exchange.events])]


def test_the_sdk_over_sse_sees_the_first_delta_no_sooner_than_its_jittered_ttft_and_the_server_keeps_every_gap(
    serve: Serve,
) -> None:
    server = serve(Script(default=PACED))
    client = openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0)
    start = time.monotonic()
    arrivals = []
    for event in client.responses.create(model="gpt-test", input="hi", stream=True):
        arrivals.append((event.type, time.monotonic() - start))
    first = next(index for index, (kind, _) in enumerate(arrivals) if kind == "response.output_text.delta")
    planned = planned_delays(server)
    assert planned[first] >= 0.4 * 0.5  # ttft, jittered by at most half of itself
    assert arrivals[first][1] >= sum(planned[: first + 1]) - 0.005
    assert arrivals[-1][0] == "response.completed"
    for gap, planned_gap in zip(sent_gaps(server), planned, strict=True):
        assert gap >= planned_gap - 0.005  # the clock's grain


def test_over_websocket_the_same_pace_holds_every_gap(serve: Serve) -> None:
    server = serve(Script(default=PACED))
    with ws_connect(server) as websocket:
        answer = ws_request(websocket)
    assert answer.types[-1] == "response.completed" and answer.first_event_after is not None
    for gap, planned in zip(sent_gaps(server), planned_delays(server), strict=True):
        assert gap >= planned - 0.005


def test_the_paced_fixture_is_the_python_builder_in_yaml() -> None:
    script = load_script(ROOT / "fixtures" / "paced.yaml")
    pace = script.responses[0].fault.pace
    assert pace is not None and pace.pace() == Pace(ttft=0.3, tokens_per_second=200, jitter=0.3, seed=7)

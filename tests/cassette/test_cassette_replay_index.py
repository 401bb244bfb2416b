"""Replay picks the first unplayed matching exchange in cassette order, under the match configuration, at any
cassette size; repeats, the closest-match report and the list of unplayed exchanges."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rrkit.cassette import CassetteSource, MatchConfig
from rrkit.cassette.modes import FallbackSource
from rrkit.script import NoMatch, Script, reply, text
from rrkit.script.select import ScriptState
from rrkit.server import FakeServer

from ..errortrap import Serve
from .recordings import record


def body(question: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "input": question, "stream": True, **extra}


def answer(client: httpx.Client, server: FakeServer, request: dict[str, Any]) -> str:
    """`answer N` for the recorded exchange that answered, or the no-match message."""
    response = client.post(server.http_url + "/responses", json=request)
    if response.status_code == 400:
        return str(response.json()["error"]["message"])
    response.raise_for_status()
    return next(part for part in response.text.split('"') if part.startswith("answer "))


@pytest.fixture
def client() -> Any:
    with httpx.Client() as http:
        yield http


def test_identical_requests_are_answered_in_cassette_order_each_once(serve: Serve, client: httpx.Client) -> None:
    cassette = record(serve, [body("hi"), body("other"), body("hi"), body("hi")])
    with serve.running(source=CassetteSource(cassette)) as replay:
        assert [answer(client, replay, body("hi")) for _ in range(3)] == ["answer 0", "answer 2", "answer 3"]
        report = answer(client, replay, body("hi"))
    assert "no recorded exchange matches" in report
    assert "recorded exchange 0 (already replayed): matchers passed: input, model, stream; failed: none" in report
    assert "replayed already: allow repeats, or run with record mode `new_episodes`" in report


def test_with_repeats_an_unplayed_match_comes_first_then_the_last_match_plays_again(
    serve: Serve, client: httpx.Client
) -> None:
    cassette = record(serve, [body("hi"), body("other"), body("hi")])
    with serve.running(source=CassetteSource(cassette, MatchConfig(allow_repeats=True))) as replay:
        answers = [answer(client, replay, body("hi")) for _ in range(4)]
        assert answer(client, replay, body("other")) == "answer 1"
    assert answers == ["answer 0", "answer 2", "answer 2", "answer 2"]


def test_allow_repeats_on_the_source_is_the_match_config_switch(serve: Serve) -> None:
    cassette = record(serve, [body("hi")])
    source = CassetteSource(cassette, allow_repeats=True)
    assert source.match.allow_repeats and source.match == MatchConfig(allow_repeats=True)
    assert CassetteSource(cassette, MatchConfig(allow_repeats=True)).allow_repeats


def test_replay_matches_under_ignored_and_normalized_paths(serve: Serve, client: httpx.Client) -> None:
    def turn(output: str, description: str) -> dict[str, Any]:
        call = {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": "{}"}
        result = {"type": "function_call_output", "call_id": "c1", "output": output}
        tools = [{"type": "function", "name": "exec", "description": description, "parameters": {}}]
        return body([{"role": "user", "content": "run"}, call, result], tools=tools)

    cassette = record(serve, [turn("Wall time: 0.1 seconds\nok", "v1"), turn("Wall time: 0.1 seconds\nfailed", "v1")])
    config = MatchConfig(
        ignore=("tools[*].description",), normalize=(("input[*].output", r"Wall time: ([0-9.]+) seconds"),)
    )
    with serve.running(source=CassetteSource(cassette, config)) as replay:
        assert answer(client, replay, turn("Wall time: 7.5 seconds\nfailed", "v2")) == "answer 1"
        assert answer(client, replay, turn("Wall time: 0.3 seconds\nok", "v3")) == "answer 0"


def test_report_names_the_closest_of_many_exchanges_with_a_diff(serve: Serve, client: httpx.Client) -> None:
    requests = [body(f"question {i}", temperature=0.5) for i in range(300)]
    requests[217] = body("question 217", temperature=0.9, top_p=0.5)
    with serve.running(source=CassetteSource(record(serve, requests))) as replay:
        report = answer(client, replay, body("question 217", temperature=0.9, top_p=0.7))
    assert "recorded exchange 217: matchers passed: input, model, stream, temperature; failed: top_p" in report
    assert "Value of top_p changed from 0.5 to 0.7." in report


def test_the_closest_match_report_is_made_only_when_a_miss_is_reported(
    serve: Serve, client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[NoMatch] = []
    ranked = CassetteSource._no_match

    def counted(source: CassetteSource, *args: Any) -> NoMatch:
        made.append(ranked(source, *args))
        return made[-1]

    monkeypatch.setattr(CassetteSource, "_no_match", counted)
    cassette = record(serve, [body("hi")])
    upstream = ScriptState(Script(default=reply(text("answer 9"))))
    with serve.running(source=FallbackSource(CassetteSource(cassette), upstream)) as recording:
        assert answer(client, recording, body("other")) == "answer 9"  # an upstream answers the miss: no report
    assert made == []
    with serve.running(source=CassetteSource(cassette)) as replay:
        assert "no recorded exchange matches" in answer(client, replay, body("other"))
    assert len(made) == 1 and made[0].closest[0].startswith("recorded exchange 0: matchers passed: model, stream")


def test_ints_beyond_64_bits_in_a_request_replay(serve: Serve, client: httpx.Client) -> None:
    big = body("hi", client_metadata={"seed": 2**70}, max_output_tokens=2**65)
    with serve.running(source=CassetteSource(record(serve, [big]), MatchConfig(ignore=()))) as replay:
        assert answer(client, replay, big) == "answer 0"


def test_unplayed_lists_the_exchanges_no_request_played(serve: Serve, client: httpx.Client) -> None:
    multiline = [{"role": "user", "content": "line one\nline two"}]
    cassette = record(serve, [body("hi"), body(multiline), body("bye")])
    source = CassetteSource(cassette)
    with serve.running(source=source) as replay:
        answer(client, replay, body("bye"))
    assert source.unplayed() == [
        "exchange 0 (http, model 'gpt-test', last input: user message \"hi\")",
        "exchange 1 (http, model 'gpt-test', last input: user message \"line one\\nline two\")",
    ]
    assert source.unused() == source.unplayed()
    source.reset()
    assert len(source.unplayed()) == 3

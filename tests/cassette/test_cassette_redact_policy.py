"""The redaction policy is frozen configuration; each cassette it redacts is a pass of its own."""

from __future__ import annotations

import dataclasses
import re
from array import array
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrkit.cassette import Cassette, RecordedExchange, Redactor
from rrkit.cassette.format import RecordedEvents
from rrkit.cli import main
from rrkit.protocol.exceptions import SettingError

SECRET = "sk-proj-9f3a7c21d4e5b6a8c0d2"


def cassette(headers: dict[str, str], text: str) -> Cassette:
    request = {"model": "m", "input": text}
    return Cassette(exchanges=[RecordedExchange(id=0, transport="http", request_headers=headers, wire_request=request)])


def test_one_policy_redacts_each_cassette_on_its_own_and_cannot_be_changed() -> None:
    policy = Redactor()
    first = policy.apply(cassette({"authorization": f"Bearer {SECRET}"}, f"my key is {SECRET}"))
    assert first.exchanges[0].request_headers["authorization"] == "[REDACTED]"
    assert first.exchanges[0].wire_request == {"model": "m", "input": "my key is [REDACTED]"}
    second = policy.apply(cassette({}, f"quoting {SECRET}"))  # not a secret of this cassette
    assert second.exchanges[0].wire_request == {"model": "m", "input": f"quoting {SECRET}"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.marker = "x"  # type: ignore[misc]


def test_known_secrets_are_scrubbed_wherever_they_appear() -> None:
    redacted = Redactor().knowing([SECRET]).apply(cassette({}, f"the upstream said {SECRET}"))
    assert redacted.exchanges[0].wire_request == {"model": "m", "input": "the upstream said [REDACTED]"}


def _exchange(request: dict[str, object]) -> Cassette:
    return Cassette(exchanges=[RecordedExchange(id=0, transport="http", wire_request=request)])


@pytest.mark.parametrize("path", ["input.*.content", "input[*].content", "input[1].content", "input.1.content"])
def test_redact_paths_speak_the_one_path_language_and_scrub_the_value_elsewhere_too(path: str) -> None:
    request = {"input": [{"content": "kept"}, {"content": "card 4111-1111"}], "instructions": "card 4111-1111"}
    redacted = Redactor(paths=(path,)).apply(_exchange(request)).exchanges[0].wire_request
    assert redacted["input"][1] == {"content": "[REDACTED]"}
    assert redacted["instructions"] == "[REDACTED]"  # the value found at the path, scrubbed wherever it appears
    assert redacted["input"][0] == ({"content": "[REDACTED]"} if "*" in path else {"content": "kept"})


def test_a_bad_redact_path_is_refused_when_the_policy_is_made_naming_it() -> None:
    with pytest.raises(SettingError, match=re.escape("invalid redact path 'input[': ")):
        Redactor(paths=("input[",))


def test_record_refuses_a_bad_redact_path_before_it_serves(tmp_path: Path) -> None:
    cassette_path = tmp_path / "c.json"
    args = ["record", "--upstream", "http://127.0.0.1:9/v1", "--cassette", str(cassette_path), "--redact-path", "a..b"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "invalid redact path 'a..b'" in result.output
    assert not cassette_path.exists()


def _with_events(events: RecordedEvents) -> Cassette:
    headers = {"authorization": f"Bearer {SECRET}"}  # the pass learns the secret from the headers
    return Cassette(exchanges=[RecordedExchange(id=0, transport="http", request_headers=headers, events=events)])


def test_events_that_hold_no_secret_are_left_as_they_are_held_and_those_that_do_are_scrubbed() -> None:
    clean = RecordedEvents(array("d", [0.0, 0.5]), [b'{"type":"a","text":"hi"}', b'{"type":"b","text":"ho"}'])
    kept = Redactor().apply(_with_events(clean)).exchanges[0].events
    assert kept is clean  # searched as one text, not made one by one (100,000 events of a stream)
    leaky = RecordedEvents(array("d", [0.0]), [f'{{"type":"a","text":"key {SECRET}"}}'.encode()])
    (scrubbed,) = Redactor().apply(_with_events(leaky)).exchanges[0].events
    assert scrubbed.event == {"type": "a", "text": "key [REDACTED]"}

"""The redaction policy is frozen configuration; each cassette it redacts is a pass of its own."""

from __future__ import annotations

import dataclasses

import pytest

from rrkit.cassette import Cassette, RecordedExchange, Redactor

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

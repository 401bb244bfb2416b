"""Request matching for replay: logical by default, volatile fields ignored, configurable per field."""

from __future__ import annotations

from typing import Any

from rrkit.cassette import MatchConfig
from rrkit.cassette.match import compare

RECORDED: dict[str, Any] = {
    "model": "gpt-test",
    "instructions": "Be brief.",
    "input": [{"id": "msg_1", "type": "message", "role": "assistant", "content": "hi"}],
    "prompt_cache_key": "session-1",
    "client_metadata": {"run": 1},
}


def test_volatile_fields_and_item_ids_are_ignored_by_default() -> None:
    incoming = {
        **RECORDED,
        "prompt_cache_key": "session-2",
        "client_metadata": {"run": 2},
        "input": [{**RECORDED["input"][0], "id": "msg_other"}],
    }
    assert compare(RECORDED, incoming, MatchConfig()).ok


def test_each_differing_field_is_a_failed_matcher_with_its_diff() -> None:
    incoming = {**RECORDED, "model": "gpt-other", "instructions": "Be verbose."}
    result = compare(RECORDED, incoming, MatchConfig())
    assert result.failed == ["instructions", "model"]
    assert "input" in result.passed
    assert result.diffs["model"] == ['Value of model changed from "gpt-test" to "gpt-other".']


def test_matching_can_be_limited_to_some_fields() -> None:
    incoming = {**RECORDED, "instructions": "Something else", "input": []}
    assert compare(RECORDED, incoming, MatchConfig(fields=("model",))).ok
    assert not compare(RECORDED, incoming, MatchConfig(fields=("model", "instructions"))).ok


def test_volatile_fields_count_when_nothing_is_ignored() -> None:
    incoming = {**RECORDED, "prompt_cache_key": "session-2"}
    result = compare(RECORDED, incoming, MatchConfig(ignore=(), item_keys=()))
    assert result.failed == ["prompt_cache_key"]


def test_extra_ignored_field_leaves_it_out() -> None:
    incoming = {**RECORDED, "instructions": "Other"}
    assert compare(RECORDED, incoming, MatchConfig(ignore=(*MatchConfig().ignore, "instructions"))).ok

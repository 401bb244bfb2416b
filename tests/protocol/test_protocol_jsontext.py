"""Strict JSON for requests (protocol/jsontext.py), the exact encoder fallback and header values: plain and fast."""

from __future__ import annotations

import json

import pytest

from rrkit.protocol.headers import is_header_value
from rrkit.protocol.jsontext import MAX_DEPTH, UnsafeJSON, parse_json
from rrkit.protocol.sse import encode_json


def refused(text: str | bytes) -> UnsafeJSON:
    with pytest.raises(UnsafeJSON) as caught:
        parse_json(text)
    return caught.value


def test_parse_keeps_integers_beyond_64_bits_exact_as_bytes_and_text() -> None:
    for number in (2**64, 2**70, -(2**63) - 1, 10**40):
        assert parse_json(json.dumps({"n": [number]}).encode()) == {"n": [number]}
        assert parse_json(json.dumps({"n": number})) == {"n": number}


def test_parse_keeps_large_floats_as_floats() -> None:
    assert parse_json('{"x": 1e300, "y": -9.3e18}') == {"x": 1e300, "y": -9.3e18}


def test_nesting_counts_the_body_as_level_one_up_to_max_depth() -> None:
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert f"deeper than {MAX_DEPTH}" in refused("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).message


def test_deep_nesting_beyond_every_parser_limit_is_refused_without_recursion_error() -> None:
    error = refused('{"a": 1, "input": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert error.param == "input"


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = json.dumps({"s": "[" * 5000, "n": 2**70})  # the big integer sends it down the standard-library path
    assert parse_json(text)["s"] == "[" * 5000


def test_a_lone_surrogate_is_refused_with_its_path_and_a_pair_is_kept() -> None:
    assert refused('{"a": [{"b": "x\\ud800"}]}').param == "a[0].b"
    assert refused('{"a": {"\\udc00": 1}}').param == "a.\\udc00"
    assert parse_json('{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_refused_with_their_path(literal: str) -> None:
    assert refused('{"t": [0, ' + literal + "]}").param == "t[1]"


def test_invalid_utf8_names_the_byte() -> None:
    assert "byte 7" in refused(b'{"a": "\xff"}').message


def test_encode_json_falls_back_to_exact_for_big_integers_and_escapes_lone_surrogates() -> None:
    assert json.loads(encode_json({"n": 2**70, "m": [2**64]})) == {"n": 2**70, "m": [2**64]}
    assert json.loads(encode_json({"s": "\ud800", "n": 2**70})) == {"s": "\ud800", "n": 2**70}
    assert encode_json({"a": 1}) == b'{"a":1}'


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("gpt-4o", True),
        ("gpt 4\tx", True),
        ("gpt\r\nx: y", False),
        ("gpt\x00", False),
        ("gpt-模型", False),
        ("é", False),
        (" gpt", False),
        ("gpt ", False),
    ],
)
def test_is_header_value_is_rfc_9110_field_value_in_ascii(value: str, ok: bool) -> None:
    assert is_header_value(value) is ok

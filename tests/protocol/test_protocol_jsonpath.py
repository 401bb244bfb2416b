"""The one path language (`rrkit.protocol.jsonpath`): the spellings it accepts, the errors naming a bad path, and
what a path covers, rewrites and drops."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rrkit.protocol.jsonpath import DROP, JsonPath, Place, covered, place_text

KEYS = st.sampled_from(["input", "output", "content", "text", "id", "0", "tools"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)
ITEMS = st.lists(st.dictionaries(KEYS, JSON, max_size=4), max_size=5)


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("client_metadata", ("client_metadata",)),
        ("input[*].output", ("input", None, "output")),
        ("input[0].content[*].text", ("input", 0, "content", None, "text")),
        ("input.*.output", ("input", None, "output")),
        ("input.2.output", ("input", "2", "output")),
        ("response_headers.retry-after", ("response_headers", "retry-after")),
        ("events[*]", ("events", None)),
    ],
)
def test_every_accepted_spelling_parses_to_its_steps(text: str, steps: tuple[Any, ...]) -> None:
    assert JsonPath.parse(text).steps == steps


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("input[*", "unexpected '[' at position 5 (an index is [N] or [*])"),
        ("input[x]", "unexpected '[' at position 5"),
        ("input..output", "empty name at position 6"),
        (".input", "empty name at position 0"),
        ("input.", "it ends with '.'"),
        ("[0].output", "a path starts with a field name"),
        ("input[*]output", "a '.' must come before the name at position 8"),
        ("", "a path is a non-empty string such as 'input[*].output'"),
    ],
)
def test_a_bad_path_is_an_error_naming_what_it_is_the_path_and_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid normalize path {text!r}: {problem}")):
        JsonPath.parse(text, "normalize path")


@given(ITEMS)
def test_wildcard_path_matches_every_array_element(items: list[dict[str, Any]]) -> None:
    dropped = JsonPath.parse("input[*].output").drop({"input": items})["input"]
    assert dropped == [{key: value for key, value in item.items() if key != "output"} for item in items]
    path = JsonPath.parse("input[*].output")
    assert all(path.covers(("input", index, "output", "deeper")) for index in range(len(items)))


@given(ITEMS)
def test_dotted_and_bracketed_spellings_name_the_same_places(items: list[dict[str, Any]]) -> None:
    request = {"input": items}
    for dotted, bracketed in (("input.*.output", "input[*].output"), ("input.1.output", "input[1].output")):
        assert JsonPath.parse(dotted).drop(request) == JsonPath.parse(bracketed).drop(request)


@given(ITEMS, st.integers(0, 5))
def test_an_index_path_rewrites_only_that_element(items: list[dict[str, Any]], index: int) -> None:
    rewritten = JsonPath.parse(f"input[{index}]").rewrite({"input": items}, lambda _item: "X")["input"]
    assert rewritten == ["X" if position == index else item for position, item in enumerate(items)]


@given(JSON)
def test_a_rewrite_leaves_the_value_it_was_given_as_it_was(value: Any) -> None:
    before = copy.deepcopy(value)
    for text in ("input", "input[*]", "*.text", "*.*"):
        JsonPath.parse(text).rewrite(value, lambda _node: DROP)
        JsonPath.parse(text).rewrite(value, lambda node: [node])
    assert json.dumps(value) == json.dumps(before)


def test_a_path_through_what_is_not_there_changes_nothing() -> None:
    request = {"input": [{"type": "message"}], "model": "m"}
    for text in ("tools[*].description", "input[3].output", "model.name", "input[*].content[*].text", "input.x"):
        assert JsonPath.parse(text).drop(request) == request


@pytest.mark.parametrize(
    ("text", "place", "covers"),
    [
        ("input[*].output", ("input", 4, "output"), True),
        ("input[*].output", ("input", 4, "output", "text"), True),
        ("input[*].output", ("input", 4), False),
        ("input[2]", ("input", 2, "content"), True),
        ("input[2]", ("input", 3), False),
        ("input.2", ("input", 2), True),
        ("input.x", ("input", 2), False),
        ("events[3]", ("events", (3, 5)), True),  # an aligned index: either side's
        ("events[5]", ("events", (3, 5)), True),
        ("events[4]", ("events", (3, 5)), False),
        ("*.delta", ("events", 1), False),
        ("events[*].delta", ("events", 1, "delta"), True),
    ],
)
def test_a_path_covers_the_places_at_or_under_it(text: str, place: Place, covers: bool) -> None:
    assert JsonPath.parse(text).covers(place) is covers
    assert covered(place, [JsonPath.parse("unrelated"), JsonPath.parse(text)]) is covers


@given(st.lists(st.one_of(st.sampled_from(["input", "output", "delta"]), st.integers(0, 9)), min_size=1, max_size=5))
def test_the_text_of_a_place_parses_back_to_a_path_covering_it(steps: list[str | int]) -> None:
    if isinstance(steps[0], int):
        steps = ["events", *steps]
    place = tuple(steps)
    assert JsonPath.parse(place_text(place)).covers(place)


def test_an_aligned_index_reads_as_either_sides() -> None:
    place = ("events", (3, 5), "delta")
    assert (place_text(place, 0), place_text(place, 1)) == ("events[3].delta", "events[5].delta")

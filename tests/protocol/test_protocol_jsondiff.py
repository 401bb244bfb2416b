"""The one value diff (`rrkit.protocol.jsondiff`, `jsondiff_text`): what it finds, where it says it is, and the
sentences matching's near-miss report and snapshots show."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rrkit.protocol.jsondiff import MISSING, Change, ValueDiff, canonical
from rrkit.protocol.jsondiff_text import DIFF_VALUE_LIMIT, diff_lines
from rrkit.protocol.jsonpath import JsonPath, Place

FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not (f == 0 and math.copysign(1, f) < 0))
KEYS = st.sampled_from(["a", "b", "c", "it's", 'say "hi"'])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | FLOATS | st.sampled_from(["", "x", "y"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=25,
)
LETTERS = st.lists(st.sampled_from(["p", "q", "x", 1, True]), max_size=6)
"""Lists of a few plain values: two of them share runs, and 1 and true compare equal in Python."""


def at(value: Any, place: Place, side: int) -> Any:
    """The value at a place (an aligned index read as `side`'s), MISSING where there is none."""
    for step in place:
        index = step[side] if isinstance(step, tuple) else step
        present = index in value if isinstance(value, dict) else isinstance(value, list) and 0 <= index < len(value)
        if not present:
            return MISSING
        value = value[index]
    return value


@given(JSON)
def test_a_value_does_not_differ_from_a_copy_of_itself(value: Any) -> None:
    assert ValueDiff().changes(value, copy.deepcopy(value)) == []
    assert diff_lines(value, copy.deepcopy(value)) == []


@given(JSON, JSON)
@example({"n": 1}, {"n": True})
@example({"n": 1}, {"n": 1.0})
@example([0, "x"], [False, "x"])
def test_values_differ_exactly_when_their_canonical_forms_do(a: Any, b: Any) -> None:
    assert (ValueDiff().changes(a, b) == []) == (canonical(a) == canonical(b))


@given(JSON | LETTERS, JSON | LETTERS)
@example(["c", "x", "d"], ["w", "z", "c", "d"])  # kept aligned on runs: B's indexes differ from A's
def test_each_change_holds_the_values_found_at_its_place(a: Any, b: Any) -> None:
    """A's value at A's place, B's at B's; a key only one side has is not on the other side."""
    for change in ValueDiff().changes(a, b):
        if change.a is not MISSING:
            assert canonical(at(a, change.path, 0)) == canonical(change.a)
        if change.b is not MISSING:
            assert canonical(at(b, change.path, 1)) == canonical(change.b)
        if (change.a is MISSING or change.b is MISSING) and isinstance(change.path[-1], str):
            assert at(a if change.a is MISSING else b, change.path, 0) is MISSING  # a key only one side has


def test_numbers_and_booleans_of_another_type_differ_even_inside_a_list() -> None:
    assert ValueDiff().changes({"n": 1}, {"n": 1.0}) == [Change(("n",), 1, 1.0)]
    assert ValueDiff().changes([1, "x"], [True, "x"]) == [Change((0,), 1, True)]
    assert diff_lines([0, 2], [False, 2], "v") == [
        "Type of v[0] changed from int to bool and value changed from 0 to false."
    ]


def test_wildcard_ignore_path_leaves_out_that_key_of_every_array_element() -> None:
    a = {"input": [{"id": "1", "text": "hi"}, {"text": "yo"}]}
    b = {"input": [{"id": "8", "text": "hi"}, {"id": "9", "text": "yo!"}, {"id": "10"}]}
    changes = ValueDiff(ignore=[JsonPath.parse("input[*].id")]).changes(a, b)
    assert changes == [Change(("input", 1, "text"), "yo", "yo!"), Change(("input", 2), MISSING, {"id": "10"})]


def test_objects_sharing_under_a_third_of_their_keys_differ_as_a_whole() -> None:
    a, b = {"a": 1, "b": 2, "c": 3}, {"a": 1, "d": 4, "e": 5}
    assert ValueDiff().changes(a, b) == [Change((), a, b)]
    assert len(ValueDiff().changes({"a": 1, "b": 2}, {"a": 1, "c": 3})) == 2  # a third: key by key


def test_a_list_of_plain_values_is_aligned_on_its_common_runs() -> None:
    assert ValueDiff().changes(["a", "b", "c"], ["x", "a", "b", "c"]) == [Change((0,), MISSING, "x")]
    assert ValueDiff().changes(["a", "b", "c", "d"], ["a", "c", "d"]) == [Change((1,), "b", MISSING)]


def test_a_list_of_objects_is_compared_item_by_item() -> None:
    a, b = [{"t": 1}, {"t": 2}], [{"t": 0}, {"t": 1}, {"t": 2}]
    assert ValueDiff().changes(a, b) == [
        Change((0, "t"), 1, 0),
        Change((1, "t"), 2, 1),
        Change((2,), MISSING, {"t": 2}),
    ]


@pytest.mark.parametrize(
    ("a", "b", "lines"),
    [  # as DeepDiff (the diff before this one) wrote them
        ({"model": "a"}, {"model": "b"}, ['Value of v[\'model\'] changed from "a" to "b".']),
        ({"a": 1}, {"a": 1, "b": [2]}, ["Item v['b'] ([2]) added to dictionary."]),
        ({"a": 1, "b": 2}, {"a": 1}, ["Item v['b'] (2) removed from dictionary."]),
        (
            {"a": 1, "b": 2, "c": 3},
            {"a": 1, "d": 4, "e": 5},
            ['Value of v changed from {"a": 1, "b": 2, "c": 3} to {"a": 1, "d": 4, "e": 5}.'],
        ),
        ({"n": 1}, {"n": 1.0}, ["Type of v['n'] changed from int to float and value changed from 1 to 1.0."]),
        (None, {"a": 1}, ['Type of v changed from NoneType to dict and value changed from null to {"a": 1}.']),
        (["a", "b", "c"], ["x", "a", "b", "c"], ['Item v[0] ("x") added to iterable.']),
        (["a", "b", "c", "d"], ["a", "c", "d"], ['Item v[1] ("b") removed from iterable.']),
        ([{"t": 1}, {"t": 2}], [{"t": 1}], ['Item v[1] ({"t": 2}) removed from iterable.']),
        (["x", "a"], ["a", "y"], ['Value of v[0] changed from "x" to "a".', 'Value of v[1] changed from "a" to "y".']),
        (
            {"it's": 1, 'say "hi"': 2},
            {"it's": 2, 'say "hi"': 3},
            ['Value of v["it\'s"] changed from 1 to 2.', "Value of v['say \"hi\"'] changed from 2 to 3."],
        ),
        (
            {"a": {"b": [1, {"c": 2}]}},
            {"a": {"b": [1, {"c": 3}], "d": 4}},
            ["Item v['a']['d'] (4) added to dictionary.", "Value of v['a']['b'][1]['c'] changed from 2 to 3."],
        ),
        (["a", "b"], ["b", "a", "b"], ['Item v[0] ("b") added to iterable.']),
        (  # removed at [1] and added at [1]: one changed value
            ["c", "x", "d"],
            ["w", "z", "c", "d"],
            ['Item v[0] ("w") added to iterable.', 'Value of v[1] changed from "x" to "z".'],
        ),
    ],
)
def test_sentences_read_as_they_did(a: Any, b: Any, lines: list[str]) -> None:
    assert diff_lines(a, b, "v") == lines


def test_sentences_come_added_then_removed_then_changed_types_then_changed_values() -> None:
    lines = diff_lines({"a": 1, "b": "x", "l": [{"k": 1}], "gone": 0}, {"a": 2, "b": 3, "l": [], "new": 0}, "r")
    assert [line.split(" ", 1)[0] + " " + line.rsplit(" ", 1)[-1] for line in lines] == [
        "Item dictionary.",
        "Item dictionary.",
        "Item iterable.",
        "Type 3.",
        "Value 2.",
    ]


def test_a_long_value_is_shown_bounded_around_its_first_difference() -> None:
    (line,) = diff_lines("x" * 1000 + "BEFORE", "x" * 1000 + "AFTER", "text")
    assert "BEFORE" in line and "AFTER" in line and "(1006 chars)" in line and len(line) < 3 * DIFF_VALUE_LIMIT

"""The plain value diff as sentences, one a difference, both values on the line but bounded:
`Value of input[2]['content'] changed from "a" to "b".` (matching's near-miss report, snapshots)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .jsondiff import MISSING, Change, ValueDiff
from .jsonpath import Step

DIFF_VALUE_LIMIT = 200
"""Characters of a value shown in a diff line; longer values are cut around their first difference."""

_SENTENCES = {  # by kind, in the order the lines come in
    "dictionary_item_added": "Item {path} ({value2}) added to dictionary.",
    "dictionary_item_removed": "Item {path} ({value1}) removed from dictionary.",
    "iterable_item_added": "Item {path} ({value2}) added to iterable.",
    "iterable_item_removed": "Item {path} ({value1}) removed from iterable.",
    "type_changes": "Type of {path} changed from {type1} to {type2} and value changed from {value1} to {value2}.",
    "values_changed": "Value of {path} changed from {value1} to {value2}.",
}
_ORDER = {kind: rank for rank, kind in enumerate(_SENTENCES)}


def diff_lines(a: Any, b: Any, root: str = "value") -> list[str]:
    """How `b` differs from `a` (`ValueDiff`), one sentence each, with paths like `input[2]['content']` rooted at
    `root`: added and removed keys, then list items, then changed types, then changed values."""
    return sentences(ValueDiff().changes(a, b), root)


def sentences(changes: Sequence[Change], root: str) -> list[str]:
    kinds = _merged([(change, _kind(change)) for change in changes], root)
    return [_sentence(change, kind, root) for change, kind in sorted(kinds, key=lambda pair: _ORDER[pair[1]])]


def shown(value: Any, limit: int = DIFF_VALUE_LIMIT, start: int = 0) -> str:
    """A value on one line: strings quoted with newlines escaped, the rest as JSON; bounded to `limit`
    characters from `start` (a string index), an ellipsis where something is left out."""
    if not isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False, default=repr)
        return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"
    body = json.dumps(value[start : start + limit], ensure_ascii=False)[1:-1]
    if start == 0 and len(value) <= limit:
        return f'"{body}"'
    head, tail = "…" if start > 0 else "", "…" if start + limit < len(value) else ""
    return f'"{head}{body}{tail}" ({len(value)} chars)'


def shown_pair(before: Any, after: Any) -> tuple[str, str]:
    """Both values `shown`; two long strings from a little before their first difference."""
    start = 0
    if isinstance(before, str) and isinstance(after, str) and max(len(before), len(after)) > DIFF_VALUE_LIMIT:
        common = next((i for i, (x, y) in enumerate(zip(before, after, strict=False)) if x != y), None)
        common = min(len(before), len(after)) if common is None else common
        start = max(0, common - DIFF_VALUE_LIMIT // 4)
    return shown(before, start=start), shown(after, start=start)


def place_words(root: str, path: Sequence[Step], side: int = 0) -> str:
    """`input[2]['content']`: keys quoted, an aligned index as A's (side 0) or B's (side 1)."""
    return root + "".join(f"[{_quoted(step)}]" if isinstance(step, str) else f"[{_index(step, side)}]" for step in path)


def _where(change: Change, root: str) -> str:
    """Where a change is: in B for what only B has, else in A."""
    return place_words(root, change.path, 1 if change.a is MISSING else 0)


def _index(step: int | tuple[int, int], side: int) -> int:
    return step if isinstance(step, int) else step[side]


def _quoted(key: str) -> str:
    return f'"{key}"' if "'" in key else f"'{key}'"


def _kind(change: Change) -> str:
    container = "dictionary" if change.path and isinstance(change.path[-1], str) else "iterable"
    if change.a is MISSING:
        return f"{container}_item_added"
    if change.b is MISSING:
        return f"{container}_item_removed"
    return "type_changes" if type(change.a) is not type(change.b) else "values_changed"


def _merged(kinds: list[tuple[Change, str]], root: str) -> list[tuple[Change, str]]:
    """A list item removed and one added at the same index are one changed value (after the other changes)."""
    added = {_where(c, root): c for c, kind in kinds if kind == "iterable_item_added"}
    removed = {_where(c, root): c for c, kind in kinds if kind == "iterable_item_removed"}
    both = [place for place in removed if place in added]
    if not both:
        return kinds
    gone = {id(added[place]) for place in both} | {id(removed[place]) for place in both}
    kept = [(change, kind) for change, kind in kinds if id(change) not in gone]
    return kept + [(Change(removed[place].path, removed[place].a, added[place].b), "values_changed") for place in both]


def _sentence(change: Change, kind: str, root: str) -> str:
    a, b = change.a, change.b
    value1, value2 = shown_pair(a if a is not MISSING else None, b if b is not MISSING else None)
    return _SENTENCES[kind].format(
        path=_where(change, root),
        type1=type(a).__name__,
        type2=type(b).__name__,
        value1=value1,
        value2=value2,
    )

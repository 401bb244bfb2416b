"""Comparing JSON values: their canonical form, and the walk that finds every place two values differ (a plain
one here; `rrkit diff` tolerates volatile values by overriding its steps), with the alignment of two lists."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

import orjson

from .jsonpath import JsonPath, Place, covered


def canonical(value: Any) -> bytes:
    """Compact JSON with sorted keys: what requests are compared by (so 1 and 1.0, true and 1, differ).

    orjson refuses ints beyond 64 bits, non-string keys and very deep nesting; the standard encoder takes
    those, and a value neither can encode is equal to nothing else.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        pass
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr).encode()
    except (TypeError, ValueError, RecursionError):
        return b"\x00unencodable %d" % id(value)


@dataclass(frozen=True, slots=True)
class Change:
    """One place where the values differ; `a` or `b` is MISSING where that side lacks it."""

    path: Place
    a: Any
    b: Any
    note: str = ""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The value on the side that lacks a key, a list item or an event."""


DEEPER_SHARE = 0.33
"""Two objects sharing fewer than this share of their keys differ as a whole, not key by key."""
_PLAIN = (str, int, float, type(None))


class ValueDiff:
    """Every place two JSON values differ, by type and value (1 and 1.0, true and 1, differ); places under an
    `ignore` path are left out. Objects compare key by key (unless they share few keys: `DEEPER_SHARE`); a list
    holding objects or lists item by item, one of plain values on its longest common runs when that says less."""

    def __init__(self, *, ignore: Sequence[JsonPath] = ()) -> None:
        self.ignore = tuple(ignore)

    def changes(self, a: Any, b: Any, path: Place = ()) -> list[Change]:
        """Every place where `a` and `b` differ, under `path`."""
        found: list[Change] = []
        self._walk(a, b, path, None, found)
        return found

    def _walk(self, a: Any, b: Any, path: Place, key: str | None, found: list[Change]) -> None:
        if self.ignore and covered(path, self.ignore):
            return
        if type(a) is dict and type(b) is dict:
            self._dict(a, b, path, found)
        elif type(a) is list and type(b) is list:
            self._list(a, b, path, found)
        else:
            self._leaf(a, b, path, key, found)

    def _only(self, path: Place, a: Any, b: Any, found: list[Change]) -> None:
        """A key or item only one side has (the other MISSING)."""
        if not (self.ignore and covered(path, self.ignore)):
            found.append(Change(path, a, b))

    def _leaf(self, a: Any, b: Any, path: Place, key: str | None, found: list[Change]) -> None:
        if not (a is b or (type(a) is type(b) and a == b)):
            found.append(Change(path, a, b))

    def _dict(self, a: dict[str, Any], b: dict[str, Any], path: Place, found: list[Change]) -> None:
        common = [name for name in b if name in a]
        union = len(a) + len(b) - len(common)
        if union > 1 and len(common) / union < DEEPER_SHARE:
            found.append(Change(path, a, b))
            return
        for name in b:
            if name not in a:
                self._only((*path, name), MISSING, b[name], found)
        for name in a:
            if name not in b:
                self._only((*path, name), a[name], MISSING, found)
        for name in common:
            self._walk(a[name], b[name], (*path, name), name, found)

    def _list(self, a: list[Any], b: list[Any], path: Place, found: list[Change]) -> None:
        if not (all(isinstance(item, _PLAIN) for item in a) and all(isinstance(item, _PLAIN) for item in b)):
            self._in_order(a, b, path, found)
            return
        by_runs = self._by_runs(a, b, path)
        if len(by_runs) > 1:  # runs can say more than item by item ([x, a] -> [a, y]): the shorter wins
            in_order: list[Change] = []
            self._in_order(a, b, path, in_order)
            by_runs = in_order if len(in_order) <= len(by_runs) else by_runs
        found += by_runs

    def _by_runs(self, a: list[Any], b: list[Any], path: Place) -> list[Change]:
        """Lists of plain values aligned on their longest common runs; items between two runs paired in order."""
        found: list[Change] = []
        typed_a, typed_b = [(type(x), x) for x in a], [(type(y), y) for y in b]  # so that 1, 1.0 and true differ
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, typed_a, typed_b, autojunk=False).get_opcodes():
            if tag == "replace":
                self._in_order(a[i1:i2], b[j1:j2], path, found, start=(i1, j1))
            elif tag == "delete":
                for i in range(i1, i2):
                    self._only((*path, i), a[i], MISSING, found)
            elif tag == "insert":
                for j in range(j1, j2):
                    self._only((*path, j), MISSING, b[j], found)
        return found

    def _in_order(
        self, a: list[Any], b: list[Any], path: Place, found: list[Change], start: tuple[int, int] = (0, 0)
    ) -> None:
        """Item by item, the longer list's rest added or removed; indexes count from `start` on each side."""
        for offset, (x, y) in enumerate(zip_longest(a, b, fillvalue=MISSING)):
            i, j = start[0] + offset, start[1] + offset
            place = (*path, i if i == j else (i, j))
            if x is MISSING or y is MISSING:
                self._only(place, x, y, found)
            else:
                self._walk(x, y, place, None, found)


OpCode = tuple[str, int, int, int, int]
ALIGN_LIMIT = 2000
"""Past this many differing items on a side, aligning is left to position (SequenceMatcher grows quadratically)."""


def align(a: Sequence[Any], b: Sequence[Any]) -> list[OpCode]:
    """difflib opcodes for two sequences of hashable signatures: the common head and tail cut off first, so a
    difference in a long sequence costs what the differing middle costs."""
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    codes: list[OpCode] = [("equal", 0, head, 0, head)] if head else []
    middle: list[OpCode]
    if max(len(middle_a), len(middle_b)) > ALIGN_LIMIT:
        middle = [("replace", 0, len(middle_a), 0, len(middle_b))] if middle_a or middle_b else []
    else:
        middle = list(difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False).get_opcodes())
    codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle]
    if tail:
        codes.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return codes


def pairs_of(codes: Iterable[OpCode]) -> Iterable[tuple[int | None, int | None]]:
    """Aligned positions: (i, j) for matched items (replace blocks paired in order), (i, None) for an item only A
    has and (None, j) for one only B has."""
    for tag, i1, i2, j1, j2 in codes:
        if tag in ("equal", "replace"):
            yield from zip(range(i1, i2), range(j1, j2), strict=False)
        yield from ((i, None) for i in range(i1 + min(i2 - i1, j2 - j1), i2))
        yield from ((None, j) for j in range(j1 + min(i2 - i1, j2 - j1), j2))

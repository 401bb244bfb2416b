"""Comparing two JSON values for `rrkit diff`: field paths, ignored paths, and volatile values (ids paired by use,
timestamps, token counts) normalized unless strict."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..cassette.normalize import ID_KINDS, TIMESTAMP_KEYS, TOKEN_KEYS
from ..protocol.jsondiff import MISSING, Change, ValueDiff, align, canonical, pairs_of
from ..protocol.jsonpath import JsonPath, Place, covered

VOLATILE_KEYS = frozenset({"client_metadata", "prompt_cache_key"})
"""Keys left out wherever they appear (requests and the response objects that echo them), unless strict."""

_ID = f"{ID_KINDS}_(?:[A-Za-z0-9_-]{{6,}}|[0-9]+)"
"""An id: normalize.py's, or a counting one (`resp_3`, from `IdGenerator.counting()`)."""
_ID_STRING = re.compile(f"^{_ID}$")
_ID_TOKEN = re.compile(f'"{_ID}"')
_ID_TOKEN_BYTES = re.compile(_ID_TOKEN.pattern.encode())
"""An id as a whole JSON string, as it appears in compact JSON text."""
_ID_WORD = re.compile(f"(?<![A-Za-z0-9_-]){_ID}(?![A-Za-z0-9_-])")
"""An id inside a longer string (an error message naming a response)."""


@dataclass
class IdPairs:
    """Ids of A and B paired by where they are first used together: `resp_1` in A matches `resp_9` in B as long as
    every later use agrees, so an extra exchange or item on one side shifts nothing."""

    a_to_b: dict[str, str] = field(default_factory=dict)
    b_to_a: dict[str, str] = field(default_factory=dict)

    def same(self, a: str, b: str) -> bool:
        known = self.a_to_b.get(a)
        if known is not None:
            return known == b
        if b in self.b_to_a or a.split("_", 1)[0] != b.split("_", 1)[0]:
            return False
        self.a_to_b[a], self.b_to_a[b] = b, a
        return True

    def all_same(self, a: Sequence[str], b: Sequence[str]) -> bool:
        """Pairs these ids position by position, all or none (nothing is recorded when one disagrees)."""
        if len(a) != len(b):
            return False
        new_a: dict[str, str] = {}
        new_b: dict[str, str] = {}
        for x, y in zip(a, b, strict=True):
            known = self.a_to_b.get(x, new_a.get(x))
            if known is not None:
                if known != y:
                    return False
                continue
            if y in self.b_to_a or y in new_b or x.split("_", 1)[0] != y.split("_", 1)[0]:
                return False
            new_a[x], new_b[y] = y, x
        self.a_to_b.update(new_a)
        self.b_to_a.update(new_b)
        return True

    def explain(self, a: str, b: str) -> str:
        parts = []
        if a in self.a_to_b:
            parts.append(f"A's {a} stands for B's {self.a_to_b[a]}")
        if b in self.b_to_a:
            parts.append(f"B's {b} stands for A's {self.b_to_a[b]}")
        return "; ".join(parts) or "ids of different kinds"


class Comparer(ValueDiff):
    """Compares values of A and B. Unless `strict`: ids are paired (`IdPairs`), timestamps and token counts and
    `VOLATILE_KEYS` are not compared. `ignore` paths are left out (the walk does not enter them)."""

    def __init__(self, *, strict: bool = False, ignore: Sequence[JsonPath] = ()) -> None:
        super().__init__(ignore=ignore)
        self.strict = strict
        self.ids = IdPairs()

    # -- fast paths over compact JSON text --------------------------------------------------------------------
    def same_text(self, a: str | bytes, b: str | bytes) -> bool:
        """Whether two compact JSON texts are equal as values: identical, or (unless strict) identical once ids
        are masked, with ids that pair consistently. False means: compare them parsed."""
        if a == b:
            return self.strict or self._pair_ids(a, a)
        if self.strict:
            return False
        masked_a, masked_b = _mask(a), _mask(b)
        return masked_a == masked_b and self._pair_ids(a, b)

    def same_ids(self, a: str | bytes, b: str | bytes) -> bool:
        """Whether the ids of two compact JSON texts pair consistently, in order (pairing them if so)."""
        return self._pair_ids(a, b)

    def _pair_ids(self, a: str | bytes, b: str | bytes) -> bool:
        found_a, found_b = _ids_in(a), _ids_in(b)
        return (not found_a and not found_b) or self.ids.all_same(found_a, found_b)

    # -- the walk (`ValueDiff`'s, with these steps) -----------------------------------------------------------
    def changes(self, a: Any, b: Any, path: Place = ()) -> list[Change]:
        """Every place where `a` and `b` differ, under `path`."""
        if self.ignore and covered(path, self.ignore):
            return []
        if isinstance(a, dict | list) and isinstance(b, dict | list):
            try:
                if self.same_text(orjson.dumps(a), orjson.dumps(b)):
                    return []
            except TypeError:  # not encodable by orjson (huge ints): the walk compares it
                pass
        return super().changes(a, b, path)

    def _dict(self, a: dict[str, Any], b: dict[str, Any], path: Place, found: list[Change]) -> None:
        volatile = () if self.strict else VOLATILE_KEYS
        for name, value in a.items():
            if name in volatile:
                continue
            if name in b:
                self._walk(value, b[name], (*path, name), name, found)
            else:
                self._only((*path, name), value, MISSING, found)
        for name, value in b.items():
            if name not in a and name not in volatile:
                self._only((*path, name), MISSING, value, found)

    def _list(self, a: list[Any], b: list[Any], path: Place, found: list[Change]) -> None:
        if len(a) == len(b):
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                self._walk(x, y, (*path, index), None, found)
            return
        codes = align([self.signature(x) for x in a], [self.signature(y) for y in b])
        for i, j in pairs_of(codes):
            if i is not None and j is not None:
                self._walk(a[i], b[j], (*path, i if i == j else (i, j)), None, found)
            elif i is not None:
                self._only((*path, i), a[i], MISSING, found)
            elif j is not None:
                self._only((*path, j), MISSING, b[j], found)

    def _leaf(self, a: Any, b: Any, path: Place, key: str | None, found: list[Change]) -> None:
        if self.strict:
            super()._leaf(a, b, path, key, found)
            return
        change = self._volatile_leaf(a, b, path, key)
        if change is not None:
            found.append(change)

    def _volatile_leaf(self, a: Any, b: Any, path: Place, key: str | None) -> Change | None:
        """Unless strict: ids paired, timestamps and token counts not compared, strings equal but for ids."""
        if type(a) is type(b) and a == b:
            return self._id_use(a, b, path) if isinstance(a, str) else None
        if _volatile_number(key, a, b):
            return None
        if isinstance(a, str) and isinstance(b, str):
            if _ID_STRING.match(a) and _ID_STRING.match(b):
                return self._id_use(a, b, path)
            if self._same_but_ids(a, b):
                return None
        return Change(path, a, b)

    def _id_use(self, a: str, b: str, path: Place) -> Change | None:
        """Where A has an id, B's there must be the one it pairs with (the first use pairs them)."""
        if not _ID_STRING.match(a) or self.ids.same(a, b):
            return None
        return Change(path, a, b, self.ids.explain(a, b))

    def _same_but_ids(self, a: str, b: str) -> bool:
        """Strings equal but for the ids they name (`Previous response with id 'resp_...' not found.`)."""
        ids_a = [m.group(0) for m in _ID_WORD.finditer(a)]
        ids_b = [m.group(0) for m in _ID_WORD.finditer(b)]
        if not ids_a or _ID_WORD.sub("#", a) != _ID_WORD.sub("#", b):
            return False
        return self.ids.all_same(ids_a, ids_b)

    def signature_of_text(self, text: str) -> bytes:
        """What an event (compact JSON) says, for aligning events: without its `sequence_number` (a missing event
        shifts every later one), and unless strict with ids, timestamps and token counts masked."""
        data = _SEQUENCE_NUMBER.sub(b"", text.encode())
        return data if self.strict else _VOLATILE_NUMBER.sub(rb'"\1":0', _mask(data))

    def signature(self, value: Any) -> bytes:
        """A value's canonical JSON, ids masked unless strict: what lists and exchanges are aligned by."""
        text = canonical(value)
        return text if self.strict else _mask(text)


def _volatile_number(key: str | None, a: Any, b: Any) -> bool:
    """A timestamp (a number or a string) or a token count (an int) on both sides: not compared."""
    if key in TIMESTAMP_KEYS:
        return isinstance(a, int | float | str) and isinstance(b, int | float | str)
    return key in TOKEN_KEYS and type(a) is int and type(b) is int


_SEQUENCE_NUMBER = re.compile(rb'"sequence_number":-?[0-9]+,?')
_VOLATILE_KEYS_TEXT = "|".join(sorted(TIMESTAMP_KEYS | TOKEN_KEYS))
_VOLATILE_NUMBER = re.compile(rf'"({_VOLATILE_KEYS_TEXT})":(?:-?[0-9][0-9.eE+-]*|"[^"\\]*")'.encode())
"""A timestamp or token count in compact JSON (a string timestamp without escapes)."""


def _mask(text: str | bytes) -> bytes:
    """Compact JSON with each id replaced by its kind (`"resp_*"`)."""
    data = text.encode() if isinstance(text, str) else text
    return _ID_TOKEN_BYTES.sub(_masked_id, data)


def _masked_id(match: re.Match[bytes]) -> bytes:
    token = match.group(0)
    return token[: token.index(b"_") + 1] + b'*"'


def _ids_in(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        return [match.group(0)[1:-1].decode() for match in _ID_TOKEN_BYTES.finditer(text)]
    return [match.group(0)[1:-1] for match in _ID_TOKEN.finditer(text)]

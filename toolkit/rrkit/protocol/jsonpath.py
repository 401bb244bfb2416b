"""JSON paths, rrkit's one path language (`input[*].output`, `input.*.output`): parsed once, matched against the
places of a value, and used to rewrite or drop what they name."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .exceptions import BadRequest, SettingError
from .numbers import MAX_DIGITS, integer

PatternStep = str | int | None
"""A step of a path: a key, a list index, or None for every key or item (`*`)."""
Step = str | int | tuple[int, int]
"""A step to one place of a value: a key, a list index on both sides, or (index in A, index in B) where two lists
were aligned."""
Place = tuple[Step, ...]
"""Where a value sits inside another, from the root."""

DROP: Any = object()
"""What a rewrite's `change` returns to take the node out of its container."""

_TOKEN = re.compile(r"\[(\*|[0-9]+)\]|([^.\[\]]+)|(\.)")


@dataclass(frozen=True)
class JsonPath:
    """A path into a value: `client_metadata`, `input[*].output`, `input[0].content[*].text`, or dotted
    (`input.*.output`); `*` stands for every key or list item, a number in a dotted path for a list index."""

    text: str
    steps: tuple[PatternStep, ...]

    @classmethod
    def parse(cls, text: str, what: str = "path") -> JsonPath:
        """Raises SettingError naming `what` (say, `ignore path`), the path and what is wrong with it."""
        if not isinstance(text, str) or not text:
            raise _bad(what, text, "a path is a non-empty string such as 'input[*].output'")
        steps: list[PatternStep] = []
        position, after_dot = 0, True
        while position < len(text):
            token = _TOKEN.match(text, position)
            if token is None:
                raise _bad(what, text, f"unexpected {text[position]!r} at position {position} (an index is [N] or [*])")
            after_dot = _take(token, steps, after_dot, lambda why: _bad(what, text, why))
            position = token.end()
        if after_dot:
            raise _bad(what, text, "it ends with '.'")
        return cls(text, tuple(steps))

    def covers(self, place: Place) -> bool:
        """Whether a place of a value is at or under this path."""
        steps = self.steps
        return len(steps) <= len(place) and all(map(_step_matches, steps, place))

    def rewrite(self, value: Any, change: Callable[[Any], Any]) -> Any:
        """`value` with `change` applied at every node on the path (containers on the way copied, the rest
        shared); `change` returns the new node, or `DROP` to take the node out."""
        return _rewrite(value, self.steps, change)

    def drop(self, value: Any) -> Any:
        return self.rewrite(value, lambda _node: DROP)


def covered(place: Place, paths: Sequence[JsonPath]) -> bool:
    """Whether a place is at or under one of the paths."""
    return any(path.covers(place) for path in paths)


def place_text(place: Place, side: int | None = None) -> str:
    """`input[2].arguments`, in the syntax of paths; an aligned index shows A's (side 0) or B's (side 1)."""
    text = ""
    for step in place:
        if isinstance(step, str):
            text += f".{step}" if text else step
        elif isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f"[{step[1] if side == 1 else step[0]}]"
    return text


def _bad(what: str, text: str, why: str) -> SettingError:
    return SettingError(f"invalid {what} {text!r}: {why}")


def _take(token: re.Match[str], steps: list[PatternStep], after_dot: bool, bad: Callable[[str], SettingError]) -> bool:
    """Adds a token's step (if it is one) to `steps`; whether the token was a dot."""
    index, name, dot = token.groups()
    position = token.start()
    if dot is not None:
        if after_dot:
            raise bad(f"empty name at position {position}")
        return True
    if name is not None:
        if not after_dot:
            raise bad(f"a '.' must come before the name at position {position}")
        steps.append(None if name == "*" else name)
        return False
    if not steps:
        raise bad("a path starts with a field name")
    if index != "*" and _index(index) is None:
        raise bad(f"the index at position {position} has over {MAX_DIGITS} digits")
    steps.append(None if index == "*" else _index(index))
    return False


def _step_matches(pattern: PatternStep, step: Step) -> bool:
    if pattern is None:
        return True
    if isinstance(step, str):
        return pattern == step
    if isinstance(pattern, str):  # a number in a dotted path: a list index
        index = _index(pattern)
        if index is None:
            return False
        pattern = index
    return pattern == step if isinstance(step, int) else pattern in step


def _rewrite(value: Any, steps: tuple[PatternStep, ...], change: Callable[[Any], Any]) -> Any:
    if not steps:
        return change(value)
    if isinstance(value, dict):
        return _rewrite_dict(value, steps, change)
    if isinstance(value, list):
        return _rewrite_list(value, steps, change)
    return value


def _rewrite_dict(value: dict[str, Any], steps: tuple[PatternStep, ...], change: Callable[[Any], Any]) -> Any:
    step, rest = steps[0], steps[1:]
    keys = list(value) if step is None else [step] if isinstance(step, str) and step in value else []
    if not keys:
        return value
    copy = dict(value)
    for key in keys:
        new = _rewrite(value[key], rest, change)
        if new is DROP:
            del copy[key]
        else:
            copy[key] = new
    return copy


def _rewrite_list(value: list[Any], steps: tuple[PatternStep, ...], change: Callable[[Any], Any]) -> Any:
    step, rest = steps[0], steps[1:]
    chosen = range(len(value)) if step is None else _index_range(step, len(value))
    if not chosen:
        return value
    items = list(value)
    for index in chosen:
        items[index] = _rewrite(value[index], rest, change)
    return [item for item in items if item is not DROP]


def _index_range(step: str | int, length: int) -> range:
    index = step if isinstance(step, int) else _index(step)
    return range(index, index + 1) if index is not None and 0 <= index < length else range(0)


def _index(text: str) -> int | None:
    """The list index a path's step writes (ASCII digits, not too many), else None."""
    try:
        return integer(text, "index")
    except BadRequest:
        return None

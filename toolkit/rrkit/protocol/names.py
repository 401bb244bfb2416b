"""Names a user gives (a preset, a setting key, a scenario): the closest valid one for a misspelt name, and
a name-or-list-of-names setting read as a tuple."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from .exceptions import SettingError


def did_you_mean(name: str, valid: Sequence[str]) -> str:
    """` (did you mean 'x'?)` for the valid name closest to `name`, or "" when none is close."""
    close = difflib.get_close_matches(name, valid, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_name(what: str, name: str, valid: Sequence[str], *, list_valid: bool = False) -> str:
    """`unknown <what> 'x' (did you mean 'y'?)`, followed by the valid names when none is close (or always)."""
    hint = did_you_mean(name, valid)
    return f"unknown {what} {name!r}{hint}" + (f"; valid: {', '.join(valid)}" if list_valid or not hint else "")


def names_of(what: str, value: object) -> tuple[str, ...]:
    """A string or a list of strings as a tuple (of names, paths, patterns); SettingError naming `what` otherwise."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise SettingError(f"{what} must be a string or a list of strings, got {value!r}")

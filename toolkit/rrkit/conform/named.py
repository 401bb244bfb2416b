"""Picking items of a catalogue (scenarios, probes) by the names a user gives, an unknown one refused with the
closest name and the command that lists them."""

from __future__ import annotations

from typing import Protocol, TypeVar

from ..protocol.exceptions import ConformError
from ..protocol.names import did_you_mean


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


def select_named(items: list[N], only: tuple[str, ...], noun: str, listed_by: str) -> list[N]:
    """The items named in `only` (all when empty), in their order; an unknown name is an error that suggests the
    closest and says which command lists them."""
    names = [item.name for item in items]
    for name in only:
        if name not in names:
            hint = did_you_mean(name, names)
            raise ConformError(f"no {noun} named {name!r}{hint}; `{listed_by}` lists them")
    return [item for item in items if not only or item.name in only]

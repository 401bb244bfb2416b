"""`MadeOnRead`: a read-only sequence that holds its items compactly and makes each one as it is read (a
stream's events, kept as their wire text however long the stream)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class MadeOnRead(Sequence[T]):
    """Give `__len__` and `_made_at(index)`; indexing (negative indices, slices) and equality to any sequence of
    equal items come from here."""

    __slots__ = ()

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _made_at(self, index: int) -> T:
        """The item at `index`, 0 <= index < len(self)."""

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        places = range(len(self))  # negative indices counted from the end; an IndexError beyond it
        if isinstance(index, slice):
            return [self._made_at(place) for place in places[index]]
        return self._made_at(places[index])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which have none

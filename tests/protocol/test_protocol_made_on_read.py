"""A sequence made on read indexes as a list does (negative indices, slices, IndexError past the end), equals any
sequence of equal items, and is unhashable like a list."""

from __future__ import annotations

import pytest

from rrkit.protocol.made_on_read import MadeOnRead


class Squares(MadeOnRead[int]):
    def __init__(self, count: int) -> None:
        self.count, self.made = count, 0

    def __len__(self) -> int:
        return self.count

    def _made_at(self, index: int) -> int:
        assert 0 <= index < self.count
        self.made += 1
        return index * index


def test_indexing_and_slicing_agree_with_a_list() -> None:
    squares, listed = Squares(6), [0, 1, 4, 9, 16, 25]
    for index in range(-6, 6):
        assert squares[index] == listed[index]
    for part in (slice(None), slice(1, 4), slice(None, None, -2), slice(-2, None), slice(10, 20)):
        assert squares[part] == listed[part]
    for index in (6, -7):
        with pytest.raises(IndexError):
            squares[index]


def test_a_slice_makes_only_the_items_it_holds() -> None:
    squares = Squares(1000)
    assert squares[10:13] == [100, 121, 144]
    assert squares.made == 3


def test_it_equals_any_sequence_of_equal_items_but_not_a_string() -> None:
    assert Squares(3) == [0, 1, 4] == Squares(3)
    assert Squares(3) == (0, 1, 4)
    assert Squares(3) != [0, 1]
    assert Squares(0) != ""
    with pytest.raises(TypeError):
        hash(Squares(1))

"""A package's public names, each loaded with its module on first use (PEP 562): declared once as
`{module: names}`, so that importing the package loads none of them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, Iterable[str]], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The package's `__getattr__` and `__dir__`; `homes` maps each relative module to the names it holds, and
    `public` (the package's `__all__`) must name exactly those."""
    home_of = {name: module for module, names in homes.items() for name in names}
    if sorted(home_of) != sorted(public):
        raise AssertionError(f"{package}: __all__ and the modules' names differ: {sorted(set(home_of) ^ set(public))}")

    def __getattr__(name: str) -> Any:
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home, package), name)

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *public])

    return __getattr__, __dir__

"""rrkit: record/replay protocol testing toolkit for the OpenAI Responses streaming protocol.

The names below load on first use (PEP 562), so that `import rrkit.protocol` loads no web framework."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .protocol.errors import RRKitError
    from .script import Script, load_script
    from .server import FakeServer

__all__ = ["FakeServer", "RRKitError", "Script", "load_script"]

_HOMES = {"FakeServer": ".server", "RRKitError": ".protocol.errors", "Script": ".script", "load_script": ".script"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'rrkit' has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

"""rrkit: record/replay protocol testing toolkit for the OpenAI Responses streaming protocol.

The names below load on first use (PEP 562), so that `import rrkit.protocol` loads no web framework."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .protocol.exceptions import RRKitError
    from .script import Script, load_script
    from .server import FakeServer

__all__ = ["FakeServer", "RRKitError", "Script", "load_script"]

_HOMES = {".server": ("FakeServer",), ".protocol.exceptions": ("RRKitError",), ".script": ("Script", "load_script")}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)

"""Cassettes: recorded exchanges (wire vs logical request, events with timing, outcome), redacted and replayable.

The names below load with their module on first use (PEP 562): the pytest plugin reads record modes at
start-up without loading the replay server or the proxy."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .format import Cassette, RecordedConnection, RecordedEvent, RecordedExchange
    from .match import MatchConfig
    from .modes import CassetteDeck
    from .presets import PRESETS
    from .proxy import RecordingProxy
    from .record import cassette_from_capture, cassette_from_trace
    from .recordmode import RecordMode
    from .redact import Redactor
    from .replay import CassetteSource
    from .store import CassetteError, dump_cassette, load_cassette, parse_cassette, save_cassette
    from .upstream import UpstreamSource

_HOMES = {
    ".format": ("Cassette", "RecordedConnection", "RecordedEvent", "RecordedExchange"),
    ".match": ("MatchConfig",),
    ".modes": ("CassetteDeck",),
    ".presets": ("PRESETS",),
    ".proxy": ("RecordingProxy",),
    ".record": ("cassette_from_capture", "cassette_from_trace"),
    ".recordmode": ("RecordMode",),
    ".redact": ("Redactor",),
    ".replay": ("CassetteSource",),
    ".store": ("CassetteError", "dump_cassette", "load_cassette", "parse_cassette", "save_cassette"),
    ".upstream": ("UpstreamSource",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "PRESETS",
    "Cassette",
    "CassetteDeck",
    "CassetteError",
    "CassetteSource",
    "MatchConfig",
    "RecordMode",
    "RecordedConnection",
    "RecordedEvent",
    "RecordedExchange",
    "RecordingProxy",
    "Redactor",
    "UpstreamSource",
    "cassette_from_capture",
    "cassette_from_trace",
    "dump_cassette",
    "load_cassette",
    "parse_cassette",
    "save_cassette",
]


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'rrkit.cassette' has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

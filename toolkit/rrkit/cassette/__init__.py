"""Cassettes: recorded exchanges (wire vs logical request, events with timing, outcome), redacted and replayable.

The names below load with their module on first use (PEP 562): the pytest plugin reads record modes at
start-up without loading the replay server or the proxy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..protocol.exceptions import CassetteError
    from ..relay.source import UpstreamSource
    from .file import CassetteFile
    from .format import Cassette, RecordedConnection, RecordedEvent, RecordedExchange
    from .match import MatchConfig
    from .modes import CassetteDeck
    from .presets import PRESETS
    from .proxy import RecordingProxy
    from .record import cassette_from_capture, cassette_from_trace
    from .recordmode import RecordMode
    from .redact import Redactor
    from .replay import CassetteSource
    from .store import dump_cassette, load_cassette, parse_cassette, save_cassette

_HOMES = {
    ".file": ("CassetteFile",),
    ".format": ("Cassette", "RecordedConnection", "RecordedEvent", "RecordedExchange"),
    ".match": ("MatchConfig",),
    ".modes": ("CassetteDeck",),
    ".presets": ("PRESETS",),
    ".proxy": ("RecordingProxy",),
    ".record": ("cassette_from_capture", "cassette_from_trace"),
    ".recordmode": ("RecordMode",),
    ".redact": ("Redactor",),
    ".replay": ("CassetteSource",),
    "..protocol.exceptions": ("CassetteError",),
    ".store": ("dump_cassette", "load_cassette", "parse_cassette", "save_cassette"),
    "..relay.source": ("UpstreamSource",),
}

__all__ = [
    "PRESETS",
    "Cassette",
    "CassetteDeck",
    "CassetteError",
    "CassetteFile",
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


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)

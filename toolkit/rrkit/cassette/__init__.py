"""Cassettes: recorded exchanges (wire vs logical request, events with timing, outcome), redacted and replayable."""

from .format import (
    FORMAT_VERSION,
    Cassette,
    RecordedConnection,
    RecordedEvent,
    RecordedExchange,
)
from .match import MatchConfig, logical_content, logical_content_differences
from .modes import CassetteSession, RecordMode, parse_record_mode
from .normalize import Normalizer, normalize_cassette, stabilize_cassette
from .proxy import RecordingProxy
from .record import cassette_from_capture, cassette_from_trace
from .redact import DEFAULT_HEADERS, MARKER, Redactor
from .replay import CassetteSource
from .store import CassetteError, dump_cassette, load_cassette, parse_cassette, save_cassette
from .upstream import UpstreamSource

__all__ = [
    "DEFAULT_HEADERS",
    "FORMAT_VERSION",
    "MARKER",
    "Cassette",
    "CassetteError",
    "CassetteSession",
    "CassetteSource",
    "MatchConfig",
    "Normalizer",
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
    "logical_content",
    "logical_content_differences",
    "normalize_cassette",
    "parse_cassette",
    "parse_record_mode",
    "save_cassette",
    "stabilize_cassette",
]

"""Which kind of rrkit file a path holds, by its top-level keys: for a one-line "this is a script, use --script"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

FileKind = Literal["cassette", "script"]

CASSETTE_KEYS = frozenset({"rrkit_cassette", "exchanges", "connections"})
SCRIPT_KEYS = frozenset({"responses", "handshakes", "default"})


def file_kind(path: Path | str) -> FileKind | None:
    """`cassette` (a `rrkit_cassette` version, or `exchanges`), `script` (`responses`, `handshakes` or `default`),
    or None when the file cannot be read or is neither."""
    import yaml  # only for a file in doubt: opening a cassette loads no YAML parser

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if "rrkit_cassette" in keys or ("exchanges" in keys and not keys & SCRIPT_KEYS):
        return "cassette"
    if keys & SCRIPT_KEYS:
        return "script"
    return None


def not_a_cassette(path: Path | str, hint: str) -> str | None:
    """The one-line error for a script given where a cassette is expected (None when it is not a script)."""
    if str(path).startswith("fixture:"):
        return f"{path} is a shipped script, not a cassette: {hint}"
    if file_kind(path) == "script":
        return f"{path} is a script (YAML/JSON with `responses`), not a cassette: {hint}"
    return None


def not_a_script(path: Path | str, hint: str) -> str | None:
    """The one-line error for a cassette given where a script is expected (None when it is not a cassette)."""
    if file_kind(path) == "cassette":
        return f"{path} is a cassette (JSON with `rrkit_cassette` and `exchanges`), not a script: {hint}"
    return None

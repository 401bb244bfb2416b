"""Which kind of rrkit file a parsed file is, by its top-level keys: for a one-line "this is a script, use
--script" (from the loader's own parse: a refused file is never read again)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

FileKind = Literal["cassette", "script"]

CASSETTE_KEYS = frozenset({"rrkit_cassette", "exchanges", "connections"})
SCRIPT_KEYS = frozenset({"responses", "handshakes", "default"})
YAML_SUFFIXES = (".yaml", ".yml")


def file_kind(path: Path | str) -> FileKind | None:
    """The kind of an existing file about to be replaced (`kind_of` its content, parsed once, as its suffix
    says: YAML for .yaml/.yml, else JSON); None when it cannot be read or parsed, or is neither."""
    import json

    try:
        text = Path(path).read_text(encoding="utf-8")
        if Path(path).suffix.lower() in YAML_SUFFIXES:
            from .yaml_reader import read_yaml  # bounded as every YAML rrkit reads

            return kind_of(read_yaml(text)[0])
        return kind_of(json.loads(text))
    except Exception:  # unreadable, not UTF-8, no JSON or YAML, nested too deep: nothing to name it by
        return None


def kind_of(data: object) -> FileKind | None:
    """`cassette` (a `rrkit_cassette` version, or `exchanges`), `script` (`responses`, `handshakes` or `default`),
    or None, from a file's parsed content (its top-level keys)."""
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if "rrkit_cassette" in keys or ("exchanges" in keys and not keys & SCRIPT_KEYS):
        return "cassette"
    if keys & SCRIPT_KEYS:
        return "script"
    return None


def not_a_cassette(path: Path | str, hint: str, seemed: str | None = None) -> str | None:
    """The one-line error for a script given where a cassette is expected (None when it is not one): by the kind
    the loader's one parse saw (`seemed`), else by its name (a shipped script, a YAML file); never read again."""
    if str(path).startswith("fixture:"):
        return f"{path} is a shipped script, not a cassette: {hint}"
    if seemed == "script" or (seemed is None and Path(path).suffix.lower() in YAML_SUFFIXES):
        return f"{path} is a script (YAML/JSON with `responses`), not a cassette: {hint}"
    return None


def not_a_script(path: Path | str, hint: str, seemed: str | None = None) -> str | None:
    """The one-line error for a cassette given where a script is expected (None when it is not one), by the kind
    the loader's one parse saw."""
    if seemed == "cassette":
        return f"{path} is a cassette (JSON with `rrkit_cassette` and `exchanges`), not a script: {hint}"
    return None

"""The scripts shipped with rrkit (package data, one per fault family), addressable as `fixture:NAME`."""

from __future__ import annotations

import difflib
from importlib.resources import files
from pathlib import Path

FIXTURE_PREFIX = "fixture:"
SCRIPT_SUFFIXES = (".yaml", ".yml", ".json")


def shipped_directory() -> Path:
    """Where the shipped scripts are installed (the repository's `fixtures/` links here)."""
    return Path(str(files("rrkit") / "fixtures"))


def script_files(directory: Path) -> list[Path]:
    """The script files (YAML or JSON) of a folder, in name order."""
    return sorted(path for path in directory.iterdir() if path.suffix in SCRIPT_SUFFIXES and path.is_file())


def fixtures_folder(explicit: Path | None = None) -> Path:
    """The scripts to run (`rrkit demo`, `rrkit compare-codex`): `explicit`, else `./fixtures`, else the
    shipped ones."""
    if explicit is not None:
        return explicit
    here = Path.cwd() / "fixtures"
    return here if here.is_dir() else shipped_directory()


def shipped_fixtures() -> dict[str, Path]:
    """The shipped scripts by name (their file stem), in name order."""
    return {path.stem: path for path in script_files(shipped_directory())}


def script_path(reference: str | Path) -> Path:
    """A script file: `fixture:NAME` names a shipped script, anything else is a path. An unknown fixture name
    raises LookupError with the nearest names."""
    text = str(reference)
    if not text.startswith(FIXTURE_PREFIX):
        return Path(reference)
    name = text.removeprefix(FIXTURE_PREFIX).removesuffix(".yaml")
    known = shipped_fixtures()
    if name in known:
        return known[name]
    near = difflib.get_close_matches(name, known, n=3)
    hint = f"did you mean {' or '.join(FIXTURE_PREFIX + n for n in near)}? " if near else ""
    raise LookupError(f"{text}: no shipped script of that name; {hint}`rrkit fixtures` lists them")

"""What `rrkit conform --list` shows of each shipped scenario, profile and server probe, read from its file as a
document: no model is built to list them (a test holds each entry equal to its model's fields)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files.documents import read_document
from ..protocol.exceptions import ConformError
from ..protocol.vocabulary import TRANSPORTS
from .named import select_named

CATALOGUE = Path(__file__).parent / "scenarios"
"""The scenario files shipped with rrkit."""
PROFILES = Path(__file__).parent / "profiles"
"""The profiles shipped with rrkit."""
PROBES = Path(__file__).parent / "server" / "probes"
"""The server probes shipped with rrkit."""


@dataclass(frozen=True)
class Listed:
    """A scenario, a profile or a probe as the list shows it."""

    name: str
    description: str
    transports: tuple[str, ...] = ()
    opt_in: bool = False


def listed_scenarios(only: tuple[str, ...] = ()) -> list[Listed]:
    """Every shipped scenario (the opt-in ones too), or those named in `only`, in catalogue order."""
    return select_named(_listed(CATALOGUE, "scenario"), only, "scenario", "rrkit conform --list")


def listed_probes(only: tuple[str, ...] = ()) -> list[Listed]:
    """Every shipped server probe, or those named in `only`, in catalogue order."""
    return select_named(_listed(PROBES, "probe"), only, "probe", "rrkit conform --server URL --list")


def _listed(folder: Path, what: str) -> list[Listed]:
    listed = []
    for path in sorted(folder.glob("*.yaml")):
        data = _document(path, what)
        transports = data.get("transports") or TRANSPORTS
        listed.append(Listed(str(data["name"]), str(data["description"]), tuple(transports), bool(data.get("opt_in"))))
    return listed


def listed_profiles() -> list[Listed]:
    """Every shipped profile, by name."""
    return [
        Listed(str(data["name"]), str(data["description"]))
        for data in (_document(path, "profile") for path in sorted(PROFILES.glob("*.yaml")))
    ]


def _document(path: Path, what: str) -> dict[str, Any]:
    data, _ = read_document(path, what, ConformError)
    if not isinstance(data, dict):
        raise ConformError(f"{path}: a shipped {what} is not a mapping: reinstall rrkit")
    return data

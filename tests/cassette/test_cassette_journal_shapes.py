"""A journal line that is valid JSON but not a whole record (a key renamed, a timestamp that is a word, a value of
the wrong kind) stops recovery with a message naming the journal and the line, exit status 2, never a traceback,
and the journal stays as it was (nothing recorded is lost)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rrkit.cassette.journal import recover_journals
from rrkit.cli import main
from rrkit.protocol.exceptions import CassetteError

from .test_cassette_journal import one_exchange_recording

pytestmark = pytest.mark.hostile


def _crashed_recording(cassette: Path) -> Path:
    """A recording of one exchange whose process died: its journal left next to the cassette, unlocked."""
    _, _, journal = one_exchange_recording(cassette)
    os.close(journal._fd)
    journal._live.release()
    return journal.path


def _renamed_id(record: dict[str, Any]) -> None:
    record["exchange"]["idx"] = record["exchange"].pop("id")


def _worded_time(record: dict[str, Any]) -> None:
    record["exchange"]["started_at"] = "soon"


def _listed_events(record: dict[str, Any]) -> None:
    record["exchange"]["events"] = {"not": "a list"}


BREAKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "a key renamed": _renamed_id,
    "a timestamp that is a word": _worded_time,
    "events that are no list": _listed_events,
}


def _broken(tmp_path: Path, breaks: Callable[[dict[str, Any]], None]) -> tuple[Path, Path, int, bytes]:
    cassette = tmp_path / "c.json"
    journal = _crashed_recording(cassette)
    lines = journal.read_text(encoding="utf-8").splitlines()
    number = next(index for index, line in enumerate(lines, start=1) if '"exchange"' in line)
    record = json.loads(lines[number - 1])
    breaks(record)
    lines[number - 1] = json.dumps(record)
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cassette, journal, number, journal.read_bytes()


@pytest.mark.parametrize("how", list(BREAKS))
def test_recover_names_the_line_exits_2_and_keeps_the_journal(tmp_path: Path, how: str) -> None:
    cassette, journal, number, before = _broken(tmp_path, BREAKS[how])
    result = CliRunner().invoke(main, ["recover", str(cassette)])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"line {number}" in said and journal.name in said and "Traceback" not in result.output
    assert journal.read_bytes() == before


@pytest.mark.parametrize("how", list(BREAKS))
def test_recovery_raises_a_cassette_error_naming_the_line(tmp_path: Path, how: str) -> None:
    cassette, _, number, _ = _broken(tmp_path, BREAKS[how])
    with pytest.raises(CassetteError, match=f"line {number}"):
        recover_journals(cassette)

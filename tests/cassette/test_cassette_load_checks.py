"""Loader checks: files that are not UTF-8 are named with the byte offset (API, CLI, plugin); a cassette that
contradicts itself is refused with the place named; a newer format version says it was written by a newer rrkit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rrkit.cassette.store import load_cassette, parse_cassette
from rrkit.protocol.exceptions import CassetteError, ScriptError
from rrkit.script.loader import load_script

NOT_UTF8 = b'{"rrkit_cassette": 1, "name": "caf\xe9", "exchanges": []}\n'  # a latin-1 e-acute at byte 34


def stream(*kinds: str) -> list[dict[str, Any]]:
    return [{"at": 0.0, "event": {"type": kind}} for kind in kinds]


def cassette(exchanges: list[dict[str, Any]], connections: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"rrkit_cassette": 1, "connections": connections or [], "exchanges": exchanges}


def rrkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rrkit", *args], capture_output=True, text=True, timeout=60)


def test_a_cassette_that_is_not_utf8_is_named_with_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(NOT_UTF8)
    with pytest.raises(CassetteError, match=r"latin1\.json: byte offset 34: not UTF-8 .*re-save the cassette as UTF-8"):
        load_cassette(path)


def test_a_script_that_is_not_utf8_is_named_with_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ScriptError, match=r"latin1\.yaml: byte offset 9: not UTF-8 .*re-save the script as UTF-8"):
        load_script(path)


@pytest.mark.parametrize(
    "args",
    [
        ("serve", "--cassette", "{cassette}"),
        ("show", "{cassette}"),
        ("diff", "{cassette}", "{cassette}"),
        ("serve", "--script", "{script}"),
    ],
    ids=["serve-cassette", "show", "diff", "serve-script"],
)
def test_the_cli_names_a_file_that_is_not_utf8_without_a_traceback(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "c.json").write_bytes(NOT_UTF8)
    (tmp_path / "s.yaml").write_bytes(b"name: caf\xe9\n")
    result = rrkit(*(a.format(cassette=tmp_path / "c.json", script=tmp_path / "s.yaml") for a in args))
    assert result.returncode != 0
    assert "byte offset" in result.stderr and "re-save" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "UnicodeDecodeError" not in result.stderr


def test_the_plugin_names_a_cassette_that_is_not_utf8(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "cassettes" / "test_user"
    folder.mkdir(parents=True)
    (folder / "weather.json").write_bytes(NOT_UTF8)
    pytester.makepyfile(
        test_user="""
import pytest

@pytest.mark.rrkit(cassette="weather")
def test_weather(rrkit_server):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)  # the fixture fails at setup, naming the file
    result.stdout.fnmatch_lines(["*weather.json: byte offset 34: not UTF-8*re-save the cassette as UTF-8*"])
    assert "UnicodeDecodeError" not in result.stdout.str()


def test_an_outcome_that_counts_events_the_cassette_does_not_hold_is_refused_with_the_exchange_named() -> None:
    data = cassette([{"id": 4, "transport": "http", "events": [], "outcome": {"kind": "completed", "events_sent": 13}}])
    with pytest.raises(CassetteError) as error:
        parse_cassette(data, "c.json")
    assert "exchanges[0] (id 4): outcome says completed after 13 event(s), but 0 event(s) are recorded" in str(
        error.value
    )


def test_an_outcome_that_contradicts_the_streams_last_event_is_refused() -> None:
    events = stream("response.created", "response.failed")
    data = cassette(
        [{"id": 0, "transport": "http", "events": events, "outcome": {"kind": "completed", "events_sent": 2}}]
    )
    with pytest.raises(
        CassetteError,
        match=r"exchanges\[0\] \(id 0\): outcome says completed, but the last recorded "
        r"event is 'response.failed'",
    ):
        parse_cassette(data, "c.json")


def test_duplicate_exchange_ids_are_refused_with_both_places_named() -> None:
    data = cassette([{"id": 1, "transport": "http"}, {"id": 2, "transport": "http"}, {"id": 1, "transport": "http"}])
    with pytest.raises(CassetteError, match=r"exchanges\[2\] \(id 1\): id 1 is also exchanges\[0\]'s"):
        parse_cassette(data, "c.json")


def test_an_exchange_on_a_connection_the_cassette_does_not_have_is_refused() -> None:
    data = cassette([{"id": 0, "transport": "ws", "connection": 7}], connections=[{"id": 0}])
    with pytest.raises(CassetteError, match=r"exchanges\[0\] \(id 0\): connection 7 is not in `connections`"):
        parse_cassette(data, "c.json")


def test_a_newer_format_version_says_it_was_written_by_a_newer_rrkit(tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"rrkit_cassette": 2, "exchanges": []}), encoding="utf-8")
    with pytest.raises(CassetteError) as error:
        load_cassette(path)
    assert str(error.value) == (f"{path}: written by a newer rrkit (format 2; this rrkit reads up to 1): upgrade rrkit")


def test_a_consistent_cassette_with_sse_comments_loads() -> None:
    events = stream("response.created", "rrkit.sse_comment", "response.completed")
    data = cassette(
        [{"id": 0, "transport": "http", "events": events, "outcome": {"kind": "completed", "events_sent": 2}}]
    )
    assert len(parse_cassette(data).exchanges[0].events) == 3

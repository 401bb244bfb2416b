"""`CassetteFile`, the one owner of a cassette file's life: it recovers a crashed recording's journal when opened,
reads without writing, refuses to overwrite a script, and saves under its folder's lock onto the file as it is
then (a write another process made while the save waited is kept), removing its own journal once saved."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rrkit.cassette.file import CassetteFile
from rrkit.cassette.format import Cassette, CassetteWarning, RecordedExchange
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.store import load_cassette, save_cassette
from rrkit.protocol.exceptions import CassetteError
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.script.models import Script
from rrkit.server.capture import Capture


def exchange_record(number: int, text: str) -> dict[str, object]:
    request = {"model": "m", "input": text}
    recorded = RecordedExchange(id=number, transport="http", wire_request=request, logical_request=request)
    return {"exchange": recorded.model_dump(mode="json")}


def inputs(path: Path) -> list[object]:
    return [(e.logical_request or {}).get("input") for e in load_cassette(path).exchanges]


def crashed_journal(path: Path, *texts: str) -> Path:
    """A journal as a recording killed mid-way leaves it: its records written, its lock gone with the process."""
    file = CassetteFile(path)
    journal = file.start_journal(replaces=False, name="c", source="fake-server", redaction=None)
    file.append(*(exchange_record(number, text) for number, text in enumerate(texts)))
    os.close(journal._fd)  # the process dies: its descriptor and its lock go with it
    journal._live.release()
    return journal.path


def test_open_recovers_a_crashed_journal_and_save_removes_its_own_journal(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    leftover = crashed_journal(path, "first", "second")
    file = CassetteFile(path)
    with pytest.warns(CassetteWarning, match=r"recovered 2 exchange\(s\)"):
        opened = file.open()
    assert opened is not None and inputs(path) == ["first", "second"]
    assert not leftover.exists() and file.journals() == []
    journal = file.start_journal(replaces=False, name="c", source="fake-server", redaction=None)
    assert file.journals() == [journal.path]
    written = file.save(opened.model_copy(update={"name": "saved"}))
    assert written == path and load_cassette(path).name == "saved"
    assert file.journal is None and file.journals() == []


def test_read_recovers_nothing_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_cassette(Cassette(name="as it was"), path)
    leftover = crashed_journal(path, "lost?")
    before = path.read_bytes()
    assert CassetteFile(path).read().name == "as it was"
    assert path.read_bytes() == before and leftover.exists()  # left for a recording's open, or `rrkit recover`


@pytest.mark.parametrize("read", [True, False], ids=["read", "rewrite"])
def test_a_script_at_the_path_is_named_as_one_and_never_overwritten(tmp_path: Path, read: bool) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("responses:\n  - output: [{text: hi}]\n")
    with pytest.raises(CassetteError, match=r"script\.yaml is a script .*, not a cassette: give another"):
        CassetteFile(script, hint="give another").open(read=read)
    assert script.read_text() == "responses:\n  - output: [{text: hi}]\n"


HOLD_THEN_WRITE = """
import sys
from pathlib import Path
from rrkit.cassette.format import Cassette, RecordedExchange
from rrkit.cassette.lock import directory_lock
from rrkit.cassette.store import save_cassette

path = Path(sys.argv[1])
with directory_lock(path.parent):
    print("held", flush=True)
    sys.stdin.readline()  # the other process's save is waiting for the lock now
    request = {"model": "m", "input": "written meanwhile"}
    exchange = RecordedExchange(id=0, transport="http", wire_request=request, logical_request=request)
    save_cassette(Cassette(exchanges=[exchange]), path)
"""


def test_save_waits_for_the_folder_lock_and_keeps_what_was_written_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "shared.json"
    deck = CassetteDeck.open(path, "all", upstream=Script())
    capture = Capture()
    deck.journal_to(capture)
    mine = capture.new_exchange("http", {}, {"model": "m", "input": "mine"})
    mine.logical_request = mine.wire_request
    mine.outcome = Outcome(OutcomeKind.DISCONNECTED)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THEN_WRITE, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        saving = threading.Thread(target=deck.save, args=(capture.exchanges, capture.connections))
        saving.start()
        time.sleep(0.5)
        assert saving.is_alive()  # waiting for the lock
        holder.communicate("go\n", timeout=60)
        saving.join(60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.communicate(timeout=30)
    assert not saving.is_alive()
    assert inputs(path) == ["written meanwhile", "mine"]  # read under the lock: the other write kept
    assert deck.journal is None and CassetteFile(path).journals() == []

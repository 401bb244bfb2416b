"""Cassette writes of parallel test processes (pytest-xdist workers) are serialized: two processes appending
to one cassette at once lose nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rrkit.cassette import load_cassette

WRITER = """
import sys
from pathlib import Path

from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.recordmode import RecordMode
from rrkit.cassette.lock import directory_lock as _directory_lock
from rrkit.protocol.outcome import Outcome, OutcomeKind
from rrkit.script import Script
from rrkit.server.capture import Exchange

path, label, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for n in range(count):
    request = {"model": "m", "input": f"{label}-{n}"}
    with _directory_lock(path.parent):  # what the plugin holds around a test's cassette write
        deck = CassetteDeck.open(path, RecordMode.ALL, upstream=Script())
        done = Outcome(OutcomeKind.COMPLETED)
        deck.save([Exchange(0, "http", None, {}, request, logical_request=request, outcome=done)], [])
"""
WRITES = 25


def test_two_processes_appending_to_one_cassette_at_once_lose_no_exchange(tmp_path: Path) -> None:
    writer = tmp_path / "writer.py"
    writer.write_text(WRITER)
    cassette = tmp_path / "cassettes" / "shared.json"
    cassette.parent.mkdir()
    processes = [
        subprocess.Popen([sys.executable, str(writer), str(cassette), label, str(WRITES)], stderr=subprocess.PIPE)
        for label in ("a", "b")
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
    inputs = {str((exchange.logical_request or {}).get("input")) for exchange in load_cassette(cassette).exchanges}
    assert inputs == {f"{label}-{n}" for label in ("a", "b") for n in range(WRITES)}

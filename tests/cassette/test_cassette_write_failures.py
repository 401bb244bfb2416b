"""A final cassette write that fails loses nothing: the path turned into a directory, a full disk (a small tmpfs),
a file system gone read-only, another process holding the folder's lock for long; a symlink (even a dangling one)
is written through. `rrkit serve` exits 1 naming the path, the reason and the journal that keeps every
exchange, and `rrkit recover PATH` (once the cause is fixed) makes the cassette with all of them."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from rrkit.cassette.journal import journal_paths
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.store import load_cassette
from rrkit.protocol import Outcome, OutcomeKind
from rrkit.protocol.exceptions import LockHeld
from rrkit.script import Script
from rrkit.server.capture import Capture

from .test_cassette_journal import journaled_exchanges

pytestmark = pytest.mark.hostile


def fill(folder: Path) -> None:
    """Take every byte left in `folder`'s file system."""
    with contextlib.suppress(OSError), (folder / "filler").open("wb") as filler:
        while True:
            filler.write(b"\0" * 4096)
            filler.flush()


def recover(cassette: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rrkit", "recover", str(cassette)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_cassette_path_that_became_a_directory_keeps_the_journal_and_recover_makes_the_cassette(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "session.json"
    err, code = serve_until_stopped(cassette, 5, breaking=Path.mkdir)
    assert code == 1 and f"cannot write the cassette {cassette}" in err and "Is a directory" in err, err
    assert f"rrkit recover {cassette}" in err and journaled_exchanges(cassette) == 5
    cassette.rmdir()
    assert "recovered 5 exchange(s)" in recover(cassette)
    assert len(load_cassette(cassette).exchanges) == 5 and journal_paths(cassette) == []


def serve_until_stopped(
    cassette: Path, questions: int, *, breaking: Callable[[Path], object], size: int = 100, first: bool = False
) -> tuple[str, int]:
    """Record `questions` exchanges, then break something (`breaking(cassette)`; `first`: before the first
    exchange), then stop with SIGTERM: (stderr, exit status)."""
    argv = ["serve", "--cassette", str(cassette), "--record-mode", "all", "--script", "fixture:text", "--port", "0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "rrkit", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = next(line.split()[-1] for line in process.stdout if "HTTP base URL:" in line)
        if first:
            breaking(cassette)
        with httpx.Client(trust_env=False, timeout=30) as client:
            for number in range(questions):
                body = {"model": "m", "input": f"question {number} " + "x" * size, "stream": True}
                assert client.post(url + "/responses", json=body).status_code == 200
        if not first:
            deadline = time.monotonic() + 60
            while journaled_exchanges(cassette) < questions and time.monotonic() < deadline:
                time.sleep(0.01)
            assert journaled_exchanges(cassette) == questions
            breaking(cassette)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    return err, process.returncode


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.decode().strip() or 'not permitted'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_full_disk_at_the_final_write_keeps_the_journal_and_recover_makes_the_cassette(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "1m") as folder:
        cassette = folder / "session.json"

        # what the 20 exchanges' journal left free, taken
        err, code = serve_until_stopped(cassette, 20, breaking=lambda _: fill(folder), size=2000)
        assert code == 1 and f"cannot write the cassette {cassette}" in err and "No space left on device" in err, err
        assert f"rrkit recover {cassette}" in err and journaled_exchanges(cassette) == 20
        assert [path.name for path in folder.iterdir() if path.name.endswith(".tmp")] == []  # no half-written file
        (folder / "filler").unlink()
        assert "recovered 20 exchange(s)" in recover(cassette)
        assert len(load_cassette(cassette).exchanges) == 20 and journal_paths(cassette) == []


def test_a_disk_full_from_the_first_exchange_is_said_true_nothing_could_be_kept(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "1m") as folder:  # the journal's header is written; nothing else fits
        err, code = serve_until_stopped(folder / "session.json", 3, breaking=lambda _: fill(folder), first=True)
    said = " ".join(err.split())
    assert code == 1 and "nothing could be kept" in said and "holds no exchange" in said, err
    assert "3 could not be journaled: they are lost" in said and "rrkit recover" not in said


def test_a_cassette_path_through_a_file_is_refused_at_the_start_naming_that_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    cassette = tmp_path / "afile" / "s.json"
    argv = ["serve", "--cassette", str(cassette), "--record-mode", "all", "--script", "fixture:text", "--port", "0"]
    done = subprocess.run([sys.executable, "-m", "rrkit", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "HTTP base URL" not in done.stdout
    assert f"{tmp_path / 'afile'} is a file, not a folder" in " ".join(done.stderr.split()), done.stderr


def test_recording_into_a_read_only_folder_is_refused_at_the_start_naming_it(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "small", "1m") as folder:
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        argv = ["serve", "--cassette", str(folder / "s.json"), "--record-mode", "all", "--script", "fixture:text"]
        done = subprocess.run([sys.executable, "-m", "rrkit", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "HTTP base URL" not in done.stdout
    assert f"{folder / 's.json'}: cannot write the recording's journal next to it: Read-only file system" in done.stderr


def test_recover_says_so_when_there_is_no_journal_and_leaves_the_cassette_alone(tmp_path: Path) -> None:
    cassette = tmp_path / "none.json"
    assert "no journal next to it, nothing to recover" in recover(cassette)
    assert not cassette.exists()


def test_a_folder_lock_held_by_another_process_fails_the_write_after_the_timeout_and_keeps_the_journal(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "held.json"
    deck = CassetteDeck.open(cassette, "all", upstream=Script())
    deck.lock_timeout = 0.5
    capture = Capture()
    deck.journal_to(capture)
    exchange = capture.new_exchange("http", {}, {"model": "m", "input": "hi"})
    exchange.outcome = Outcome(OutcomeKind.DISCONNECTED)
    holder = subprocess.Popen(  # another process writing cassettes in the same folder, for long
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockHeld) as held:
            deck.save(capture.exchanges, capture.connections)
        assert str(tmp_path) in str(held.value) and "more than 0.5 s" in str(held.value)
        assert not cassette.exists() and journaled_exchanges(cassette) == 1  # nothing lost
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    deck.save(capture.exchanges, capture.connections)  # the lock free again: written, the journal gone
    assert len(load_cassette(cassette).exchanges) == 1 and journal_paths(cassette) == []


def test_a_cassette_path_that_is_a_dangling_symlink_is_written_through_to_its_target(tmp_path: Path) -> None:
    cassette, target = tmp_path / "link.json", tmp_path / "gone" / "target.json"
    cassette.symlink_to(target)
    err, code = serve_until_stopped(cassette, 3, breaking=lambda path: None)
    assert code == 0, err
    assert cassette.is_symlink() and len(load_cassette(target).exchanges) == 3  # the link kept, its target made
    assert journal_paths(cassette) == []


HOLD_LOCK = """
import sys, time
from pathlib import Path
from rrkit.cassette.lock import lock_of
lock = lock_of(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
time.sleep(600)
"""

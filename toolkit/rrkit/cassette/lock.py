"""Cross-process locks for cassettes (`filelock`, so on every platform), kept in the temporary directory rather
than beside the cassettes."""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol.exceptions import LockHeld

if TYPE_CHECKING:
    from filelock import FileLock

LOCK_TIMEOUT = 60.0
"""Seconds a cassette write waits for another process writing cassettes in the same folder."""


def lock_of(path: Path, *, reentrant: bool = False) -> FileLock:
    """A cross-process lock named after `path`, kept in the temporary directory (not beside the cassettes);
    `reentrant`: one lock object per path in this process, which its holder (a thread) may take again."""
    from filelock import FileLock  # loaded by a write, not by every command that reads a cassette

    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    folder = Path(tempfile.gettempdir()) / "rrkit-locks"
    folder.mkdir(exist_ok=True)
    return FileLock(folder / f"{digest}.lock", is_singleton=reentrant)


@contextlib.contextmanager
def directory_lock(folder: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Serialize cassette rewrites in one folder across processes (every recording's final write, a recovery);
    LockHeld when another process holds it longer than `timeout` seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    from filelock import Timeout

    lock = lock_of(folder, reentrant=True)  # its holder may take it again (a read, then the write)
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise LockHeld(
            f"{folder}: another process has been writing cassettes in this folder for more than {timeout:g} s (it "
            f"holds the lock {lock.lock_file}): let it finish, or stop it, then try again"
        ) from None
    try:
        yield
    finally:
        lock.release()

"""Cross-process locks for cassettes (`filelock`, so on every platform), kept in the temporary directory rather
than beside the cassettes."""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock


def lock_of(path: Path) -> FileLock:
    """A cross-process lock named after `path`, kept in the temporary directory (not beside the cassettes)."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    folder = Path(tempfile.gettempdir()) / "rrkit-locks"
    folder.mkdir(exist_ok=True)
    return FileLock(folder / f"{digest}.lock")


@contextlib.contextmanager
def directory_lock(folder: Path) -> Iterator[None]:
    """Serialize cassette rewrites in one folder across processes (the lock the pytest plugin takes to save)."""
    folder.mkdir(parents=True, exist_ok=True)
    with lock_of(folder):
        yield

"""Atomic writes: a file written beside its target and renamed over it, so that a crash mid-write leaves the
previous file (if any) untouched and a reader never sees half of it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


def plain_mode(path: Path) -> int:
    """The mode a plain write would leave: the existing file's, else 0o666 less the umask (mkstemp makes 0o600)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def replacing(path: Path, mode: int, before_replace: Callable[[], None] | None = None) -> Iterator[BinaryIO]:
    """A binary handle on a temporary file in `path`'s folder; when the block ends, the file is closed, given
    `mode`, `before_replace` is called, and it replaces `path`. The temporary goes when anything fails."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.chmod(temporary, mode)
        if before_replace is not None:
            before_replace()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_page(page: str, path: Path | str) -> Path:
    """Write a page (a report, in HTML or JUnit XML) atomically, readable by all."""
    path = Path(path)
    with replacing(path, 0o644) as handle:  # mkstemp makes it private; a report is for reading
        handle.write(page.encode("utf-8"))
    return path

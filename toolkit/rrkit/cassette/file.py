"""`CassetteFile`: one cassette file's life on disk, from its path to its last save: its folder's lock, the
journals of crashed recordings recovered into it, its reading, its recording's journal, the atomic save."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..files.text import why_not_writable
from ..protocol.exceptions import CassetteError
from .format import Cassette, Redaction
from .journal_files import journal_paths
from .lock import LOCK_TIMEOUT, directory_lock
from .store import load_cassette, save_cassette

if TYPE_CHECKING:
    from .journal import Journal

ANY_HINT = "give the path of a cassette (a script is never overwritten as one)"
"""What to do about a script given as a cassette, unless the caller says better (a command names its option)."""


@dataclass
class CassetteFile:
    """The cassette at `path`, the one owner of its file. `open` recovers the journals crashed recordings left
    beside it and reads it; `start_journal` journals a recording into it, each exchange as it ends; `save` writes
    it atomically under its folder's lock and removes the journal. A script at `path` is named as one (with
    `hint`, what to give instead) and never overwritten; a save that fails keeps the journal, and with it every
    exchange (`rrkit recover`)."""

    path: Path
    hint: str = ANY_HINT
    lock_timeout: float = LOCK_TIMEOUT  # how long a write waits for another process writing in the folder
    journal: Journal | None = field(default=None, init=False)  # the recording's, from `start_journal` to `save`

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the lock of the cassette's folder, which every write there holds (a thread may take it again);
        LockHeld naming the folder when another process holds it past `lock_timeout`."""
        with directory_lock(self.path.parent, self.lock_timeout):
            yield

    def journals(self) -> list[Path]:
        """The journals beside the cassette: live recordings' and crashes' leftovers alike."""
        return journal_paths(self.path)

    def recover(self) -> int:
        """Merge the journals crashed recordings left into the cassette (`journal.recover_journals`): the number
        of exchanges recovered, each journal named in a CassetteWarning."""
        from .journal import recover_journals

        return recover_journals(self.path, self.lock_timeout)

    def open(self, *, read: bool = True) -> Cassette | None:
        """Recover what crashed recordings left, then the cassette as it is: None when there is no such file, or
        when not `read` (a recording that replaces it, checked to be no script)."""
        if self._shipped:
            self._refuse_a_script(" (it is not overwritten)")
        if not read and self.path.exists():  # about to be replaced: read once, to be sure it is no script
            from ..files.kind import file_kind

            self._refuse_a_script(" (it is not overwritten)", seemed=file_kind(self.path))
        self.recover()
        return self.current() if read else None

    def read(self) -> Cassette:
        """The cassette as it is on disk, validated, nothing recovered or written (show, diff, replay);
        CassetteError naming the file and the problem, a script named as one."""
        if self._shipped:
            self._refuse_a_script()
        try:
            return load_cassette(self.path)
        except CassetteError as error:
            self._refuse_a_script(seemed=error.seemed)
            raise

    def current(self) -> Cassette | None:
        """`read`, or None when there is no such file."""
        return self.read() if self.path.exists() else None

    @property
    def _shipped(self) -> bool:
        """A shipped script's name (`fixture:NAME`), which no cassette has."""
        return str(self.path).startswith("fixture:")

    def _refuse_a_script(self, then: str = "", seemed: str | None = None) -> None:
        from ..files.kind import not_a_cassette

        if problem := not_a_cassette(self.path, self.hint + then, seemed):
            raise CassetteError(problem)

    def start_journal(self, *, replaces: bool, name: str, source: str, redaction: Redaction | None) -> Journal:
        """The journal of a recording into the cassette (`journal.Journal`), until `save`; CassetteError naming
        the cassette when its folder cannot hold it (refused before any exchange)."""
        from .journal import Journal

        if self.journal is None:
            try:
                self.journal = Journal.start(
                    self.path, replaces=replaces, name=name, source=source, redaction=redaction
                )
            except OSError as error:
                why = why_not_writable(self.path, error)
                raise CassetteError(f"{self.path}: cannot write the recording's journal next to it: {why}") from None
        return self.journal

    def append(self, *records: dict[str, Any]) -> None:
        """Journal records of the recording (no-op once saved, or before `start_journal`)."""
        if self.journal is not None:
            self.journal.append(*records)

    def save(self, cassette: Cassette) -> Path:
        """Write `cassette` over the file (`_write`)."""
        return self._write(lambda: cassette)

    def save_onto(self, build: Callable[[Cassette | None], Cassette]) -> Path:
        """Write what `build` makes of the cassette as it is at the write, read under the lock (another process,
        a parallel test worker, may have added to it since it was opened), None when there is no such file."""
        return self._write(lambda: build(self.current()))

    def _write(self, make: Callable[[], Cassette]) -> Path:
        """Under the folder's lock, the cassette `make` gives written atomically (the journal told its digest
        just before it replaces the file); then the journal goes. Returns the path written."""
        journal = self.journal
        with self.locked():
            written = save_cassette(make(), self.path, before_replace=journal.mark_saved if journal else None)
        if journal is not None:
            journal.remove()
            self.journal = None
        return written

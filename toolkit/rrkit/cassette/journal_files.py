"""Where a recording's journals lie: beside their cassette, one per session (found without loading the journal's
machinery: `rrkit recover` with nothing to recover loads no cassette model)."""

from __future__ import annotations

import glob
from pathlib import Path

SUFFIX = ".journal.jsonl"


def journal_paths(cassette: Path) -> list[Path]:
    """The journals next to `cassette` (live sessions' and crashes' leftovers alike)."""
    return sorted(Path(cassette).parent.glob(glob.escape(Path(cassette).name) + ".*" + SUFFIX))

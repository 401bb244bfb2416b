"""A file's text: read within its size limit (`--limit`, RRKIT_LIMITS) and decoded as UTF-8, with errors that
name the file and say what to do."""

from __future__ import annotations

import os
from pathlib import Path

from ..protocol.exceptions import LimitError
from ..protocol.limits import LIMITS_ENV, configured, read_at_most, shown_size


def file_limit(path: Path, what: str, error_type: type[Exception], setting: str) -> int:
    """The bytes rrkit reads of a `what` file (the `setting` limit, `RRKIT_LIMITS` applied); `error_type` naming
    the file when the file is larger (by its size on disk) or the setting cannot be read."""
    try:
        limit: int = getattr(configured(os.environ), setting.replace("-", "_"))
    except LimitError as error:
        raise error_type(f"{path}: {error}") from None
    try:
        size = path.stat().st_size
    except OSError:
        return limit  # the read names what is wrong
    if size > limit:
        raise error_type(too_large(path, what, setting, limit, f"is {size} bytes"))
    return limit


def too_large(path: Path, what: str, setting: str, limit: int, how: str) -> str:
    return (
        f"{path}: the {what} {how}, more than the {shown_size(limit)} rrkit reads ({setting}); if it is one, raise "
        f"the limit: {LIMITS_ENV}={setting}=SIZE (or --limit {setting}=SIZE)"
    )


def read_utf8(path: Path, what: str, error_type: type[Exception], setting: str = "script-file") -> str:
    """The text of a UTF-8 file of at most the `setting` limit; `error_type` naming the file (and the byte offset,
    when it is not UTF-8)."""
    limit = file_limit(path, what, error_type, setting)
    try:
        with path.open("rb") as handle:
            content = read_at_most(handle, limit + 1)  # bounded, for what has no size on disk (a pipe)
    except OSError as error:
        raise error_type(f"{path}: cannot read {what}: {error.strerror or error}") from None
    if len(content) > limit:
        raise error_type(too_large(path, what, setting, limit, "is larger"))
    return decode_utf8(content, path, what, error_type)


def decode_utf8(
    content: bytes, place: Path | str, what: str, error_type: type[Exception], remedy: str | None = None
) -> str:
    """UTF-8 bytes as text; `error_type` naming `place` (a file, or where a body came) and the byte offset when they
    are not, with what to do (`remedy`; by default, re-save the file)."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = content[error.start : error.start + 4]
        raise error_type(
            f"{place}: byte offset {error.start}: not UTF-8 (bytes {bad.hex(' ')}: {error.reason}); "
            f"{remedy or f're-save the {what} as UTF-8'}"
        ) from None


def why_not_writable(path: Path, error: OSError) -> str:
    """What an OSError writing `path` (or a file beside it) means for a person: a folder on its way that is a file
    is named as such (the OS says only `File exists` or `Not a directory`)."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a folder: give a path in a folder"
            break
    return str(error.strerror or error)

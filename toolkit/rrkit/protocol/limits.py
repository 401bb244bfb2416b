"""The sizes rrkit accepts of what it reads (request bodies as sent and decoded, WebSocket messages, what an
upstream sends, script and cassette files), each a setting with a default, and the parsing of `NAME=SIZE`
settings (`body=32MiB`), given as `--limit` options or in the `RRKIT_LIMITS` environment variable."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from .exceptions import BadRequest, LimitError
from .names import did_you_mean
from .numbers import integer, shown_value

MiB = 1024 * 1024
LIMITS_ENV = "RRKIT_LIMITS"
"""`NAME=SIZE` settings for every command, blank-separated (`RRKIT_LIMITS="cassette-file=4GiB body=64MiB"`);
a command's `--limit` options apply over them."""
MEMORY_SHARES = {"exchanges": 0.5, "responses": 0.375, "unmatched": 0.125}
"""How a server's memory budget is shared: the window of recent exchanges (when it is not recording), the
completed HTTP responses kept for `previous_response_id`, the near-miss reports."""
UPSTREAM_TIMEOUT = 300.0
"""Seconds a relay's upstream may stay silent (mid-stream or before answering) before the stream counts as cut."""
UPSTREAM_CONNECT_TIMEOUT = 10.0
"""Seconds reaching a relay's upstream may take: the TCP connect, TLS and the WebSocket handshake."""
_UNITS = {"": 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": MiB, "gb": 1000**3, "gib": 1024**3}
_SIZE = re.compile(r"\s*([0-9]+)\s*([a-z]*)\s*", re.IGNORECASE | re.ASCII)


@dataclass(frozen=True, slots=True)
class Limits:
    """`body`: a request body's bytes as sent (HTTP 413 above it, refused before it is read when its
    Content-Length says so); `decoded_body`: the same once its Content-Encoding is undone (413); `ws_message`: one
    WebSocket message (the socket is closed with 1009, message too big); `memory`: the bytes a server keeps of
    past exchanges (`MEMORY_SHARES`: the exchange window, the stored responses, the near misses), the oldest
    evicted first; `upstream_message`: what a relay (a proxy, a recording) reads of an upstream at once: an SSE
    line or message still unfinished at this size is cut (the exchange `dropped`), a whole answer over it is a 502,
    a WebSocket frame over it fails the upstream socket (the stream cut); `script_file`, `cassette_file`: the bytes
    of a script (scenario, profile) or cassette file rrkit reads (more is refused, naming the file)."""

    body: int = 32 * MiB
    decoded_body: int = 64 * MiB
    ws_message: int = 32 * MiB
    memory: int = 512 * MiB
    upstream_message: int = 16 * MiB
    script_file: int = 64 * MiB
    cassette_file: int = 1024 * MiB

    def share(self, store: str) -> int:
        """The bytes of `memory` one store may keep."""
        return int(self.memory * MEMORY_SHARES[store])

    @classmethod
    def names(cls) -> list[str]:
        """The settings by their command-line names: `body`, `decoded-body`, `ws-message`, ..."""
        return [field.name.replace("_", "-") for field in dataclasses.fields(cls)]

    def with_settings(self, settings: Iterable[str]) -> Limits:
        """These limits with `NAME=SIZE` settings applied (`body=8MiB`, `ws-message=1000000`)."""
        changes: dict[str, int] = {}
        for setting in settings:
            name, sep, size = setting.partition("=")
            name = name.strip().lower()
            if not sep or name not in self.names():
                hint = did_you_mean(name, self.names())
                raise LimitError(
                    f"limit {setting!r}: give NAME=SIZE, NAME one of {', '.join(self.names())}{hint}, e.g. body=32MiB"
                )
            changes[name.replace("-", "_")] = parse_size(size, f"limit {name}")
        return dataclasses.replace(self, **changes)


_GIVEN: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("rrkit_limits", default=None)


@contextlib.contextmanager
def given_limits(limits: Limits) -> Iterator[Limits]:
    """Within the block, `configured()` gives these limits (a command's own, its `--limit` options applied)."""
    token = _GIVEN.set(limits)
    try:
        yield limits
    finally:
        _GIVEN.reset(token)


def configured(environ: Mapping[str, str]) -> Limits:
    """The limits a command gave (`given_limits`), else the defaults with the settings of `RRKIT_LIMITS` in
    `environ` applied (LimitError naming it)."""
    if (given := _GIVEN.get()) is not None:
        return given
    settings = environ.get(LIMITS_ENV, "").split()
    try:
        return Limits().with_settings(settings)
    except LimitError as error:
        raise LimitError(f"{LIMITS_ENV}: {error}") from None


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from `123`, `64KiB`, `32MiB`, `1GB` (a positive whole number, a unit of B, KB/KiB, MB/MiB, GB/GiB)."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    try:  # ASCII digits, not too many of them
        number = integer(match.group(1), what, low=1) if match is not None and unit in _UNITS else 0
    except BadRequest:
        number = 0
    if not number:
        raise LimitError(
            f"{what}: {shown_value(text)} is not a size: give bytes, or a number with KiB, MiB or GiB (e.g. 32MiB)"
        )
    return number * _UNITS[unit]


def shown_size(size: int) -> str:
    """`33554432` as `32 MiB`, `1500` as `1500 bytes`."""
    for unit, scale in (("GiB", 1024**3), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} bytes"


class Readable(Protocol):
    """A binary file, or a decompressing reader."""

    def read(self, size: int = -1, /) -> bytes: ...


def read_at_most(handle: Readable, size: int) -> bytes:
    """Up to `size` bytes, read a MiB at a time: `read(size)` allocates all of `size` at once, even for a small file."""
    parts: list[bytes] = []
    while size > 0 and (part := handle.read(min(size, 1 << 20))):
        parts.append(part)
        size -= len(part)
    return b"".join(parts)

"""An event's `type` read from its JSON text, the text checked to be one JSON object without building it: what a
relay needs of each event it passes on as it came."""

from __future__ import annotations

import operator
from collections.abc import Iterable

import msgspec


class _Typed(msgspec.Struct):
    type: str


_decode = msgspec.json.Decoder(_Typed).decode
_type_of = operator.attrgetter("type")


def checked_type(text: str | bytes) -> str | None:
    """The string `type` (the last one stated) of `text` when it is one valid JSON object (UTF-8, if bytes),
    else None: every value is read, none is built. None also for what only the standard library reads (NaN, a
    lone surrogate) and for nesting too deep to read: the caller reads those its own slower way."""
    try:
        if isinstance(text, bytes) and not text.isascii():
            text.decode()  # msgspec passes over the bytes of strings it does not keep
        return _decode(text).type
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None


def checked_types(texts: Iterable[str | bytes]) -> list[str] | None:
    """`checked_type` of many texts in one pass, bytes known to be UTF-8 (the caller checked): their types, or None
    when any is not one valid JSON object with a string `type` (check those one by one)."""
    try:
        return list(map(_type_of, map(_decode, texts)))
    except (msgspec.DecodeError, RecursionError):
        return None

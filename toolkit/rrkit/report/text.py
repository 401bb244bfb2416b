"""Untrusted text made safe to show: control and direction-changing characters written as escapes."""

from __future__ import annotations

import re

_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with control and direction-changing characters written as escapes: cassette content and a judged
    peer's output are untrusted, and an ESC sequence would drive the terminal (or a bidi override reorder the line)
    instead of being shown; a lone surrogate (JSON a peer sent can hold one) is no character any output can encode."""
    return _INVISIBLE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)

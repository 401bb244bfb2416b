"""Untrusted text made safe to show: control and direction-changing characters written as escapes, and a long text
quoted by its ends."""

from __future__ import annotations

import re

_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with control and direction-changing characters written as escapes: cassette content and a judged
    peer's output are untrusted, and an ESC sequence would drive the terminal (or a bidi override reorder the line)
    instead of being shown; a lone surrogate (JSON a peer sent can hold one) is no character any output can encode."""
    return _INVISIBLE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


QUOTE_EDGE = 2048
"""Characters kept at each end of one thing a judged peer wrote, quoted into a text (`quoted`)."""
REPORT_EDGE = 4 * QUOTE_EDGE
"""Characters kept at each end of any one text of a report (`bounded`): room for a few quoted things whole."""
_QUOTE_SLACK = 96  # more than the marker `quoted` puts between the ends: a quoted text is never quoted again


def quoted(text: str, edge: int = QUOTE_EDGE) -> str:
    """`text` as a report quotes what a judged peer wrote (an answer, its output, a body): whole when short, else
    its first and last `edge` characters with how many were left out between (a report's size, and the time to
    render it, never grow with what the peer wrote)."""
    if len(text) <= 2 * edge + _QUOTE_SLACK:
        return text
    left_out = len(text) - 2 * edge
    return f"{text[:edge]} [... {left_out:,} of {len(text):,} characters left out ...] {text[-edge:]}"


def bounded(text: str) -> str:
    """Any one text of a report, quoted by its ends past REPORT_EDGE characters each (`rrkit.report.model`)."""
    return quoted(text, REPORT_EDGE)


def bounded_within(value: object) -> object:
    """`value` (JSON-like: a judge's detail) with every text in it `bounded`."""
    if isinstance(value, str):
        return bounded(value)
    if isinstance(value, dict):
        return {key: bounded_within(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [bounded_within(item) for item in value]
    return value

"""Numbers read from text a request, a file or a command line controls (a query's `limit`, a filter's `since`): ASCII
digits only, at most `MAX_DIGITS` of them, within the range stated; anything else is a BadRequest naming the field."""

from __future__ import annotations

import re

from .exceptions import BadRequest

MAX_DIGITS = 18
"""The most digits a number read from text may have: every count, id, sequence number and time rrkit reads fits, and
so does a signed 64-bit integer's range (no longer text reaches `int()`, whose cost grows with its length)."""
LARGEST = 10**MAX_DIGITS - 1
FRACTION_DIGITS = 9
"""The most digits after a decimal point (nanoseconds, for times in seconds)."""

_INTEGER = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}", re.ASCII)
_DECIMAL = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}(?:\.[0-9]{{0,{FRACTION_DIGITS}}})?", re.ASCII)
_SHOWN = 40
"""The most characters of a refused value an error quotes (its length is said besides)."""


def shown_value(text: str) -> str:
    """`text` quoted for an error message: whole when short, else its start and its length."""
    if len(text) <= _SHOWN:
        return repr(text)
    return f"{text[:_SHOWN]!r}... ({len(text)} characters)"


def integer(text: str, param: str, *, low: int = 0, high: int = LARGEST) -> int:
    """The integer `text` writes in ASCII digits (a minus sign before them if `low` is negative), from `low` to
    `high`; a BadRequest naming `param` otherwise. No sign `+`, no spaces, no `_`, no other script's digits."""
    if _INTEGER.fullmatch(text) is None or (text[0] == "-" and low >= 0) or not low <= int(text) <= high:
        raise BadRequest(f"Invalid '{param}': expected {_range(low, high)}, got {shown_value(text)}.", param=param)
    return int(text)


def decimal(text: str, param: str) -> float:
    """A non-negative decimal number in ASCII digits, with at most MAX_DIGITS before the point and FRACTION_DIGITS
    after it (`1765098000.5`); a BadRequest naming `param` otherwise."""
    if _DECIMAL.fullmatch(text) is None:
        raise BadRequest(
            f"Invalid '{param}': expected a number in digits (at most {MAX_DIGITS} before the point and "
            f"{FRACTION_DIGITS} after it), got {shown_value(text)}.",
            param=param,
        )
    return float(text)


def _range(low: int, high: int) -> str:
    if high == LARGEST and low == -LARGEST:
        return f"an integer of at most {MAX_DIGITS} digits"
    if high == LARGEST:
        return f"an integer of at most {MAX_DIGITS} digits, {low} or more"
    return f"an integer from {low} to {high}"

"""JSON documents (scripts, scenarios, profiles, probes) read within a YAML file's bounds: memory at most
YAML_MEMORY_FACTOR times the text's size (estimated from the text before anything is built), nesting bounded."""

from __future__ import annotations

import json
import re
from typing import Any

from ..protocol.exceptions import ScriptError
from ..protocol.jsontext import UnsafeJSON, check_peer_depth, parse_json
from ..protocol.limits import MiB, shown_size
from .yaml_reader import YAML_MEMORY_FACTOR, YAML_MEMORY_FLOOR

DOCUMENT_DEPTH = 500
"""The deepest nesting of arrays and objects in a JSON document (a request as deep as the server accepts sits a few
levels down in a script; libyaml stops a YAML file at 1,000)."""

# Bytes a JSON value takes once read, from above (orjson's peak, measured: 20 per character for strings and
# numbers, 33 per character for a file of empty lists): a character of text, a list or object, a separator.
_CHAR_COST = 20
_OPEN_COST = 80
_SEPARATOR_COST = 16
_CHUNK = 65_536
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


class JsonBound(ScriptError):
    """A JSON document past its memory or nesting bound, or holding what JSON cannot (NaN); the message says
    which and where."""


class JsonSyntax(ScriptError):
    """Text that is not JSON, with its 1-based line and column."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


def read_json(text: str, what: str) -> Any:
    """A JSON text's data; JsonBound past its memory or nesting bound (checked before it is built), JsonSyntax
    when it is not one JSON value."""
    _check_memory(text)
    try:
        return parse_json(text, what=what, max_depth=DOCUMENT_DEPTH)
    except UnsafeJSON as error:
        syntax = error.__context__  # the standard library's error, line and column in it, when the text is no JSON
        if isinstance(syntax, json.JSONDecodeError):
            raise JsonSyntax(syntax.msg, syntax.lineno, syntax.colno) from None
        try:
            check_peer_depth(text, what=what, max_depth=DOCUMENT_DEPTH)
        except UnsafeJSON:  # said as a YAML file's nesting is (libyaml's bound)
            deep = f"nested too deeply to read (over {DOCUMENT_DEPTH} levels); is it an rrkit {what}?"
            raise JsonBound(deep) from None
        raise JsonBound(str(error)) from None


def _cost(segment: str) -> int:
    opens = segment.count("[") + segment.count("{")
    return _OPEN_COST * opens + _SEPARATOR_COST * (segment.count(",") + segment.count(":"))


def _check_memory(text: str) -> None:
    """JsonBound when the values of `text` would take more than its bound, naming where the bound is passed.
    One count over the whole text in the common case; strings are skipped only when that count is over."""
    limit = max(YAML_MEMORY_FLOOR, YAML_MEMORY_FACTOR * len(text))
    if _CHAR_COST * len(text) + _cost(text) <= limit:
        return
    used, start = 0, 0
    for match in _STRING.finditer(text):
        used = _passed(text, start, match.start(), used, limit)
        start = match.end()
    _passed(text, start, len(text), used, limit)


def _passed(text: str, start: int, end: int, used: int, limit: int) -> int:
    """`used` plus the cost of text[start:end] (outside strings); JsonBound at the first character past `limit`."""
    cost = _cost(text[start:end])
    if used + cost + _CHAR_COST * end <= limit:
        return used + cost
    while (cost := _cost(text[start : start + _CHUNK])) + used + _CHAR_COST * (start + _CHUNK) <= limit:
        used, start = used + cost, start + _CHUNK  # the chunk over the bound, then the character in it
    low, high = start, min(end, start + _CHUNK)
    while low < high:
        middle = (low + high) // 2
        if used + _cost(text[start : middle + 1]) + _CHAR_COST * (middle + 1) > limit:
            high = middle
        else:
            low = middle + 1
    line = text.count("\n", 0, low) + 1
    column = low - (text.rfind("\n", 0, low) + 1) + 1
    raise JsonBound(
        f"line {line}, column {column}: its values so far would take more than {limit / MiB:,.0f} MiB of memory, "
        f"the bound of a JSON file ({YAML_MEMORY_FACTOR} times its {len(text):,} characters, at least "
        f"{shown_size(YAML_MEMORY_FLOOR)}): rrkit stopped reading there; an rrkit file holds far fewer values for "
        "its size: is it the file you meant?"
    )

"""Strict JSON for what a client sends (a POST body, a WebSocket frame): parsed once, and refused with the field
named when it could not round-trip (a lone surrogate, NaN or Infinity, nesting beyond `MAX_DEPTH`, an integer of
more than `MAX_INTEGER_DIGITS` digits).

Integers are kept exact at any length read (a tool schema may carry `2**70`): orjson parses the common case fast, and
a body orjson would turn into floats (a run of 19 or more digits) or refuse is parsed by the standard library.
Nothing here recurses on the input: 100,000 nested lists are refused in a few milliseconds."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from .exceptions import BadRequest

MAX_DEPTH = 100
"""The deepest nesting of arrays and objects accepted in a request (the body object itself is level 1)."""

MAX_INTEGER_DIGITS = 4300
"""The most digits of an integer in a request (the interpreter's own default bound on reading digits, stated here
so that the refusal says so, and is the same under any interpreter setting)."""

INVALID_JSON = "invalid_json"

_INEXACT = float(2**63)
"""orjson reads integers beyond 64 bits as floats, all of them at least this big: a float that big may have been
an integer, so the body is parsed again by the standard library, which keeps it exact."""
_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
"""The tokens that matter for depth: strings (skipped, with the brackets inside them) and brackets."""


class UnsafeJSON(BadRequest):
    """JSON refused, with an OpenAI-style `param` (the field path, such as `input[0].content`) when known."""

    def __init__(self, message: str, *, param: str | None = None, code: str = INVALID_JSON) -> None:
        super().__init__(message, param=param, code=code)


def parse_json(text: str | bytes, *, what: str = "request body", max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of `text` (bytes must be UTF-8), or UnsafeJSON saying why and where it cannot be taken.
    `max_depth` is the nesting allowed (files that hold requests nest them a few levels deeper)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        pass  # the standard library says why (or accepts what orjson refuses: lone surrogates, NaN, ...)
    else:
        if _plain(value, max_depth):  # orjson refuses lone surrogates and non-finite numbers itself
            return value
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise UnsafeJSON(f"The {what} is not valid UTF-8 (byte {error.start}): send JSON as UTF-8.") from None
    _check_depth(text, what, max_depth)  # the standard library's parser recurses
    try:
        value = json.loads(text, parse_constant=_Constant, parse_int=_integer)
    except _LongInteger as long:
        raise UnsafeJSON(
            f"The {what} holds an integer of {long.digits} digits, more than the {MAX_INTEGER_DIGITS} rrkit reads."
        ) from None
    except (ValueError, RecursionError) as error:  # RecursionError cannot happen after _check_depth; be sure
        raise UnsafeJSON(f"The {what} is not valid JSON: {error}.") from None
    _check(value, what, max_depth)
    return value


def _plain(value: Any, max_depth: int) -> bool:
    """True if orjson's value is the JSON as sent: no nesting beyond MAX_DEPTH, no float that may have been a
    big integer. One pass, level by level, looking at containers and floats only (the common path: keep it fast)."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return kind is not float or -_INEXACT < value < _INEXACT
    level = [value]
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return False
        below = []
        for container in level:
            for child in container.values() if type(container) is dict else container:
                kind = type(child)
                if kind is dict or kind is list:
                    below.append(child)
                elif kind is float and not -_INEXACT < child < _INEXACT:
                    return False
        level = below
    return True


def field_path(path: tuple[str | int, ...]) -> str | None:
    """`('input', 0, 'content')` as `input[0].content`; keys are shown JSON-escaped (a lone surrogate as `\\ud800`)."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = json.dumps(part)[1:-1]
            text += f".{name}" if text else name
    return text or None


class _LongInteger(Exception):
    def __init__(self, digits: int) -> None:
        self.digits = digits


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _LongInteger(len(text.lstrip("-")))
    return int(text)


class _Constant:
    """`NaN`, `Infinity` or `-Infinity` where a value was: parsed as this marker, refused with its place."""

    def __init__(self, name: str) -> None:
        self.name = name


def _check_depth(text: str, what: str, max_depth: int) -> None:
    """Refuse nesting beyond MAX_DEPTH before any recursive parser sees it; stops at the first level too deep."""
    depth = 0
    key: str | None = None  # the last string at level 1: the key of a top-level field, when a bracket follows it
    for match in _SCAN.finditer(text):
        token = match.group()
        if token[0] == '"':
            if depth == 1:
                key = token
        elif token in "[{":
            depth += 1
            if depth > max_depth:
                field = None
                if key is not None:
                    try:
                        field = field_path((json.loads(key),))
                    except ValueError:
                        field = None
                raise _too_deep(what, field, max_depth)
        else:
            depth -= 1


def _too_deep(what: str, field: str | None, max_depth: int) -> UnsafeJSON:
    where = f" (in '{field}')" if field else ""
    return UnsafeJSON(
        f"The {what} nests arrays and objects deeper than {max_depth} levels{where}, the most rrkit accepts.",
        param=field,
    )


def _check(value: Any, what: str, max_depth: int) -> None:
    """Walk the value without recursion: nesting, lone surrogates (keys and values), NaN / Infinity and numbers
    that overflow, each refused with its field path."""
    # Each entry: a value, its depth (containers above it), and its place as a linked list (parent, key).
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        item, depth, place = stack.pop()
        if isinstance(item, dict):
            depth += 1
            if depth > max_depth:
                raise _too_deep(what, _top_field(place), max_depth)
            for key, child in item.items():
                if not _encodable(key):
                    raise _surrogate(what, _path((place, key)), key, "key")
                stack.append((child, depth, (place, key)))
        elif isinstance(item, list):
            depth += 1
            if depth > max_depth:
                raise _too_deep(what, _top_field(place), max_depth)
            for index, child in enumerate(item):
                stack.append((child, depth, (place, index)))
        elif isinstance(item, str):
            if not _encodable(item):
                raise _surrogate(what, _path(place), item, "value")
        elif isinstance(item, _Constant):
            path = _path(place)
            where = f"Invalid '{path}'" if path else f"The {what} is not valid JSON"
            raise UnsafeJSON(f"{where}: {item.name} is not a JSON number (JSON has no NaN or Infinity).", param=path)
        elif isinstance(item, float) and not math.isfinite(item):
            path = _path(place)
            raise UnsafeJSON(
                f"Invalid '{path}': the number is out of range (beyond a double, so it reads as Infinity).",
                param=path,
            )


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path(place: Any) -> str | None:
    parts: list[str | int] = []
    while place is not None:
        place, part = place
        parts.append(part)
    return field_path(tuple(reversed(parts)))


def _top_field(place: Any) -> str | None:
    """The top-level field a place is under (`tools` for `tools[0].parameters...`)."""
    top = None
    while place is not None:
        place, part = place
        top = part
    return field_path((top,)) if isinstance(top, str) else None


def _surrogate(what: str, path: str | None, text: str, kind: str) -> UnsafeJSON:
    lone = next((char for char in text if 0xD800 <= ord(char) <= 0xDFFF), "")
    shown = json.dumps(lone)[1:-1]
    where = f"Invalid '{path}'" if path else f"Invalid {what}"
    return UnsafeJSON(
        f"{where}: the {kind} holds a lone surrogate ({shown}), which is not Unicode text and cannot be sent on "
        "as UTF-8. Pair it, or remove it.",
        param=path,
    )


def json_size(value: Any) -> int:
    """About how many bytes a JSON value takes (its compact encoding's length): what a memory budget counts."""
    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):  # an integer past 64 bits, a key that is not a string
        return len(json.dumps(value, separators=(",", ":"), default=str))


PEER_DEPTH = 200
"""The deepest nesting read in JSON a peer sent (an upstream's event or body, a recorded frame): far past any
response, within what orjson writes back (255 levels, a cassette's few levels around it included) and what the
standard library's parser can recurse."""


def check_peer_depth(text: str, *, what: str, max_depth: int = PEER_DEPTH) -> None:
    """UnsafeJSON when `text` nests arrays and objects deeper than `max_depth`: nothing to do for a text too short
    to (every level takes two characters: most events a relay passes on), a count at C speed for one with fewer
    brackets than that, a scan otherwise."""
    if len(text) > 2 * max_depth and text.count("[") + text.count("{") > max_depth:
        _check_depth(text, what, max_depth)


def parse_peer_json(text: str | bytes | bytearray, *, what: str, max_depth: int = PEER_DEPTH) -> Any:
    """JSON a peer sent, read as the standard library reads it (NaN, a lone surrogate and integers of any length
    kept, to be passed on as they came; bytes in any encoding `json.loads` detects) but never recursing deeper
    than `max_depth`: UnsafeJSON (a ValueError) naming `what` when it is not JSON or nests deeper."""
    if not isinstance(text, str):
        try:
            text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
        except UnicodeDecodeError as error:
            raise UnsafeJSON(f"The {what} is not valid UTF-8 (byte {error.start}).") from None
    check_peer_depth(text, what=what, max_depth=max_depth)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise UnsafeJSON(f"The {what} is not valid JSON: {error}.") from None

"""What a request gives the server to state again, held to the spec as the service holds it: a create's echoed
fields (`CreateResponse`), a conversation's items (`ConversationItem`); the first a client with a strict schema would
refuse to read back is answered with the API's 400 naming it."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..protocol.exceptions import BadRequest
from ..protocol.response_object import echoed_tools
from .check import Strictness, Violation, check_body, check_schema
from .schemas import document, type_values

ECHOED = (
    "tools",
    "tool_choice",
    "reasoning",
    "text",
    "prompt",
    "prompt_cache_options",
    "truncation",
    "service_tier",
    "metadata",
)
"""The request fields a `Response` states again (`protocol.response_object`) whose shape the spec gives; the
scalar ones (`temperature`, `store`, ...) are `protocol.request_check`'s."""
EXTENSION = {"type": "function", "name": "extension"}
"""What stands in for a tool of a type the spec does not define: one that passes."""
CACHED = 256
"""Distinct sets of echoed fields whose verdict is kept: a client sends the same tools on every request."""


@functools.cache
def _tool_types() -> frozenset[str]:
    """The tool types the spec defines: a tool of another type is an extension, taken as it comes."""
    schemas = document()["components"]["schemas"]
    return frozenset().union(*(type_values(branch, schemas) for branch in schemas["Tool"]["oneOf"]))


def echoed_refusal(wire: Mapping[str, Any]) -> BadRequest | None:
    """The 400 for the first echoed field of `wire` the spec refuses (a tool of a type it does not define is not
    checked), or None."""
    fields = {name: wire[name] for name in ECHOED if wire.get(name) is not None}
    if isinstance(fields.get("tools"), list):
        known = _tool_types()
        fields["tools"] = echoed_tools(
            [EXTENSION if _extension(tool, known) else tool for tool in fields["tools"]]
        )  # as the response states them (a function tool's defaults); an extension keeps its place in the paths
    if not fields:
        return None
    try:
        text = orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a number orjson cannot write (beyond 64 bits): checked without the cache
        return _refusal(_first_broken(fields))
    return _refusal(_cached(text))


def _extension(tool: object, known: frozenset[str]) -> bool:
    """A tool of a type the spec does not define (a string it does not know): taken as it comes. A tool with no
    `type`, or one that is no string, is checked, and refused."""
    return isinstance(tool, Mapping) and isinstance(tool.get("type"), str) and tool["type"] not in known


@functools.lru_cache(maxsize=CACHED)
def _cached(text: bytes) -> Violation | None:
    return _first_broken(orjson.loads(text))


def _first_broken(fields: dict[str, Any]) -> Violation | None:
    body = {"model": "model", **fields}
    return next((v for v in check_schema("CreateResponse", body) if v.severity is Strictness.MUST), None)


def items_refusal(items: Sequence[Mapping[str, Any]], field: str) -> BadRequest | None:
    """The 400 for the first item of a conversation's `field` (as it would keep them) that is no `ConversationItem`
    a strict client reads, or None."""
    for index, item in enumerate(items):
        broken = [v for v in check_body("conversation_item", item, at=(field, index)) if v.severity is Strictness.MUST]
        if broken:
            return _refusal(broken[0])
    return None


def _refusal(violation: Violation | None) -> BadRequest | None:
    if violation is None:
        return None
    if violation.problem == "missing":
        return BadRequest.missing(violation.path)
    expected = re.split(r"[,;] got ", violation.problem)[0]  # not the value sent: it may be a credential
    return BadRequest(f"Invalid value for '{violation.path}': {expected}.", param=violation.path)

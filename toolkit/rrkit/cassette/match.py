"""Matching an incoming request against recorded ones, field by field, with a report of the closest one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..protocol.lite import from_lite
from ..protocol.request import INPUT_FIELD, input_items
from .format import RecordedExchange

VOLATILE_FIELDS: tuple[str, ...] = ("client_metadata", "prompt_cache_key", "metadata", "user", "safety_identifier")
"""Fields left out of matching by default: they change from run to run without changing what the model sees."""
VOLATILE_ITEM_KEYS: tuple[str, ...] = ("id",)
"""Keys of input items left out of matching by default (server-issued ids)."""


@dataclass(frozen=True)
class MatchConfig:
    """How requests are matched: on the logical request (default) or the wire request, and which fields count.

    `fields` limits matching to those top-level fields; `ignore` leaves fields out; `item_keys` are keys of
    input items that are left out (ids by default).
    """

    on: Literal["logical", "wire"] = "logical"
    fields: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = VOLATILE_FIELDS
    item_keys: tuple[str, ...] = VOLATILE_ITEM_KEYS

    def view(self, request: Mapping[str, Any] | None) -> dict[str, Any]:
        if not request:
            return {}
        chosen = {
            name: value
            for name, value in request.items()
            if name not in self.ignore and (self.fields is None or name in self.fields)
        }
        if "input" in chosen and isinstance(chosen["input"], list) and self.item_keys:
            chosen["input"] = [
                {k: v for k, v in item.items() if k not in self.item_keys} if isinstance(item, dict) else item
                for item in chosen["input"]
            ]
        return chosen


@dataclass
class MatchResult:
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    diffs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


def json_diff(recorded: Any, incoming: Any, name: str = "") -> list[str]:
    """Human-readable differences (recorded -> incoming), one line each, with paths like `input[2]['content']`."""
    from deepdiff import DeepDiff  # imported on first use: it pulls in numpy, slow to import

    diff = DeepDiff(recorded, incoming, verbose_level=2)
    return [line.replace("root", name or "value", 1) for line in diff.pretty().splitlines()] if diff else []


def compare(recorded: Mapping[str, Any] | None, incoming: Mapping[str, Any] | None, config: MatchConfig) -> MatchResult:
    """One matcher per top-level field of either request."""
    old, new = config.view(recorded), config.view(incoming)
    result = MatchResult()
    for name in sorted(set(old) | set(new)):
        if old.get(name) == new.get(name):
            result.passed.append(name)
        else:
            result.failed.append(name)
            result.diffs[name] = json_diff(old.get(name), new.get(name), name)
    return result


ENCODING_FIELDS: tuple[str, ...] = ("parallel_tool_calls",)
"""What Responses Lite sets differently on purpose, beyond moving instructions and tools into the input: it
forces `parallel_tool_calls` off, a real difference to the model (PROTOCOL.md section 8)."""


def logical_content(request: Mapping[str, Any] | None) -> dict[str, Any]:
    """A logical request as standard-encoded content: a Lite request decoded (`from_lite`), the input as a list
    of items, and the fields the encodings set differently (`ENCODING_FIELDS`) left out."""
    standard = from_lite(request or {})
    if INPUT_FIELD in standard:
        standard[INPUT_FIELD] = input_items(standard)
    return {name: value for name, value in standard.items() if name not in ENCODING_FIELDS}


def logical_content_differences(first: RecordedExchange, second: RecordedExchange) -> list[str]:
    """How two exchanges' logical requests differ in what they carry, whichever encoding (standard or Lite)
    each used: one line per difference, empty when both carry the same logical content."""
    return json_diff(logical_content(first.logical_request), logical_content(second.logical_request), "logical")

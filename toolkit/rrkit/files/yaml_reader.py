"""YAML read event by event into its data and the lines of its values (never a node tree), bounded as it is read:
memory at most YAML_MEMORY_FACTOR times the text's size, aliases at most one value per character of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..protocol.exceptions import ScriptError
from ..protocol.limits import MiB, shown_size

YAML_MEMORY_FACTOR = 24
"""A YAML document's data and lines take at most this many times its text's size in memory (at least
YAML_MEMORY_FLOOR): counted as each value is read, estimated from above (see `_PLACE_COST`)."""
YAML_MEMORY_FLOOR = 64 * MiB
MIN_EXPANDED = 1_000_000
"""Values a document may stand for once its aliases are expanded: one per character of its text, at least this many
(written out, a value takes at least a character: more is aliases standing for billions)."""

_PLACE_COST = 48  # bytes a value's place in its list or mapping takes, with its line
_VALUE_COST = 64  # bytes a value made takes (and its length): a short plain value read again is not made again
_COLLECTION_COST = 320  # an empty dict or list, its Lines and its place in its parent
_MISSING = object()
_SHORT = 32
_SHORT_KEPT = 65_536  # short plain values kept, each made once: repeated keys and values share one object
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_PLAIN_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map")


class YamlBound(ScriptError):
    """A YAML document past one of its bounds (memory, or aliases expanded); the message says which and where."""


@dataclass(slots=True)
class Lines:
    """The 1-based line of a list or mapping and of each of its values (an int for a scalar, Lines for a list or
    mapping), by index or key: what a validation error's place is looked up in."""

    line: int
    children: dict[Any, Lines | int] | list[Lines | int]

    def line_of(self, loc: tuple[int | str, ...]) -> int:
        """The line of the deepest value on `loc` (a validation error's place) that the document holds."""
        node: Lines | int = self
        for key in loc:
            if isinstance(node, int):
                break
            children = node.children
            found = key in children if isinstance(children, dict) else isinstance(key, int) and 0 <= key < len(children)
            if not found:
                break
            node = children[key]  # type: ignore[index]
        return node if isinstance(node, int) else node.line


class _Open:
    """A list or mapping being read: its value, its lines, the key waiting for its value, its merges (`<<`)."""

    __slots__ = ("anchor", "key", "keyed", "lines", "mark", "merges", "value", "values_before")

    def __init__(self, value: list[Any] | dict[Any, Any], line: int, anchor: str | None, count: int, mark: Any):
        self.value = value
        self.lines = Lines(line, {} if isinstance(value, dict) else [])
        self.key: Any = None
        self.keyed = False
        self.merges: list[tuple[dict[Any, Any], Lines]] = []
        self.anchor = anchor
        self.values_before = count
        self.mark = mark


class _Reader:
    """One document's events read into data and Lines, with its bounds counted as each value arrives."""

    def __init__(self, text: str):
        import yaml  # loaded with the first document read, not at start-up

        self.yaml = yaml
        self.loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # libyaml's parser where PyYAML has it
        self.constructors = self.loader.yaml_constructors
        self.size = len(text)
        self.memory_limit = max(YAML_MEMORY_FLOOR, YAML_MEMORY_FACTOR * len(text))
        self.expanded_limit = max(MIN_EXPANDED, len(text))
        self.memory = 0
        self.values = 0
        self.anchors: dict[str, tuple[Any, Lines | int, int]] = {}
        self.plain: dict[str, Any] = {}  # short plain values read before: made (and kept) once

    def document(self) -> tuple[Any, Lines | None]:
        events = self.yaml.events
        loader = self.loader
        try:
            loader.get_event()  # the stream's start
            if loader.check_event(events.StreamEndEvent):
                return None, None
            loader.get_event()  # the document's start
            value, lines = self._value()
            loader.get_event()  # the document's end
            if not loader.check_event(events.StreamEndEvent):
                found = loader.get_event().start_mark
                raise self.yaml.composer.ComposerError(
                    "expected a single document in the stream", None, "but found another document", found
                )
            return value, (lines if isinstance(lines, Lines) else None)
        finally:
            loader.dispose()

    def _value(self) -> tuple[Any, Lines | int]:
        events = self.yaml.events
        stack: list[_Open] = []
        while True:
            event = self.loader.get_event()
            kind = type(event)
            if kind is events.ScalarEvent:
                value, lines = self._scalar(event), event.start_mark.line + 1
                if event.anchor is not None:
                    self.anchors[event.anchor] = (value, lines, 1)
            elif kind is events.AliasEvent:
                value, lines = self._alias(event)
            elif kind is events.SequenceStartEvent or kind is events.MappingStartEvent:
                stack.append(self._open(event, [] if kind is events.SequenceStartEvent else {}))
                continue
            else:  # the end of the innermost list or mapping
                value, lines = self._close(stack.pop())
            if not stack:
                return value, lines
            self._add(stack[-1], value, lines, event)

    def _count(self, cost: int, values: int, event: Any) -> None:
        self.memory += cost
        self.values += values
        if self.memory > self.memory_limit:
            raise YamlBound(
                f"{_where(event)}: its {self.values:,} values so far would take more than "
                f"{self.memory_limit / MiB:,.0f} MiB of memory, the bound of a YAML file ({YAML_MEMORY_FACTOR} "
                f"times its {self.size:,} characters, at least {shown_size(YAML_MEMORY_FLOOR)}): rrkit stopped reading "
                "there; an rrkit file holds far fewer values for its size: is it the file you meant?"
            )
        if self.values > self.expanded_limit:
            raise YamlBound(
                f"{_where(event)}: its aliases expand to {self.values:,} values, more than "
                f"{self.expanded_limit:,} (one per character of the text, at least {MIN_EXPANDED:,}: an alias bomb?): "
                "write the values out, or use fewer aliases"
            )

    def _scalar(self, event: Any) -> Any:
        tag = event.tag
        plain = tag is None and event.implicit[0] and len(event.value) <= _SHORT
        if plain and (known := self.plain.get(event.value, _MISSING)) is not _MISSING:
            self._count(_PLACE_COST, 1, event)
            return known
        self._count(_PLACE_COST + _VALUE_COST + len(event.value), 1, event)
        value = self._constructed(event, tag)
        if plain and len(self.plain) < _SHORT_KEPT:
            self.plain[event.value] = value
        return value

    def _constructed(self, event: Any, tag: str | None) -> Any:
        if tag is None or tag == "!":
            tag = self.loader.resolve(self.yaml.ScalarNode, event.value, event.implicit)
        if tag == _STR:
            return event.value
        if tag == _MERGE:
            return _Merge
        node = self.yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        return self.constructors.get(tag, self.constructors[None])(self.loader, node)

    def _alias(self, event: Any) -> tuple[Any, Lines | int]:
        if event.anchor not in self.anchors:
            raise self.yaml.composer.ComposerError(
                None, None, f"found undefined alias {event.anchor!r}", event.start_mark
            )
        value, lines, size = self.anchors[event.anchor]
        self._count(_PLACE_COST, size, event)  # shared, not copied: its values count, not their memory
        return value, lines

    def _open(self, event: Any, value: list[Any] | dict[Any, Any]) -> _Open:
        if event.tag not in _PLAIN_COLLECTION_TAGS:
            raise self.yaml.constructor.ConstructorError(
                None, None, f"could not determine a constructor for the tag {event.tag!r}", event.start_mark
            )
        self._count(_COLLECTION_COST, 1, event)
        opened = _Open(value, event.start_mark.line + 1, event.anchor, self.values, event.start_mark)
        if event.anchor is not None:  # before its values: an alias inside it refers to it (a recursive alias)
            self.anchors[event.anchor] = (value, opened.lines, 1)
        return opened

    def _close(self, opened: _Open) -> tuple[Any, Lines]:
        if opened.merges and isinstance(opened.value, dict) and isinstance(opened.lines.children, dict):
            _merge(opened.value, opened.lines.children, opened.merges)
        if opened.anchor is not None:
            self.anchors[opened.anchor] = (opened.value, opened.lines, self.values - opened.values_before + 1)
        return opened.value, opened.lines

    def _add(self, opened: _Open, value: Any, lines: Lines | int, event: Any) -> None:
        container, children = opened.value, opened.lines.children
        if isinstance(container, list) and isinstance(children, list):
            container.append(value)
            children.append(lines)
        elif not opened.keyed:
            try:
                hash(value)
            except TypeError:
                raise self.yaml.constructor.ConstructorError(
                    "while constructing a mapping", opened.mark, "found unhashable key", event.start_mark
                ) from None
            opened.key, opened.keyed = value, True
        elif opened.key is _Merge:
            opened.keyed = False
            opened.merges.extend(self._mergeable(value, lines, event))
        elif isinstance(container, dict) and isinstance(children, dict):
            container[opened.key] = value
            children[opened.key] = lines
            opened.keyed = False

    def _mergeable(self, value: Any, lines: Lines | int, event: Any) -> list[tuple[dict[Any, Any], Lines]]:
        """A merge key's value as mappings in the order they are applied (the first of a list applied last: it
        wins)."""
        if isinstance(value, dict) and isinstance(lines, Lines):
            return [(value, lines)]
        if isinstance(value, list) and isinstance(lines, Lines) and all(isinstance(item, dict) for item in value):
            pairs = zip(value, lines.children, strict=True)
            return [(item, line) for item, line in reversed(list(pairs)) if isinstance(line, Lines)]
        raise self.yaml.constructor.ConstructorError(
            None, None, "expected a mapping or list of mappings for merging", event.start_mark
        )


def _where(event: Any) -> str:
    return f"line {event.start_mark.line + 1}, column {event.start_mark.column + 1}"


class _Merge:
    """The merge key `<<` (a mapping's keys from others)."""


def _merge(value: dict[Any, Any], children: dict[Any, Lines | int], merges: list[tuple[dict[Any, Any], Lines]]) -> None:
    """`value` with the merged mappings' keys first and its own keys over them (PyYAML's order)."""
    merged: dict[Any, Any] = {}
    merged_lines: dict[Any, Lines | int] = {}
    for mapping, lines in merges:
        merged.update(mapping)
        if isinstance(lines.children, dict):
            merged_lines.update(lines.children)
    merged.update(value)
    merged_lines.update(children)
    value.clear()
    value.update(merged)
    children.clear()
    children.update(merged_lines)


def read_yaml(text: str) -> tuple[Any, Lines | None]:
    """A YAML text's data and the lines of its values; YamlBound past its memory bound or when its aliases expand
    past their bound (checked as each value is read), yaml.YAMLError when it is not one YAML document."""
    return _Reader(text).document()

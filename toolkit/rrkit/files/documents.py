"""YAML and JSON documents (YAML unless the file is `.json` or the caller says JSON): their data and, for YAML,
the node tree that gives line numbers; a YAML alias bomb refused before it is expanded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..protocol.exceptions import ScriptError
from .text import read_utf8

if TYPE_CHECKING:  # yaml loads with the first document read, not at start-up
    import yaml

MAX_YAML_VALUES = 1_000_000
"""The values a YAML document may hold once its aliases are expanded (a few aliases can stand for billions)."""


class AliasBomb(ScriptError):
    """A YAML document whose aliases expand past MAX_YAML_VALUES."""


def yaml_document(text: str) -> tuple[Any, yaml.Node | None]:
    """A YAML text's data and node tree, refused (AliasBomb) when its aliases expand past MAX_YAML_VALUES."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # libyaml's parser where PyYAML has it
    try:
        tree = loader.get_single_node()
        _check_aliases(tree)
        return (loader.construct_document(tree) if tree is not None else None), tree
    finally:
        loader.dispose()


def _check_aliases(tree: yaml.Node | None) -> None:
    """AliasBomb when the tree's aliases expand past MAX_YAML_VALUES (checked before any value is made)."""
    import yaml

    sizes: dict[int, int] = {}

    def expanded(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 1  # a node reached again while counting it (a recursive alias) counts once
            if isinstance(node, yaml.SequenceNode):
                sizes[id(node)] += sum(expanded(child) for child in node.value)
            elif isinstance(node, yaml.MappingNode):
                sizes[id(node)] += sum(expanded(key) + expanded(value) for key, value in node.value)
        return sizes[id(node)]

    if tree is not None and (count := expanded(tree)) > MAX_YAML_VALUES:
        raise AliasBomb(
            f"its aliases expand to {count:,} values, more than {MAX_YAML_VALUES:,} (an alias bomb?): "
            "write the values out, or use fewer aliases"
        )


def read_document(path: Path, what: str, error_type: type[Exception]) -> tuple[Any, yaml.Node | None]:
    """A YAML (or `.json`) file's data and, for YAML, its node tree (for line numbers); `error_type` naming the
    file and the place for text that is not UTF-8, not YAML or JSON, or nested too deeply to read."""
    text = read_utf8(path, what, error_type)
    return parse_document(text, path, what, error_type, as_yaml=path.suffix != ".json")


def parse_document(
    text: str, place: Path | str, what: str, error_type: type[Exception], *, as_yaml: bool, json_hint: str = ""
) -> tuple[Any, yaml.Node | None]:
    """A YAML or JSON text's data and, for YAML, its node tree; `error_type` naming `place` (a file, or where a
    body came) and the line and column for text that is not YAML or JSON (`json_hint`: what to add to a JSON
    error), or nested too deeply to read."""
    import yaml

    try:
        return yaml_document(text) if as_yaml else (json.loads(text), None)
    except AliasBomb as error:
        raise error_type(f"{place}: {error}") from None
    except json.JSONDecodeError as error:
        hint = f" ({json_hint})" if json_hint else ""
        raise error_type(
            f"{place}: line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}{hint}"
        ) from None
    except yaml.YAMLError as error:
        if "maximum nesting depth" in str(error):  # libyaml's bound (1,000 levels), where Python would recurse
            raise error_type(
                f"{place}: nested too deeply to read (over 1,000 levels); is it an rrkit {what}?"
            ) from None
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise error_type(f"{place}: {where}invalid YAML: {getattr(error, 'problem', None) or error}") from None
    except RecursionError:  # both parsers recurse: thousands of nested lists or mappings
        raise error_type(f"{place}: nested too deeply to read (thousands of levels); is it an rrkit {what}?") from None

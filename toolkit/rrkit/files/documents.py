"""YAML and JSON documents (YAML unless the file is `.json` or the caller says JSON): their data and, for YAML,
the lines of its values; each read within its bounds (`yaml_reader`, `json_reader`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .json_reader import JsonBound, JsonSyntax, read_json
from .text import read_utf8
from .yaml_reader import Lines, YamlBound, read_yaml


def read_document(path: Path, what: str, error_type: type[Exception]) -> tuple[Any, Lines | None]:
    """A YAML (or `.json`) file's data and, for YAML, the lines of its values; `error_type` naming the
    file and the place for text that is not UTF-8, not YAML or JSON, or nested too deeply to read."""
    text = read_utf8(path, what, error_type)
    return parse_document(text, path, what, error_type, as_yaml=path.suffix != ".json")


def parse_document(
    text: str, place: Path | str, what: str, error_type: type[Exception], *, as_yaml: bool, json_hint: str = ""
) -> tuple[Any, Lines | None]:
    """A YAML or JSON text's data and, for YAML, the lines of its values; `error_type` naming `place` (a file, or
    where a body came) and the line and column for text that is not YAML or JSON (`json_hint`: what to add to a
    JSON error), past a YAML bound, or nested too deeply to read."""
    import yaml

    try:
        return read_yaml(text) if as_yaml else (read_json(text, what), None)
    except (YamlBound, JsonBound) as error:
        raise error_type(f"{place}: {error}") from None
    except JsonSyntax as error:
        hint = f" ({json_hint})" if json_hint else ""
        raise error_type(f"{place}: line {error.line}, column {error.column}: invalid JSON: {error}{hint}") from None
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

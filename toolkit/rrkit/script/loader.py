"""Loading scripts from YAML or JSON files, with errors that name the file, the place in it and the problem."""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..protocol.exceptions import LimitError, ScriptError
from ..protocol.limits import LIMITS_ENV, configured, shown_size
from ..protocol.names import did_you_mean, unknown_name
from ..protocol.request import COMPACTION_TRIGGER
from . import default_reply, models, outputs
from .models import Match, Reply, Script, Step
from .outputs import OUTPUT_TYPES, CompactionOut, MessageOut
from .shipped import script_path

if TYPE_CHECKING:  # yaml loads with the first script file read, not at start-up
    import yaml
    from pydantic_core import ErrorDetails


def _yaml_line(node: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the deepest node on `loc` that exists in the YAML tree."""
    import yaml

    line = None
    for key in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((value for name, value in node.value if name.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line


def json_place(loc: tuple[int | str, ...]) -> str:
    """Where a validation error is, in a file's own terms: `responses[0].output[1].chunks`."""
    place = ""
    for key in loc:
        place += f"[{key}]" if isinstance(key, int) else (f".{key}" if place else str(key))
    return place or "(top level)"


def _file_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """Drop the union member's tag pydantic puts after an output item's index (`output[0].message`):
    it is not a place in the file (a field such as `reject.message` is, and stays)."""
    return tuple(
        key
        for index, key in enumerate(loc)
        if not (key in _UNION_TAGS and index >= 2 and loc[index - 2] == "output" and isinstance(loc[index - 1], int))
    )


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's annotation holds (inside Optional, list, dict, unions and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in _models_in(argument)]


def keys_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> list[str] | None:
    """The keys the object at `loc` (a validation error's place, union tags included) may have, or None when the
    place cannot be followed through the models."""
    models = [root]
    for part in loc:
        if isinstance(part, int):
            continue
        by_field = [
            m for model in models if part in model.model_fields for m in _models_in(model.model_fields[part].annotation)
        ]
        tagged = [model for model in models if _tag_of(model) == part]
        models = by_field or tagged
        if not models:
            return None
    return sorted({name for model in models for name in model.model_fields})


def _tag_of(model: type[BaseModel]) -> object:
    """The `type` a model of a tagged union stands for: its one Literal value, or its default."""
    field = model.model_fields.get("type")
    if field is None:
        return None
    values = typing.get_args(field.annotation)
    return values[0] if typing.get_origin(field.annotation) is typing.Literal and len(values) == 1 else field.default


def _problem(problem: ErrorDetails, loc: tuple[int | str, ...], known: Sequence[str], root: type[BaseModel]) -> str:
    if problem["type"] == "extra_forbidden" and loc:
        key = str(loc[-1])
        scoped = keys_at(root, tuple(problem["loc"])[:-1])
        hint = did_you_mean(key, scoped if scoped else known)
        if not hint and scoped and len(scoped) <= 12:
            hint = f" (it takes {', '.join(scoped)})"
        return f"unknown key {key!r}{hint}"
    if problem["type"] == "union_tag_invalid" and loc and "output" in loc:
        return unknown_name("output type", str(problem.get("ctx", {}).get("tag")), OUTPUT_TYPES)
    if problem["type"] == "value_error" and "error" in problem.get("ctx", {}):
        return str(problem["ctx"]["error"])  # a validator's own message, without pydantic's "Value error, "
    return problem["msg"]


def describe_invalid(
    error: ValidationError,
    path: Path,
    tree: yaml.Node | None,
    what: str = "rrkit script",
    known: Sequence[str] = (),
    root: type[BaseModel] = models.Script,
) -> str:
    """A validation error of a file as one message: the file, then each problem's line, place and what is wrong
    (an unknown key with the closest of the keys its place takes in `root`, else of the script's keys and
    `known`)."""
    keys = sorted({*_KNOWN_KEYS, *known})
    lines = [f"{path}: invalid {what} ({error.error_count()} problem(s)):"]
    for problem in error.errors():
        loc = _file_loc(problem["loc"])
        line = _yaml_line(tree, loc) if tree is not None else None
        where = f"line {line}, " if line else ""
        lines.append(f"  - {where}{json_place(loc)}: {_problem(problem, loc, keys, root)}")
    return "\n".join(lines)


_UNION_TAGS = frozenset(OUTPUT_TYPES)
_KNOWN_KEYS = sorted(
    {
        name
        for module in (models, outputs)
        for model in vars(module).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        for name in model.model_fields
    }
)


def parse_script(data: Any, path: Path | str = "<script>", tree: yaml.Node | None = None) -> Script:
    return validate_document(Script, data, Path(path), tree, "rrkit script", ScriptError)


M = TypeVar("M", bound=BaseModel)


def validate_document(
    model: type[M],
    data: Any,
    path: Path,
    tree: yaml.Node | None,
    what: str,
    error_type: type[Exception],
    known: Sequence[str] = (),
) -> M:
    """A file's data as `model`, or `error_type` with every problem's line and place (see `describe_invalid`)."""
    if not isinstance(data, dict):
        noun = what.rsplit(" ", 1)[-1]  # "script", "scenario", "profile"
        raise error_type(f"{path}: a {noun} must be a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise error_type(describe_invalid(error, path, tree, what, known, model)) from None


def file_limit(path: Path, what: str, error_type: type[Exception], setting: str) -> int:
    """The bytes rrkit reads of a `what` file (the `setting` limit, `RRKIT_LIMITS` applied); `error_type` naming
    the file when the file is larger (by its size on disk) or the setting cannot be read."""
    try:
        limit: int = getattr(configured(os.environ), setting.replace("-", "_"))
    except LimitError as error:
        raise error_type(f"{path}: {error}") from None
    try:
        size = path.stat().st_size
    except OSError:
        return limit  # the read names what is wrong
    if size > limit:
        raise error_type(too_large(path, what, setting, limit, f"is {size} bytes"))
    return limit


def too_large(path: Path, what: str, setting: str, limit: int, how: str) -> str:
    return (
        f"{path}: the {what} {how}, more than the {shown_size(limit)} rrkit reads ({setting}); if it is one, raise "
        f"the limit: {LIMITS_ENV}={setting}=SIZE (or --limit {setting}=SIZE)"
    )


def read_utf8(path: Path, what: str, error_type: type[Exception], setting: str = "script-file") -> str:
    """The text of a UTF-8 file of at most the `setting` limit; `error_type` naming the file (and the byte offset,
    when it is not UTF-8)."""
    limit = file_limit(path, what, error_type, setting)
    try:
        with path.open("rb") as handle:
            content = handle.read(limit + 1)  # bounded, for what has no size on disk (a pipe)
    except OSError as error:
        raise error_type(f"{path}: cannot read {what}: {error.strerror or error}") from None
    if len(content) > limit:
        raise error_type(too_large(path, what, setting, limit, "is larger"))
    return decode_utf8(content, path, what, error_type)


def decode_utf8(
    content: bytes, place: Path | str, what: str, error_type: type[Exception], remedy: str | None = None
) -> str:
    """UTF-8 bytes as text; `error_type` naming `place` (a file, or where a body came) and the byte offset when they
    are not, with what to do (`remedy`; by default, re-save the file)."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = content[error.start : error.start + 4]
        raise error_type(
            f"{place}: byte offset {error.start}: not UTF-8 (bytes {bad.hex(' ')}: {error.reason}); "
            f"{remedy or f're-save the {what} as UTF-8'}"
        ) from None


MAX_YAML_VALUES = 1_000_000
"""The values a YAML document may hold once its aliases are expanded (a few aliases can stand for billions)."""


class AliasBomb(ValueError):
    """A YAML document whose aliases expand past MAX_YAML_VALUES."""


def yaml_document(text: str) -> tuple[Any, yaml.Node | None]:
    """A YAML text's data and node tree, refused (AliasBomb) when its aliases expand past MAX_YAML_VALUES."""
    import yaml

    tree = yaml.compose(text, Loader=yaml.SafeLoader)
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
    return yaml.safe_load(text), tree


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
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise error_type(f"{place}: {where}invalid YAML: {getattr(error, 'problem', None) or error}") from None
    except RecursionError:  # both parsers recurse: thousands of nested lists or mappings
        raise error_type(f"{place}: nested too deeply to read (thousands of levels); is it an rrkit {what}?") from None


def script_of_text(text: str, place: str, *, as_yaml: bool, json_hint: str = "") -> Script:
    """A script that is not a file (the body of the admin API's `POST /__rrkit/script`), parsed and checked as
    `load_script` reads a file, its errors naming `place` where a file's name the file."""
    data, tree = parse_document(text, place, "script", ScriptError, as_yaml=as_yaml, json_hint=json_hint)
    return parse_script(data, place, tree)


def load_script(path: Path | str) -> Script:
    """Read a `.yaml`/`.yml` or `.json` script file, or a shipped script named `fixture:NAME`."""
    try:
        path = script_path(path)
    except LookupError as error:
        raise ScriptError(str(error)) from None
    data, tree = read_document(path, "script", ScriptError)
    script = parse_script(data, path, tree)
    if not script.name:
        script.name = path.stem
    return script


def default_script() -> Script:
    """What `rrkit serve` plays without `--script`: a short streamed text reply to every request."""
    # Built as is, not validated (the models build their validators on first use): a plain `rrkit serve` starts
    # sooner.
    text = MessageOut.model_construct(text=default_reply.TEXT, chunks=default_reply.CHUNKS)
    compaction = CompactionOut.model_construct(type="compaction", encrypted_content=default_reply.COMPACTED)
    compact = Step.model_construct(
        when=Match.model_construct(last_input_type=COMPACTION_TRIGGER), repeat=True, output=[compaction]
    )
    return Script.model_construct(
        name=default_reply.NAME,
        description=(
            "Answers every request with a short text reply in five deltas; a request whose input ends with a "
            "compaction_trigger with one compaction item."
        ),
        responses=[compact],
        default=Reply.model_construct(output=[text]),
    )

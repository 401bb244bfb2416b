"""A file's data checked against its model: every problem as one message with its line (YAML), its place in the
file's own terms and what is wrong, an unknown key or tag with the closest valid one."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..protocol.names import did_you_mean, unknown_name
from .yaml_reader import Lines

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Vocabulary:
    """The words a file's misspellings are matched against beyond what its model says at the place: `keys`, when
    the place cannot be followed through the model; `unions`, a field whose items are a tagged union (`output`),
    with the noun of its tags and the tags themselves (`"output type"`, `("message", ...)`)."""

    keys: frozenset[str] = frozenset()
    unions: Mapping[str, tuple[str, Sequence[str]]] = field(default_factory=dict)

    def adding(self, keys: Iterable[str]) -> Vocabulary:
        return Vocabulary(self.keys | frozenset(keys), self.unions)


M = TypeVar("M", bound=BaseModel)


def validate_document(
    model: type[M],
    data: Any,
    path: Path,
    tree: Lines | None,
    what: str,
    error_type: type[Exception],
    words: Vocabulary = Vocabulary(),
) -> M:
    """A file's data as `model`, or `error_type` with every problem's line and place (see `describe_invalid`)."""
    if not isinstance(data, dict):
        noun = what.rsplit(" ", 1)[-1]  # "script", "scenario", "profile"
        raise error_type(f"{path}: a {noun} must be a mapping at the top level, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise error_type(describe_invalid(error, path, tree, what, model, words)) from None


def describe_invalid(
    error: ValidationError,
    path: Path,
    tree: Lines | None,
    what: str,
    root: type[BaseModel],
    words: Vocabulary = Vocabulary(),
) -> str:
    """A validation error of a file as one message: the file, then each problem's line, place and what is wrong
    (an unknown key with the closest of the keys its place takes in `root`, else of `words.keys`)."""
    keys = sorted(words.keys)
    lines = [f"{path}: invalid {what} ({error.error_count()} problem(s)):"]
    for problem in error.errors():
        loc = _file_loc(problem["loc"], words)
        line = tree.line_of(loc) if tree is not None else None
        where = f"line {line}, " if line else ""
        lines.append(f"  - {where}{json_place(loc)}: {_problem(problem, loc, keys, root, words)}")
    return "\n".join(lines)


def json_place(loc: tuple[int | str, ...]) -> str:
    """Where a validation error is, in a file's own terms: `responses[0].output[1].chunks`."""
    place = ""
    for key in loc:
        place += f"[{key}]" if isinstance(key, int) else (f".{key}" if place else str(key))
    return place or "(top level)"


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


def _file_loc(loc: tuple[int | str, ...], words: Vocabulary) -> tuple[int | str, ...]:
    """Drop the union member's tag pydantic puts after a union item's index (`output[0].message`): it is not a
    place in the file (a field such as `reject.message` is, and stays)."""
    return tuple(
        key
        for index, key in enumerate(loc)
        if not (
            index >= 2
            and isinstance(loc[index - 1], int)
            and loc[index - 2] in words.unions
            and key in words.unions[str(loc[index - 2])][1]
        )
    )


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's annotation holds (inside Optional, list, dict, unions and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in _models_in(argument)]


def _tag_of(model: type[BaseModel]) -> object:
    """The `type` a model of a tagged union stands for: its one Literal value, or its default."""
    model_field = model.model_fields.get("type")
    if model_field is None:
        return None
    values = typing.get_args(model_field.annotation)
    if typing.get_origin(model_field.annotation) is typing.Literal and len(values) == 1:
        return values[0]
    return model_field.default


def _problem(
    problem: ErrorDetails, loc: tuple[int | str, ...], known: Sequence[str], root: type[BaseModel], words: Vocabulary
) -> str:
    if problem["type"] == "extra_forbidden" and loc:
        key = str(loc[-1])
        scoped = keys_at(root, tuple(problem["loc"])[:-1])
        hint = did_you_mean(key, scoped if scoped else known)
        if not hint and scoped and len(scoped) <= 12:
            hint = f" (it takes {', '.join(scoped)})"
        return f"unknown key {key!r}{hint}"
    union = next((union for union in words.unions if union in loc), None)
    if problem["type"] == "union_tag_invalid" and union is not None:
        noun, tags = words.unions[union]
        return unknown_name(noun, str(problem.get("ctx", {}).get("tag")), tags)
    if problem["type"] == "value_error" and "error" in problem.get("ctx", {}):
        return str(problem["ctx"]["error"])  # a validator's own message, without pydantic's "Value error, "
    return problem["msg"]

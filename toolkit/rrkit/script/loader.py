"""Loading scripts from YAML or JSON files (or a posted body), with errors that name the file, the place in it and
the problem; the default script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..files.documents import parse_document, read_document
from ..files.invalid import Vocabulary, validate_document
from ..files.kind import kind_of
from ..files.yaml_reader import Lines
from ..protocol.exceptions import ScriptError
from ..protocol.request import COMPACTION_TRIGGER
from . import default_reply, models, outputs
from .models import Match, Reply, Script, Step
from .outputs import OUTPUT_TYPES, CompactionOut, MessageOut
from .shipped import script_path

SCRIPT_WORDS = Vocabulary(
    keys=frozenset(
        name
        for module in (models, outputs)
        for model in vars(module).values()
        if isinstance(model, type) and issubclass(model, BaseModel)
        for name in model.model_fields
    ),
    unions={"output": ("output type", OUTPUT_TYPES)},
)
"""A script's keys and output types: what a misspelt key or `type` in a script (or a file holding one) is matched
against."""


def parse_script(data: Any, path: Path | str = "<script>", tree: Lines | None = None) -> Script:
    try:
        return validate_document(Script, data, Path(path), tree, "rrkit script", ScriptError, SCRIPT_WORDS)
    except ScriptError as error:  # what the file seems to be instead, from this one parse
        raise ScriptError(str(error), seemed=kind_of(data)) from None


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

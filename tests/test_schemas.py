"""The JSON Schemas of the files users write and read (`rrkit schema NAME`, shipped in `rrkit/schemas/`): each is
the one its model makes (a shipped file never drifts from the code), every file rrkit ships (fixtures, scenarios,
profiles, probes, golden cassettes) is valid under its schema, and a misspelt key anywhere is refused by the schema
as the loader refuses it; what rrkit writes (every judge's `--json` report) is valid under its schema too."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from rrkit.cassette.store import load_cassette
from rrkit.cli import main
from rrkit.conform.profile import load_profile
from rrkit.conform.scenario import load_scenario
from rrkit.conform.server.probe import load_probe
from rrkit.protocol.exceptions import RRKitError
from rrkit.schema import SCHEMAS, WRITTEN, json_schema, schema_text, shipped_path
from rrkit.script.loader import load_script

PACKAGE = Path(__file__).resolve().parents[1] / "toolkit" / "rrkit"
SHIPPED_FILES = {
    "script": sorted((PACKAGE / "fixtures").glob("*.yaml")),
    "scenario": sorted((PACKAGE / "conform" / "scenarios").glob("*.yaml")),
    "profile": sorted((PACKAGE / "conform" / "profiles").glob("*.yaml")),
    "probe": sorted((PACKAGE / "conform" / "server" / "probes").glob("*.yaml")),
    "cassette": sorted((PACKAGE.parents[1] / "cassettes").glob("*.json")),
}
EXAMPLES = [(name, path) for name, paths in SHIPPED_FILES.items() for path in paths]
GOLDEN = PACKAGE.parents[1] / "cassettes"
WRITTEN_BY: dict[str, list[tuple[str, ...]]] = {
    "report": [
        ("validate", str(GOLDEN)),  # a case per cassette, every one clean
        ("diff", str(GOLDEN / "text.http.json"), str(GOLDEN / "tool-loop.http.json")),  # findings at their places
    ],
}
"""For each schema of a file rrkit writes, the commands that write one (with `--json`); the slower judges'
reports (`replay`, `conform`, `conform --server`) are checked in tests/test_report.py."""
WRITTEN_EXAMPLES = [(name, args) for name, commands in WRITTEN_BY.items() for args in commands]
WRITTEN_IDS = [f"{name}:{args[0]}" for name, args in WRITTEN_EXAMPLES]


def _read(path: Path) -> Any:
    return json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _load(name: str, path: Path) -> object:
    """The file as rrkit's own loader reads it."""
    loaders = {
        "script": load_script,
        "scenario": load_scenario,
        "profile": load_profile,
        "probe": load_probe,
        "cassette": load_cassette,
    }
    return loaders[name](path)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_the_shipped_schema_is_the_one_the_model_makes_and_the_command_prints(name: str) -> None:
    assert shipped_path(name).read_text() == schema_text(name), (
        # not `rrkit schema NAME > FILE`: the command prints the shipped file, which the redirect has emptied
        f'run `python -c "from rrkit.schema import schema_text, shipped_path; '
        f"shipped_path('{name}').write_text(schema_text('{name}'))\"`"
    )
    printed = CliRunner().invoke(main, ["schema", name])
    assert printed.exit_code == 0 and printed.output == schema_text(name)
    assert CliRunner().invoke(main, ["schema", name, "--path"]).output.strip() == str(shipped_path(name))


def test_every_kind_of_file_has_shipped_examples_to_check() -> None:
    assert set(SHIPPED_FILES) == set(SCHEMAS) - WRITTEN and all(SHIPPED_FILES.values())
    assert set(WRITTEN_BY) == WRITTEN and all(WRITTEN_BY.values())


@functools.cache
def _written(args: tuple[str, ...]) -> Any:
    """What `rrkit ARGS --json` prints, read as JSON."""
    done = CliRunner().invoke(main, [*args, "--json"])
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.stdout)


@pytest.mark.parametrize(("name", "args"), WRITTEN_EXAMPLES, ids=WRITTEN_IDS)
def test_every_file_rrkit_writes_is_valid_under_its_schema(name: str, args: tuple[str, ...]) -> None:
    written = _written(args)
    assert written["cases"], "an example with nothing judged checks little"
    errors = [f"{error.json_path}: {error.message[:200]}" for error in _validator(name).iter_errors(written)]
    assert not errors, errors


@pytest.mark.parametrize(("name", "args"), WRITTEN_EXAMPLES, ids=WRITTEN_IDS)
def test_a_misspelt_key_in_a_written_file_is_refused_by_its_schema(name: str, args: tuple[str, ...]) -> None:
    validator = _validator(name)
    for variant in _misspelt(_written(args)):
        assert list(validator.iter_errors(variant)), f"the schema takes a misspelt key: {variant}"


@pytest.mark.parametrize(("name", "path"), EXAMPLES, ids=[f"{name}:{path.name}" for name, path in EXAMPLES])
def test_every_shipped_file_is_valid_under_its_schema(name: str, path: Path) -> None:
    errors = [f"{error.json_path}: {error.message[:200]}" for error in _validator(name).iter_errors(_read(path))]
    assert not errors, errors


def _misspelt(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The document with one key misspelt (a letter doubled): at the top, and in the first mapping of its first
    list of mappings (a script's step, a scenario's must, a probe's step, a cassette's exchange)."""
    variants = []
    top = copy.deepcopy(data)
    key = next(iter(top))
    top[key + key[-1]] = top.pop(key)
    variants.append(top)
    nested = copy.deepcopy(data)
    for value in nested.values():
        inner = value[0] if isinstance(value, list) and value else None
        if isinstance(inner, dict) and inner:
            key = next(iter(inner))
            inner[key + key[-1]] = inner.pop(key)
            variants.append(nested)
            break
    return variants


ONE_EACH = [(name, paths[0]) for name, paths in SHIPPED_FILES.items()] + [
    ("script", PACKAGE / "fixtures" / "tool-loop.yaml"),
    ("scenario", PACKAGE / "conform" / "scenarios" / "compaction.yaml"),
]


@pytest.mark.parametrize(("name", "path"), ONE_EACH, ids=[f"{name}:{path.name}" for name, path in ONE_EACH])
def test_a_misspelt_key_is_refused_by_the_schema_as_by_the_loader(name: str, path: Path, tmp_path: Path) -> None:
    validator = _validator(name)
    for variant in _misspelt(_read(path)):
        assert list(validator.iter_errors(variant)), f"the schema takes a misspelt key: {variant}"
        written = tmp_path / path.name
        written.write_text(json.dumps(variant) if path.suffix == ".json" else yaml.safe_dump(variant))
        with pytest.raises(RRKitError):
            _load(name, written)


def test_rrkit_schema_script_refuses_a_misspelt_reply_field_in_words_an_editor_shows() -> None:
    script = {"responses": [{"output": [{"text": "hi"}], "repaet": True}]}
    (error,) = _validator("script").iter_errors(script)
    assert "repaet" in error.message

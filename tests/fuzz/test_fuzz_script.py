"""Script files: any YAML/JSON document, mutations of the shipped scripts, any bytes, through `parse_script` and
`load_script`: the only exception ever raised is `ScriptError`, and its message names the file."""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import event, given
from hypothesis import strategies as st

from rrkit.script import Script, ScriptError, load_script, parse_script
from rrkit.script.shipped import shipped_fixtures

from . import JSON_VALUES, PLAIN_JSON, TEXT, fuzz, json_text, mutated, to_bytes

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

SHIPPED = {name: yaml.safe_load(path.read_text(encoding="utf-8")) for name, path in shipped_fixtures().items()}
KEYS = sorted({"name", "description", "expect", "responses", "default", "handshake", "handshakes", "when", "repeat"})

YAML_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities too: YAML writes them (.nan, .inf)
    TEXT,
    st.binary(max_size=8),  # !!binary
    st.dates(),
    st.datetimes(),
)
YAML_VALUES = st.recursive(
    YAML_SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | TEXT | st.integers() | st.booleans(), children, max_size=4)
    ),
    max_leaves=15,
)
"""What YAML files hold: JSON's values and bytes, dates, non-string keys."""
DOCUMENTS = st.one_of(
    YAML_VALUES,
    st.dictionaries(st.sampled_from(KEYS), YAML_VALUES, max_size=4),
    st.sampled_from(sorted(SHIPPED)).flatmap(lambda name: mutated(SHIPPED[name], PLAIN_JSON | YAML_VALUES)),
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("fuzz-scripts")


def loaded(path: Path) -> Script | None:
    """`load_script(path)`: a Script, or None after a ScriptError that names the file."""
    try:
        script = load_script(path)
    except ScriptError as error:
        assert str(path) in str(error), f"the error does not name {path}: {error}"
        event("ScriptError")
        return None
    event("loaded")
    assert isinstance(script, Script)
    return script


def yaml_text(document: Any) -> str:
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


@fuzz(300)
@given(document=DOCUMENTS)
def test_parse_script_of_any_document_raises_only_script_error_naming_the_file(document: Any) -> None:
    try:
        parse_script(document, "fuzzed/any.yaml")
    except ScriptError as error:
        assert "fuzzed/any.yaml" in str(error), error


@fuzz(300)
@given(document=DOCUMENTS, suffix=st.sampled_from([".yaml", ".yml", ".json"]), data=st.data())
def test_load_script_of_any_document_raises_only_script_error_naming_the_file(
    folder: Path, document: Any, suffix: str, data: st.DataObject
) -> None:
    path = folder / f"any{suffix}"
    if suffix == ".json":
        try:
            text = json_text(json.loads(json.dumps(document, default=str)), ascii_only=data.draw(st.booleans()))
        except (TypeError, ValueError):  # a key JSON cannot have
            text = json.dumps(document, default=str, skipkeys=True)
    else:
        text = yaml_text(document)
    path.write_bytes(to_bytes(text, data.draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1"]))))
    loaded(path)


@fuzz(150)
@given(value=JSON_VALUES, ascii_only=st.booleans())
def test_load_script_of_any_json_text_raises_only_script_error_naming_the_file(
    folder: Path, value: Any, ascii_only: bool
) -> None:
    """JSON text with NaN/Infinity, huge integers, lone surrogates, 100,000 nested lists. (YAML reads deep flow
    nesting slowly, about 1 s per 1,000 levels: the YAML case is the one example below.)"""
    path = folder / "text.json"
    path.write_bytes(to_bytes(json_text(value, ascii_only=ascii_only), "utf-8"))
    loaded(path)


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "- " * 5000 + "x", '{"a":' * 3000 + "1" + "}" * 3000])
def test_load_script_of_yaml_nested_thousands_deep_is_a_script_error_naming_the_file(folder: Path, text: str) -> None:
    path = folder / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScriptError, match="nested too deeply"):
        load_script(path)


@fuzz(200)
@given(content=st.binary(max_size=400) | TEXT.map(lambda text: text.encode("utf-8", "surrogatepass")))
def test_load_script_of_any_bytes_raises_only_script_error_naming_the_file(folder: Path, content: bytes) -> None:
    for suffix in (".yaml", ".json"):
        path = folder / f"bytes{suffix}"
        path.write_bytes(content)
        loaded(path)


@fuzz(200)
@given(
    name=st.sampled_from(sorted(SHIPPED)),
    data=st.data(),
    cut=st.integers(0, 10**6),
    insert=st.sampled_from([": ", "- ", "\t", "{", "[", "&a ", "*a ", "!!python/object:os.system ", "\x00", "\ufeff"]),
)
def test_load_script_of_a_damaged_shipped_script_raises_only_script_error_naming_the_file(
    folder: Path, name: str, data: st.DataObject, cut: int, insert: str
) -> None:
    """A shipped script's text cut short or with YAML syntax put in anywhere (what a hand edit breaks)."""
    text = shipped_fixtures()[name].read_text(encoding="utf-8")
    at = cut % (len(text) + 1)
    damaged = data.draw(st.sampled_from([text[:at], text[:at] + insert + text[at:]]), label="damaged")
    path = folder / f"{name}.yaml"
    path.write_text(damaged, encoding="utf-8")
    loaded(path)


def test_every_shipped_script_loads() -> None:
    """The base of the mutations above is valid: a mutation that breaks nothing loads."""
    for name, path in shipped_fixtures().items():
        assert parse_script(SHIPPED[name], path).name
        assert isinstance(load_script(path), Script)


def test_a_datetime_key_or_value_is_a_script_error() -> None:
    with pytest.raises(ScriptError, match=r"x\.yaml"):
        parse_script({"name": datetime.datetime(2024, 1, 1)}, "x.yaml")

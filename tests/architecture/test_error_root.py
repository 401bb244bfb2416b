"""One error root: every exception a public package exports derives from `rrkit.RRKitError` (warnings aside), and
rrkit.protocol.exceptions draws the tree of the ones it holds."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import rrkit
from rrkit.cassette import load_cassette
from rrkit.protocol import exceptions
from rrkit.protocol.encoding import decode_body

from .test_public_api import _documented


def _public_exceptions() -> list[tuple[str, type[BaseException]]]:
    """Every exception class a documented package exports (docs/reference/api.md), and every one in
    rrkit.protocol.exceptions."""
    found = {}
    for package in [*_documented(), "rrkit.protocol.exceptions", "rrkit.client.errors"]:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", None) or dir(module):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__.startswith("rrkit"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return sorted(found.items())


def test_the_walk_finds_the_errors_of_every_layer() -> None:
    names = {name.rpartition(".")[2] for name, _ in _public_exceptions()}
    assert {"ScriptError", "CassetteError", "LockHeld", "ModelClientError", "CodexNotFound", "StreamDropped"} <= names


@pytest.mark.parametrize(("name", "error"), _public_exceptions(), ids=[name for name, _ in _public_exceptions()])
def test_every_public_exception_derives_from_rrkit_error(name: str, error: type[BaseException]) -> None:
    assert issubclass(error, rrkit.RRKitError) or issubclass(error, Warning), name


def test_the_exceptions_module_draws_every_class_it_holds() -> None:
    drawn = exceptions.__doc__ or ""
    held = [
        name
        for name, value in vars(exceptions).items()
        if isinstance(value, type) and value.__module__ == exceptions.__name__
    ]
    assert held and all(f" {name} " in drawn or drawn.count(name) for name in held), held


def test_one_except_clause_catches_a_bad_script_a_bad_cassette_and_a_bad_body(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("responses: [{output: [{text: hi, chunks: zero}]}]\n")
    cassette = tmp_path / "bad.json"
    cassette.write_text("{not json")
    attempts = (lambda: rrkit.load_script(script), lambda: load_cassette(cassette), lambda: decode_body(b"x", "br"))
    for attempt in attempts:
        with pytest.raises(rrkit.RRKitError):
            attempt()

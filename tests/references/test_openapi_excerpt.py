"""The vendored OpenAPI excerpt is what its generator makes from the spec at the pinned commit (with the artefact
fixes and nothing else), it ships with its licence and commit, it holds the operations of every route rrkit serves,
and every schema it names is in it."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import pytest

from rrkit.protocol.routes import ROUTES
from rrkit.references import ARTEFACTS, openapi
from rrkit.references.artefacts import Fix
from rrkit.references.kinds import ROOTS

from .make_openapi_excerpt import EXCERPT, SOURCE, SPEC, excerpt, refs


def test_the_shipped_excerpt_is_what_the_generator_makes_from_the_spec() -> None:
    if not SPEC.exists():
        pytest.skip(f"{SPEC} is not here (a clean clone has no ../shared/specs): the excerpt cannot be regenerated")
    assert excerpt(SPEC) == EXCERPT.read_text(encoding="utf-8"), (
        "openapi.json differs from the spec's excerpt: run `python -m tests.references.make_openapi_excerpt`"
    )


def test_the_excerpt_ships_as_package_data_with_its_licence_and_commit() -> None:
    package = files("rrkit.references")
    document = json.loads(package.joinpath("openapi.json").read_text(encoding="utf-8"))
    licence = package.joinpath("LICENSE-openai-openapi").read_text(encoding="utf-8")
    assert document["info"]["x-source"] == SOURCE and SOURCE["commit"] in licence and "The MIT License" in licence
    assert document["openapi"].startswith("3.1") and set(ROOTS) <= set(document["components"]["schemas"])
    text = json.dumps(document)
    assert "$recursiveRef" not in text and '"nullable"' not in text


def test_the_excerpt_holds_the_operation_of_every_route_rrkit_serves_and_no_other() -> None:
    document = openapi()
    operations = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert operations == {(method, path) for method, path, _ in ROUTES} and len(operations) == 18
    assert not any("?" in path for path in document["paths"])  # artefact `beta_path_keys`


def test_every_reference_of_the_excerpt_is_in_it() -> None:
    document = openapi()
    named = set(refs(document))
    assert named and all(ref.startswith("#/components/") for ref in named)
    for ref in named:
        assert _at(document, ref.removeprefix("#/").split("/")) is not None, ref


def _at(document: Any, parts: list[str]) -> Any:
    node = document
    for part in parts:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def test_each_artefact_says_what_the_spec_says_what_the_service_does_and_how_it_is_treated() -> None:
    assert len({artefact.name for artefact in ARTEFACTS}) == len(ARTEFACTS) >= 5
    for artefact in ARTEFACTS:
        assert artefact.spec and artefact.service and artefact.treatment, artefact.name
    document = openapi()
    for fix in (fix for artefact in ARTEFACTS for fix in artefact.fixes):
        node = _at(document, fix.parts)
        if fix.admit_null:
            assert {"type": "null"} in node["anyOf"], fix
            node = node["anyOf"][0]
        if fix.also is not None:
            assert node["allOf"][1] == fix.also, fix
        assert set(fix.add_enum) <= set(node.get("enum", ())), fix


def test_a_pointer_escapes_slashes_as_json_pointers_do() -> None:
    assert Fix("/paths/~1a~1{b}/post/content/application~1json/x~0y").parts == [
        "paths",
        "/a/{b}",
        "post",
        "content",
        "application/json",
        "x~y",
    ]

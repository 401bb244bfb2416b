"""The vendored OpenAPI excerpt is what its generator makes from the spec at the pinned commit (with the artefact
fixes and nothing else), it ships with its licence and commit, and every schema it names is in it."""

from __future__ import annotations

import json
from importlib.resources import files

import pytest

from rrkit.references import ARTEFACTS
from rrkit.references.kinds import ROOTS

from .make_openapi_excerpt import EXCERPT, SOURCE, SPEC, excerpt


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
    assert document["x-source"] == SOURCE and SOURCE["commit"] in licence and "The MIT License" in licence
    assert set(ROOTS) <= set(document["$defs"])
    text = json.dumps(document)
    assert "#/components/" not in text and "$recursiveRef" not in text and '"nullable"' not in text


def test_each_artefact_says_what_the_spec_says_what_the_service_does_and_how_it_is_treated() -> None:
    assert len({artefact.name for artefact in ARTEFACTS}) == len(ARTEFACTS) >= 5
    for artefact in ARTEFACTS:
        assert artefact.spec and artefact.service and artefact.treatment, artefact.name
    document = json.loads(EXCERPT.read_text(encoding="utf-8"))
    for fix in (fix for artefact in ARTEFACTS for fix in artefact.fixes):
        node = document
        for part in fix.pointer.strip("/").split("/"):
            node = node[int(part)] if isinstance(node, list) else node[part]
        if fix.admit_null:
            assert {"type": "null"} in node["anyOf"], fix
        assert set(fix.add_enum) <= set(node.get("enum", ())), fix

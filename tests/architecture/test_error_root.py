"""One error root: every error rrkit raises for its user to handle derives from `rrkit.RRKitError`."""

from __future__ import annotations

from pathlib import Path

import pytest

import rrkit
from rrkit.cassette import CassetteError, load_cassette
from rrkit.client import ModelClientError
from rrkit.client.conversation import TooManySamples
from rrkit.protocol.encoding import BodyEncodingError, decode_body
from rrkit.script.loader import ScriptError


@pytest.mark.parametrize("error", [CassetteError, ScriptError, ModelClientError, TooManySamples, BodyEncodingError])
def test_every_user_facing_error_derives_from_rrkit_error(error: type[Exception]) -> None:
    assert issubclass(error, rrkit.RRKitError)


def test_one_except_clause_catches_a_bad_script_a_bad_cassette_and_a_bad_body(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("responses: [{output: [{text: hi, chunks: zero}]}]\n")
    cassette = tmp_path / "bad.json"
    cassette.write_text("{not json")
    attempts = (lambda: rrkit.load_script(script), lambda: load_cassette(cassette), lambda: decode_body(b"x", "br"))
    for attempt in attempts:
        with pytest.raises(rrkit.RRKitError):
            attempt()

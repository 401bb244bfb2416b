"""A setting that cannot be used is a SettingError (an RRKitError and, for the standard library's callers, a
ValueError), whichever layer reads it; so a command catches exactly that, never every ValueError."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

from rrkit.cassette.match import MatchConfig, match_config_from_cli
from rrkit.cassette.recordmode import parse_record_mode
from rrkit.cassette.redact import Redactor
from rrkit.plugin_options import RRKitConfig
from rrkit.protocol.exceptions import RRKitError, SettingError
from rrkit.protocol.jsonpath import JsonPath
from rrkit.protocol.limits import Limits
from rrkit.relay.settings import RelaySettings
from rrkit.script.models import Script
from rrkit.script.select import ScriptState
from rrkit.server.capture import Capture
from rrkit.server.respond import ResponseStore
from rrkit.server.runner import FakeServer
from rrkit.tools.diff import diff_cassettes

CLI = Path(__file__).resolve().parents[2] / "toolkit" / "rrkit" / "cli"

BAD_SETTINGS: dict[str, Callable[[], object]] = {
    "a match 'on'": lambda: MatchConfig(on="both"),  # type: ignore[arg-type]
    "a match setting": lambda: MatchConfig.from_settings({"ignor": ["x"]}),
    "a match preset": lambda: match_config_from_cli(presets=["codx"]),
    "a normalize regex": lambda: match_config_from_cli(normalize=["input=("]),
    "an ignore path": lambda: match_config_from_cli(ignore=["input["]),
    "a JSON path": lambda: JsonPath.parse("a..b"),
    "a record mode": lambda: parse_record_mode("sometimes"),
    "a redact path": lambda: Redactor(paths=("input[",)),
    "a plugin key": lambda: RRKitConfig.of({"record_mod": "none"}),
    "a plugin redact path": lambda: RRKitConfig(redact_paths=("input[x",)),
    "a limit": lambda: Limits().with_settings(["bdy=1"]),
    "a diff view": lambda: diff_cassettes(None, None, view="nope"),  # type: ignore[arg-type]
    "a capture's keep": lambda: Capture(keep=-1),
    "a response store's size": lambda: ResponseStore(size=0),
    "an upstream URL": lambda: RelaySettings.of("ftp://example.test/v1"),
    "an upstream's redirects": lambda: RelaySettings.of("http://127.0.0.1:1/v1", redirects="some"),
    "a script and a source at once": lambda: FakeServer(Script(), source=ScriptState(Script())),
}


@pytest.mark.parametrize("make", BAD_SETTINGS.values(), ids=BAD_SETTINGS)
def test_a_bad_setting_is_a_setting_error_under_the_root_and_a_value_error(make: Callable[[], object]) -> None:
    with pytest.raises(SettingError) as caught:
        make()
    assert isinstance(caught.value, RRKitError) and isinstance(caught.value, ValueError)
    assert str(caught.value)


def _handlers_of_every_value_error(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ExceptHandler)
        and any(isinstance(n, ast.Name) and n.id == "ValueError" for n in ast.walk(node.type or ast.Constant(None)))
    ]


def test_no_command_catches_every_value_error() -> None:
    caught = {str(path.name): lines for path in CLI.glob("*.py") if (lines := _handlers_of_every_value_error(path))}
    assert caught == {}

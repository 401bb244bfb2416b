"""A file a loader refuses is never parsed again to find out what it is: a cassette nested 100,000 deep or cut
short is refused from its one parse, with a message and exit status 2 (no RecursionError, no YAML parse of a
large file), and a script given as a cassette (or the reverse) is still named as one, from that same parse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rrkit.cli import main

pytestmark = pytest.mark.hostile

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "cassettes" / "text.http.json"


@pytest.fixture
def no_second_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any YAML parse, or a re-read of the file's kind, fails the test."""

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("the file was parsed again after the loader refused it")

    monkeypatch.setattr(yaml, "safe_load", refused)
    monkeypatch.setattr("rrkit.files.kind.file_kind", refused)


def _show(path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["show", str(path)])
    assert "Traceback" not in result.output and not isinstance(result.exception, AssertionError), result.exception
    return result.exit_code, " ".join(result.output.split())


def test_an_event_nested_100000_deep_is_refused_from_the_one_parse(tmp_path: Path, no_second_parse: None) -> None:
    text = GOLDEN.read_text(encoding="utf-8")
    deep = "[" * 100_000 + "]" * 100_000
    broken = tmp_path / "deep.json"
    assert '"delta":"' in text
    broken.write_text(text.replace('"delta":"', f'"deep":{deep},"delta":"', 1), encoding="utf-8")
    code, said = _show(broken)
    assert code == 2 and str(broken) in said


def test_a_cassette_cut_short_is_refused_naming_the_place(tmp_path: Path, no_second_parse: None) -> None:
    text = GOLDEN.read_text(encoding="utf-8")
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) * 2 // 3], encoding="utf-8")
    code, said = _show(cut)
    assert code == 2 and str(cut) in said and "line " in said


def test_a_json_script_given_as_a_cassette_is_named_a_script_from_the_loader_s_parse(
    tmp_path: Path, no_second_parse: None
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"output": [{"type": "message", "text": "Hi."}]}]}), encoding="utf-8")
    code, said = _show(script)
    assert code == 2 and "is a script" in said


def test_a_cassette_given_as_a_script_is_named_a_cassette(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--script", str(GOLDEN), "--port", "0"])
    assert result.exit_code == 2 and "is a cassette" in " ".join(result.output.split())

"""The CLI helps: bad options are one usage error (exit 2, no traceback) naming the option and its valid values; a
script given as a cassette (or the reverse) is named as what it is with the option that takes it; every command's
`--help` shows an example."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from rrkit.cli import commands, main

CASSETTES = Path(__file__).parents[2] / "cassettes"
CASSETTE = CASSETTES / "text.http.json"
SCRIPT_YAML = "name: hello\nresponses:\n  - output:\n      - text: hi\n"
SCRIPT_JSON = json.dumps({"name": "hello", "responses": [{"output": [{"text": "hi"}]}]})


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "200"})


def assert_usage_error(result: Result, *says: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    for words in says:
        assert words in result.output, result.output


RECORD = ("record", "--upstream", "http://127.0.0.1:9/v1", "--cassette", "session.json")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("serve", "--log-level", "verbose"), ["--log-level", "'verbose' is not one of", "trace"]),
        ((*RECORD, "--log-level", "loud"), ["--log-level", "'loud' is not one of"]),
        (("serve", "--port", "70000"), ["--port", "70000 is not in the range 0<=x<=65535"]),
        (("serve", "--port", "-1"), ["--port", "0<=x<=65535"]),
        ((*RECORD, "--port", "70000"), ["--port", "0<=x<=65535"]),
        (("serve", "--time-scale", "-1"), ["--time-scale", "x>=0"]),
        (("serve", "--keep", "-5"), ["--keep", "x>=0"]),
        (("serve", "--cassette", "c.json", "--record-mode", "sometimes"), ["--record-mode", "new_episodes"]),
        ((*RECORD, "--record-mode", "append"), ["--record-mode", "'append' is not one of"]),
        (("demo", "--transport", "sse"), ["--transport", "'sse' is not one of"]),
        (("compare-codex", "--idle-timeout", "0"), ["--idle-timeout", "x>0"]),
        (("diff", str(CASSETTE), str(CASSETTE), "--view", "raw"), ["--view", "'raw' is not one of"]),
        (("replay", str(CASSETTE), "--timeout", "-3"), ["--timeout", "x>0"]),
        (("replay", str(CASSETTE), "--view", "raw"), ["--view"]),
        (("serve", "--ready-file", "/no/such/folder/ready.json"), ["--ready-file", "does not exist", "create it"]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_a_bad_option_is_one_usage_error_naming_it_without_a_traceback(
    args: tuple[str, ...], says: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert_usage_error(invoke(*args), *says)


def test_log_level_accepts_every_uvicorn_level_in_any_case() -> None:
    option = next(param for param in commands()["serve"].params if param.name == "log_level")
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == ["critical", "error", "warning", "info", "debug", "trace"]
    assert option.type.convert("DEBUG", option, None) == "debug"


# -- file kinds --------------------------------------------------------------------------------------------


@pytest.fixture
def script_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "hello.yaml"
    path.write_text(SCRIPT_YAML)
    return path


@pytest.fixture
def script_json(tmp_path: Path) -> Path:
    path = tmp_path / "hello.json"
    path.write_text(SCRIPT_JSON)
    return path


def assert_one_line(result: Result, *says: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and "invalid JSON" not in result.output
    assert "unknown key" not in result.output
    for words in says:
        assert words in lines[0], lines[0]


@pytest.mark.parametrize("mode", ["none", "once", "new_episodes", "all", "rewrite"])
@pytest.mark.parametrize("kind", ["yaml", "json"])
def test_a_script_given_as_a_cassette_is_named_a_script_with_the_option_that_takes_it(
    script_yaml: Path, script_json: Path, kind: str, mode: str
) -> None:
    script = script_yaml if kind == "yaml" else script_json
    before = script.read_text()
    result = invoke("serve", "--cassette", str(script), "--record-mode", mode)
    assert_one_line(result, f"{script} is a script (YAML/JSON with `responses`), not a cassette: use --script {script}")
    assert script.read_text() == before  # never overwritten, whatever the record mode


def test_a_script_given_to_record_as_its_cassette_is_not_overwritten(script_yaml: Path) -> None:
    before = script_yaml.read_text()
    result = invoke("record", "--upstream", "http://127.0.0.1:9/v1", "--cassette", str(script_yaml))
    assert_one_line(result, "is a script", "not a cassette", "give a new cassette file")
    assert script_yaml.read_text() == before


def test_a_shipped_script_given_as_a_cassette_is_named_as_one() -> None:
    assert_one_line(invoke("serve", "--cassette", "fixture:tool-loop"), "fixture:tool-loop is a shipped script")


def test_a_cassette_given_as_a_script_is_named_a_cassette_with_the_option_that_takes_it() -> None:
    result = invoke("serve", "--script", str(CASSETTE))
    assert_one_line(result, f"{CASSETTE} is a cassette", f"not a script: use --cassette {CASSETTE}")


@pytest.mark.parametrize("command", ["show", "diff", "validate", "replay"])
def test_a_script_given_to_show_diff_validate_or_replay_is_named_a_script(script_yaml: Path, command: str) -> None:
    args = {"show": [str(script_yaml)], "diff": [str(CASSETTE), str(script_yaml)]}
    args |= {"validate": [str(script_yaml)], "replay": [str(script_yaml)]}
    result = invoke(command, *args[command])
    assert_one_line(result, f"{script_yaml} is a script", "not a cassette", f"rrkit serve --script {script_yaml}")


def test_a_file_of_neither_kind_keeps_the_loaders_own_message(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    result = invoke("show", str(other))
    assert result.exit_code == 2 and "not an rrkit cassette" in result.output


# -- help --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [None, *sorted(commands())])
def test_every_commands_help_shows_an_example(command: str | None) -> None:
    result = invoke(*([command] if command else []), "--help")
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    shown = result.output.split("Example", 1)[1]
    assert f"rrkit {command or ''}".strip() in shown, result.output

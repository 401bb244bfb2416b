"""`rrkit demo`: the newcomer's first command runs every shipped fixture and says whether each ended as expected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.demo import DemoRow, Seen, check, expectation, format_table
from rrkit.script import load_script
from rrkit.script.shipped import fixtures_folder, script_files, shipped_directory

REPO_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_rrkit_demo_exits_zero_on_the_shipped_fixtures() -> None:
    result = CliRunner().invoke(main, ["demo", "--fixtures", str(REPO_FIXTURES), "--json"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    scripts = sorted(path.stem for path in REPO_FIXTURES.glob("*.yaml"))
    assert sorted({run["script"] for run in runs}) == sorted(load_script(p).name for p in REPO_FIXTURES.glob("*.yaml"))
    assert len(runs) == 2 * len(scripts)
    assert all(run["ok"] and not run["problems"] for run in runs)
    assert {run["transport"] for run in runs} == {"http", "ws"}


def test_rrkit_demo_exits_non_zero_when_a_run_is_not_as_its_script_expects(tmp_path: Path) -> None:
    (tmp_path / "wrong.yaml").write_text(
        "name: wrong\nexpect: {outcome: failed, code: context_length_exceeded}\n"
        "responses:\n  - repeat: true\n    output: [{text: Fine.}]\n"
    )
    result = CliRunner().invoke(main, ["demo", "--fixtures", str(tmp_path), "--transport", "http", "--json"])
    assert result.exit_code == 1
    (run,) = json.loads(result.output)
    assert "ended completed, expected failed" in run["problems"] and not run["ok"]
    table = CliRunner().invoke(main, ["demo", "--fixtures", str(tmp_path), "--transport", "http"])
    assert table.exit_code == 1
    assert "NO:" in table.output and "1 of 1 runs did not end" in table.output


def test_the_demo_table_fits_80_columns_however_long_its_cells(tmp_path: Path) -> None:
    runs = [
        DemoRow("a-fixture-with-a-very-long-name-indeed", "ws", 1, 2, 1, 3, 1, Seen("failed", "context_length")),
        DemoRow("short", "http", final=Seen("refused", status=426), problems=["ended refused, expected " + "x" * 90]),
    ]
    for width in (80, 120):
        text = format_table(runs, width)
        assert max(len(line) for line in text.splitlines()) <= width
        assert "a-fixture-with-a" in text and "NO:" in text


def test_rrkit_demo_prints_its_table_within_the_terminal_width() -> None:
    arguments = ["demo", "--fixtures", str(REPO_FIXTURES), "--transport", "ws"]
    result = CliRunner().invoke(main, arguments, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80
    runs = len(script_files(REPO_FIXTURES))  # one per fixture over the one transport
    assert "as expected" in result.output and f"All {runs} runs ended as their scripts expect." in result.output


def test_demo_finds_the_fixtures_given_else_next_to_the_current_directory_else_the_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fixtures_folder(tmp_path) == tmp_path
    monkeypatch.chdir(tmp_path)
    assert fixtures_folder(None) == shipped_directory()
    assert shipped_directory().resolve() == REPO_FIXTURES.resolve()  # the repository's fixtures/ links to them
    (tmp_path / "fixtures").mkdir()
    assert fixtures_folder(None) == tmp_path / "fixtures"


def test_a_websocket_only_fault_expects_only_the_final_outcome_over_http() -> None:
    expect = {"outcome": "completed", "first_attempt": "refused", "status": 426, "transport": "ws"}
    assert expectation(expect, "http") == {"outcome": "completed"}
    assert expectation(expect, "ws") == expect
    assert check(expect, Seen("refused", status=426), Seen("completed")) == []
    assert check(expect, Seen("refused", status=503), Seen("completed")) == ["status 503, expected 426"]


def test_a_typed_error_code_counts_for_failed_and_refused_outcomes() -> None:
    expect = {"outcome": "failed", "code": "context_length_exceeded"}
    failed = Seen("failed", "context_length_exceeded")
    assert check(expect, failed, failed) == []
    other = Seen("failed", "insufficient_quota")
    assert check(expect, other, other) == ["code 'insufficient_quota', expected 'context_length_exceeded'"]


def test_rrkit_demo_strict_streams_retries_a_broken_stream_the_default_answers_as_codex_does(tmp_path: Path) -> None:
    from rrkit.script import Script, reply

    from ..realclients.differential_broken import broken_reply

    script = Script(name="lone-completed").queue(broken_reply("lone-completed"), reply("Fine."))
    (tmp_path / "lone-completed.json").write_text(script.model_dump_json(exclude_none=True))
    arguments = ["demo", "--fixtures", str(tmp_path), "--transport", "http", "--json"]
    codex_like = CliRunner().invoke(main, arguments)
    assert codex_like.exit_code == 0, codex_like.output  # the turn takes the lone response.completed at once
    (run,) = json.loads(codex_like.output)
    assert run["ok"] and run["retries"] == 0
    strict = CliRunner().invoke(main, [*arguments, "--strict-streams"])
    assert strict.exit_code == 1  # stricter than Codex: refused as a drop, then the script's next reply
    (run,) = json.loads(strict.output)
    assert run["retries"] == 1 and run["problems"] == ["first attempt dropped, expected completed"]

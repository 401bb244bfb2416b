"""`rrkit demo`: the newcomer's first command runs every shipped fixture and says whether each ended as expected."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.demo import SHIPPED_FIXTURES, Seen, check, expectation, find_fixtures

REPO_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_rrkit_demo_exits_zero_on_the_shipped_fixtures() -> None:
    result = CliRunner().invoke(main, ["demo", "--fixtures", str(REPO_FIXTURES)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    scripts = sorted(REPO_FIXTURES.glob("*.yaml"))
    rows = [line for line in lines if line.split()[:1] and line.split()[1:2] in (["http"], ["ws"])]
    assert len(rows) == 2 * len(scripts)
    assert all(line.rstrip().endswith("yes") for line in rows)
    assert "as expected" in lines[1]


def test_rrkit_demo_exits_non_zero_when_a_run_is_not_as_its_script_expects(tmp_path: Path) -> None:
    (tmp_path / "wrong.yaml").write_text(
        "name: wrong\nexpect: {outcome: failed, code: context_length_exceeded}\n"
        "responses:\n  - repeat: true\n    output: [{text: Fine.}]\n"
    )
    result = CliRunner().invoke(main, ["demo", "--fixtures", str(tmp_path), "--transport", "http"])
    assert result.exit_code == 1
    assert "NO: ended completed, expected failed" in result.output
    assert "0 of 1" not in result.output and "1 of 1 runs did not end" in result.output


def test_demo_finds_the_fixtures_given_else_next_to_the_current_directory_else_the_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert find_fixtures(tmp_path) == tmp_path
    monkeypatch.chdir(tmp_path)
    assert find_fixtures(None) == SHIPPED_FIXTURES
    assert SHIPPED_FIXTURES.resolve() == REPO_FIXTURES.resolve()  # the repository's fixtures/ links to them
    (tmp_path / "fixtures").mkdir()
    assert find_fixtures(None) == tmp_path / "fixtures"


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

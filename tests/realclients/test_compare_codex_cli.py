"""`rrkit compare-codex`: the fixtures through Codex and the reference client, and its exit status."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rrkit.cli import main
from rrkit.differential import codex
from rrkit.differential.codex import INSTALL_HINT

from .codex import require_codex

AGREED = """name: agreed
responses:
  - repeat: true
    output: [{text: "Hello."}]
"""
DIFFERING = """name: differing
description: "Codex alone (its originator header) is refused with a 400: the clients differ by design."
responses:
  - when: {headers: {originator: codex_exec}}
    repeat: true
    reject: {status: 400, message: "Not for Codex."}
  - repeat: true
    output: [{text: "Hello."}]
"""


def test_compare_codex_says_what_it_runs_before_looking_for_codex_then_exits_2_saying_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(codex, "_LOCAL_CODEX", tmp_path / "no-codex")
    monkeypatch.delenv(codex.BIN_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(main, ["compare-codex"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("rrkit compare-codex: Codex CLI 0.169.0 and the reference client, scripts from")
    assert "Codex CLI 0.169.0 not found" in result.output
    assert INSTALL_HINT in result.output


def test_compare_codex_exits_2_for_a_codex_path_that_is_not_the_pinned_version(tmp_path: Path) -> None:
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\necho 'codex-cli 0.1.0'\n")
    fake.chmod(0o755)
    result = CliRunner().invoke(main, ["compare-codex", "--codex", str(fake)])
    assert result.exit_code == 2, result.output
    assert "is version 0.1.0, not Codex CLI 0.169.0" in result.output


def test_compare_codex_help_has_an_example() -> None:
    result = CliRunner().invoke(main, ["compare-codex", "--help"])
    assert result.exit_code == 0
    assert "rrkit compare-codex --codex" in result.output and "Exit status: 0 they agree" in result.output


@pytest.mark.codex
def test_compare_codex_exits_0_when_both_clients_agree(tmp_path: Path) -> None:
    require_codex()
    (tmp_path / "agreed.yaml").write_text(AGREED)
    result = CliRunner().invoke(main, ["compare-codex", "--fixtures", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if line.startswith("agreed")]
    assert [row[1] for row in rows] == ["http", "ws"] and all(row[-1] == "yes" for row in rows)
    assert "agree on all 2 runs" in result.output


@pytest.mark.codex
def test_compare_codex_exits_1_and_shows_where_the_clients_differ(tmp_path: Path) -> None:
    require_codex()
    (tmp_path / "agreed.yaml").write_text(AGREED)
    (tmp_path / "differing.yaml").write_text(DIFFERING)
    result = CliRunner().invoke(main, ["compare-codex", "--fixtures", str(tmp_path), "--transport", "http", "-v"])
    assert result.exit_code == 1, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("differing"))
    assert "codex: failed | rrkit: completed" in row and row.endswith("NO")
    assert "They differ on 1 of 2 runs." in result.output
    assert "codex: http full -> refused 400" in result.output and "rrkit: http full -> completed" in result.output

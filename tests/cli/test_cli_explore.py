"""`rrkit explore` as a user runs it: a command explored, its exit status (0 nothing found, 1 a finding, 2 usage),
the report as JSON, each finding's script written into --out and judged again by `rrkit conform --scenario`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[1] / "explore" / "explore_client.py"


def rrkit(*args: str, broken: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BROKEN": broken}
    return subprocess.run(
        [sys.executable, "-m", "rrkit", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def test_a_finding_exits_1_with_its_script_written_and_the_script_breaks_the_client_again(tmp_path: Path) -> None:
    explored = rrkit(
        "explore", "--transport", "http", "--max-cases", "20", "--out", str(tmp_path), "--json", "--",
        sys.executable, str(CLIENT), broken="ignore-seq-gaps",
    )  # fmt: skip
    assert explored.returncode == 1, explored.stderr
    report = json.loads(explored.stdout)
    assert report["tool"] == "explore" and not report["ok"]
    written = [Path(finding["file"]) for finding in report["detail"]["findings"]]
    assert written and all(path.parent == tmp_path and path.exists() for path in written)
    judged = rrkit(
        "conform", "--scenario", str(written[0]), "--", sys.executable, str(CLIENT), broken="ignore-seq-gaps"
    )
    assert judged.returncode == 1, judged.stdout
    assert rrkit("conform", "--scenario", str(written[0]), "--", sys.executable, str(CLIENT)).returncode == 0


def test_nothing_found_exits_0_and_says_how_much_was_explored(tmp_path: Path) -> None:
    explored = rrkit(
        "explore", "--transport", "http", "--max-cases", "8", "--seed", "3", "--out", str(tmp_path), "--",
        sys.executable, str(CLIENT),
    )  # fmt: skip
    assert explored.returncode == 0, explored.stdout + explored.stderr
    assert "0 finding(s) in 8 case(s) run" in explored.stdout and not list(tmp_path.iterdir())


def test_a_seed_file_that_is_neither_script_nor_cassette_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "notes.yaml"
    bad.write_text("hello: world\n")
    explored = rrkit("explore", "--from", str(bad), "--", "true")
    assert explored.returncode == 2
    assert f"--from {bad}: neither a script nor a cassette" in explored.stderr


def test_conform_takes_a_scenario_file_for_a_client_not_with_a_server(tmp_path: Path) -> None:
    refused = rrkit("conform", "--scenario", str(tmp_path / "x.yaml"), "--server", "http://127.0.0.1:9/v1")
    assert refused.returncode == 2 and "--scenario judges a client" in refused.stderr


def test_the_reference_client_with_strict_streams_is_explored_and_a_command_with_it_is_a_usage_error(
    tmp_path: Path,
) -> None:
    args = ("explore", "--transport", "http", "--seed", "0", "--max-cases", "20", "--out", str(tmp_path), "--json")
    codex_like = rrkit(*args)  # the default answers the broken streams Codex answers: findings
    assert codex_like.returncode == 1, codex_like.stderr
    findings = json.loads(codex_like.stdout)["detail"]["findings"]
    assert findings and all("answered" in Path(finding["file"]).name for finding in findings)
    strict = rrkit(*args, "--strict-streams")
    assert strict.returncode == 0, strict.stdout + strict.stderr
    assert "(strict)" in strict.stderr
    with_command = rrkit("explore", "--strict-streams", "--", sys.executable, str(CLIENT))
    assert with_command.returncode == 2 and "--strict-streams sets rrkit's reference client" in with_command.stderr

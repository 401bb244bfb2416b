"""The README's examples run as written: the pytest example, the client example and the script example."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rrkit.script import parse_script

README = (Path(__file__).parent.parent / "README.md").read_text()


def code_after(marker: str, language: str = "python") -> str:
    return README.split(marker, 1)[1].split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_readme_pytest_example_passes_and_then_replays(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_weather=code_after("A complete example to paste into `test_weather.py`:"))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=3)
    assert (pytester.path / "cassettes" / "test_weather" / "weather.json").exists()
    pytester.runpytest().assert_outcomes(passed=3)


def test_readme_client_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "client_example.py"
    script.write_text(code_after("## The reference client"))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Sunny in Paris."
    assert "ws warmup" in lines[1] and all("ws incremental" in line for line in lines[2:])


def test_readme_script_example_is_the_shipped_example_fixture() -> None:
    text = code_after("## Scripts", "yaml")
    shipped = (Path(__file__).parent.parent / "fixtures" / "example.yaml").read_text()
    assert parse_script(yaml.safe_load(text)).responses == parse_script(yaml.safe_load(shipped)).responses


def test_every_file_the_readme_links_to_is_in_the_repository() -> None:
    root = Path(__file__).parent.parent
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README)
    assert links, "the README links to no file"
    assert [link for link in links if not (root / link).exists()] == []
    assert "../shared" not in README


def test_readme_async_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_async=code_after("## Use rrkit in your project"))
    pytester.runpytest().assert_outcomes(passed=1)

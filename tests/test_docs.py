"""The documentation's examples run as written (the README's and the site's: the first test, the pytest example,
the async example, the client example, the script example, the tutorials' tests and client), and every file or
page a document links to exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rrkit.conform import CommandClient, run
from rrkit.script import parse_script

from .docs_text import DOCS, DOCUMENTS, ROOT, code_after, page


def test_the_pytest_guide_example_passes_and_then_replays(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_weather=code_after("A complete example to paste into `test_weather.py`:"))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=3)
    assert (pytester.path / "cassettes" / "test_weather" / "weather.json").exists()
    pytester.runpytest().assert_outcomes(passed=3)


@pytest.mark.parametrize("document", ["README.md", "getting-started.md"])
def test_the_first_test_passes_as_written_in_the_readme_and_the_getting_started_page(
    document: str, pytester: pytest.Pytester
) -> None:
    marker = "## A first test" if document == "README.md" else "## Your first test: a stream cut mid-way"
    pytester.makepyfile(test_first=code_after(marker, in_page=document))
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_reference_client_guide_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "client_example.py"
    script.write_text(code_after("# The reference client"))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Sunny in Paris."
    assert "ws warmup" in lines[1] and all("ws incremental" in line for line in lines[2:])


def test_the_scripts_page_example_is_the_shipped_example_fixture() -> None:
    text = code_after("# Scripts", "yaml", in_page="reference/scripts.md")
    shipped = (ROOT / "fixtures" / "example.yaml").read_text()
    assert parse_script(yaml.safe_load(text)).responses == parse_script(yaml.safe_load(shipped)).responses


LINK = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("document", sorted(DOCUMENTS), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_file_or_page_a_document_links_to_exists(document: Path) -> None:
    text = DOCUMENTS[document]
    missing = [link for link in LINK.findall(text) if not (document.parent / link).exists()]
    assert missing == []
    assert "../shared" not in text


def test_the_readme_is_a_front_page_that_links_into_the_site() -> None:
    readme = page("README.md")
    assert len(readme.encode()) <= 12 * 1024
    linked = {Path(link) for link in LINK.findall(readme) if link.startswith("docs/")}
    assert len(linked) >= 8 and all((ROOT / link).is_file() for link in linked)
    assert all(link.resolve().is_relative_to(DOCS) for link in (ROOT / link for link in linked))


def test_the_getting_started_async_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_async=code_after("## Use rrkit in your project"))
    pytester.runpytest().assert_outcomes(passed=1)


def test_the_sdk_faults_tutorial_passes_as_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(weather=code_after("Put it in `weather.py`:"))
    pytester.makepyfile(test_weather_faults=code_after("Put this in\n`test_weather_faults.py` beside `weather.py`:"))
    pytester.runpytest().assert_outcomes(passed=5)


def test_the_judge_a_client_tutorial_s_client_breaks_the_must_it_says_on_a_stall(tmp_path: Path) -> None:
    client = tmp_path / "my_client.py"
    client.write_text(code_after("Save this as `my_client.py`:"), encoding="utf-8")
    report = run(CommandClient([sys.executable, str(client)]), only=("stall",), transports=("http",), timeout=3.0)
    broken = [verdict for result in report.results for verdict in result.verdicts if not verdict.held]
    assert [verdict.expectation for verdict in broken] == ["ends on its own"]

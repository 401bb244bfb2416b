"""The documentation site as a reader gets it: `mkdocs build --strict` makes it from `docs/` (no broken link,
anchor or reference), and headless Chromium shows the getting-started page with its title, the site's navigation
and the first test, and the command-line reference with a table of each command's options made from the commands
themselves."""

from __future__ import annotations

import html
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rrkit.cli import main

from .chromium import dump_dom, needs_chromium
from .docs_text import ROOT

pytest.importorskip("mkdocs", reason="the documentation site needs mkdocs: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(where)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    yield where


def test_every_page_of_the_navigation_is_built(site: Path) -> None:
    pages = ["getting-started", "guide/serve", "guide/conform", "reference/cli", "reference/formats", "protocol"]
    assert all((site / page / "index.html").is_file() for page in pages)


@needs_chromium
def test_the_getting_started_page_shows_its_title_the_navigation_and_the_first_test(site: Path) -> None:
    dom = dump_dom(site / "getting-started" / "index.html")
    assert "<title>Getting started - rrkit</title>" in dom
    for section in ("Tutorials", "How-to guides", "Reference", "Explanation", "The pytest plugin", "File formats"):
        assert section in dom, section
    assert "test_a_stream_cut_mid_way_is_an_error_not_an_answer" in dom


@needs_chromium
def test_the_command_line_reference_has_a_table_of_options_made_from_the_commands(site: Path) -> None:
    dom = html.unescape(dump_dom(site / "reference" / "cli" / "index.html"))
    assert "<title>The rrkit command - rrkit</title>" in dom
    serve = dom.split('id="rrkit-serve"', 1)[1].split('id="rrkit-', 1)[0]
    assert "<table>" in serve and "--port" in serve and "--script" in serve
    assert "Sentinel" not in dom  # an option without a default shows none
    assert all(f'id="rrkit-{name}"' in dom for name in main.commands)

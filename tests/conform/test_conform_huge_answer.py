"""A client's answer and output are quoted by their ends in every report (terminal, JSON, JUnit, HTML, GitHub
annotations): `rrkit conform` on a client that answers 50 MB and prints 5 MB to stderr finishes with reports of a
few KiB each, quoted once where findings are made (`rrkit.report.text.quoted`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rrkit.report import Case, Finding, Held, Report
from rrkit.report.text import QUOTE_EDGE, REPORT_EDGE, bounded, quoted

CLIENT = """
import os, sys, httpx
url = os.environ["RRKIT_HTTP_URL"] + "/responses"
httpx.post(url, json={"model": "m", "input": "hi", "stream": True}, timeout=30, trust_env=False).read()
with open(os.environ["RRKIT_ANSWER"], "w") as answer:
    answer.write("A" + "x" * 50_000_000 + "Z")
sys.stderr.write("E" + "e" * 5_000_000 + "\\n")
"""

SCENARIO = """\
name: big-answer
description: the client answers with 50 MB of text
transports: [http]
script: fixture:text
musts:
  - check: answer
    is: Hello
    why: the answer is the stream's text.
"""

SMALL = 64 * 1024
"""Far more than a report of one quoted answer and one quoted stderr takes (about 20 KiB), far less than 50 MB."""


@pytest.mark.hostile
def test_a_50_mb_answer_makes_bounded_reports_in_every_format(tmp_path: Path) -> None:
    (client := tmp_path / "client.py").write_text(CLIENT, encoding="utf-8")
    (scenario := tmp_path / "big.yaml").write_text(SCENARIO, encoding="utf-8")
    junit, html = tmp_path / "r.xml", tmp_path / "r.html"
    args = ["--scenario", str(scenario), "--junit", str(junit), "--html", str(html), "--github"]
    command = [sys.executable, "-m", "rrkit", "conform", *args, "--", sys.executable, str(client)]
    terminal = subprocess.run(command, capture_output=True, text=True, timeout=300)  # was: not done in 10 minutes
    as_json = subprocess.run([*command[:4], "--json", *command[4:]], capture_output=True, text=True, timeout=300)
    assert terminal.returncode == 1 and as_json.returncode == 1, terminal.stderr[-2000:]
    for written in (terminal.stdout, as_json.stdout, as_json.stderr, junit.read_text(), html.read_text()):
        assert "characters left out" in written and len(written) < SMALL, written[:300]
    report = Report.model_validate_json(as_json.stdout)
    (finding,) = report.findings
    assert finding.evidence.startswith("the client's run completed (exit status 0: eee")  # the tail it printed
    assert "characters left out ...] eee" in finding.evidence
    assert "answered 'A" + "x" * 100 in finding.evidence and finding.evidence.endswith(
        "xxZ', the stream's text is 'Hello'"
    )
    assert "50,000,004 characters" in finding.evidence  # the size between the ends (the repr's two quotes too)


def test_a_quoted_text_keeps_its_ends_and_says_how_much_is_left_out() -> None:
    text = "<" + "m" * 100_000 + ">"
    shown = quoted(text)
    assert shown.startswith("<" + "m" * (QUOTE_EDGE - 1)) and shown.endswith("m" * (QUOTE_EDGE - 1) + ">")
    assert f"[... {100_002 - 2 * QUOTE_EDGE:,} of 100,002 characters left out ...]" in shown
    assert quoted(shown) == shown and quoted("short") == "short"


def test_every_text_a_report_quotes_is_bounded_and_read_back_as_written() -> None:
    huge = "y" * 1_000_000
    report = Report(
        tool="conform",
        subject=huge,
        summary=huge,
        cases=(
            Case(
                group="g",
                name="n",
                output=huge,
                skipped=None,
                findings=(Finding(rule="r", reason=huge, evidence=huge),),
                held=(Held(rule="h", evidence=huge),),
            ),
        ),
        detail={"results": [{"detail": huge, "flow": [huge]}]},
    )
    written = report.model_dump_json()
    assert len(written) < 20 * (2 * REPORT_EDGE + 100)
    assert json.loads(written)["detail"]["results"][0]["flow"][0] == bounded(huge)
    assert Report.model_validate_json(written) == report

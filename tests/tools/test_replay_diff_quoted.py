"""`rrkit replay` and `rrkit diff` quote what a client wrote (its output, a value it sent or was sent) as every
report does: a few KiB of each end with the size between, so the terminal output stays small however much the
client wrote."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrkit.cli import main as cli
from rrkit.report.text import QUOTE_EDGE

CASSETTE = Path(__file__).parents[2] / "cassettes" / "example.http.json"
HUGE = 3_000_000


@pytest.mark.hostile
def test_replay_quotes_a_failing_clients_huge_output_by_its_ends() -> None:
    client = f"import sys; sys.stderr.write('start' + 'x' * {HUGE} + 'end'); sys.exit(3)"
    result = CliRunner().invoke(cli, ["replay", str(CASSETTE), "--", sys.executable, "-c", client])
    assert result.exit_code == 1, result.output
    words = squashed(result.output)  # the table wraps its cells as wide as the terminal is
    assert "exitstatus3" in words and "charactersleftout" in words, result.output
    assert len(result.output) < 20 * QUOTE_EDGE, f"{len(result.output):,} characters of terminal output"


def squashed(output: str) -> str:
    """The terminal's text with no space, line break or table border: what a table says however it wraps."""
    return re.sub(r"[\s│┃|]+", "", output)


@pytest.mark.hostile
def test_diff_quotes_a_huge_differing_value_by_its_ends(tmp_path: Path) -> None:
    cassette = json.loads(CASSETTE.read_text(encoding="utf-8"))
    deltas = (event for exchange in cassette["exchanges"] for event in exchange["events"])
    for event in deltas:
        if event["event"]["type"] == "response.output_text.delta":
            event["event"]["delta"] = "start" + "y" * HUGE + "end"
            break
    else:
        raise AssertionError("the cassette has no text delta")
    (changed := tmp_path / "changed.http.json").write_text(json.dumps(cassette), encoding="utf-8")
    result = CliRunner().invoke(cli, ["diff", str(CASSETTE), str(changed)])
    assert result.exit_code == 1, result.output
    words = squashed(result.output)
    assert "3000008chars" in words or "charactersleftout" in words, result.output
    assert len(result.output) < 20 * QUOTE_EDGE, f"{len(result.output):,} characters of terminal output"

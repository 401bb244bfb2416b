"""Bounds on hostile input (issue 65): the time and peak memory of each case, each in a fresh process.

- YAML: a recorded script of 100,000 events (16 MB) read by rrkit's reader (the data and the lines of its values)
  beside PyYAML's `CSafeLoader` (the data only), and loaded as a script (validated); a 50 MB file of small values
  (empty lists, the costliest for their size) refused at its memory bound (24 times its size).
- `rrkit conform` on a client that answers 50 MB and prints 5 MB to stderr: the run and the size of its report.
- `rrkit explore --seconds 10 --case-timeout 5` on a client that hangs: the whole run (the budget plus one case
  timeout at most).

Run: python -m benchmarks.bench_bounds [--quick] [--json]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Profile, Row, at_most, child_env, run_main
from tests.conform.test_conform_huge_answer import CLIENT as BIG_ANSWER_CLIENT
from tests.conform.test_conform_huge_answer import SCENARIO as BIG_ANSWER_SCENARIO
from tests.script.test_yaml_bounds import EMPTIES, recorded

BENCH = "bounds"
MB = 1_000_000

READ = """
import sys
from pathlib import Path
from rrkit.files.documents import read_document
from rrkit.protocol.exceptions import ScriptError
try:
    read_document(Path(sys.argv[1]), "script", ScriptError)
except ScriptError as error:
    print(str(error)[:200])
"""
PYYAML = "import sys, yaml; yaml.load(open(sys.argv[1], encoding='utf-8').read(), Loader=yaml.CSafeLoader)"
LOAD = "import sys; from rrkit.script import load_script; load_script(sys.argv[1])"


def measured(argv: list[str], cwd: Path = ROOT, timeout: float = 600) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one run of `argv` in a fresh process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    out = process.stdout.read()
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped above
    wall = time.perf_counter() - started
    if wall > timeout:
        raise RuntimeError(f"{argv[:4]} took {wall:.0f} s")
    return wall, usage.ru_maxrss / 1024, out.decode(errors="replace")


def _yaml_rows(folder: Path) -> list[Row]:
    script = folder / "recorded.yaml"
    script.write_text(recorded(100_000), encoding="utf-8")
    size = script.stat().st_size / MB
    ours = measured([sys.executable, "-c", READ, str(script)])
    theirs = measured([sys.executable, "-c", PYYAML, str(script)])
    loaded = measured([sys.executable, "-c", LOAD, str(script)])
    small = folder / "small.yaml"
    small.write_text("responses: [" + EMPTIES * (50 * MB // len(EMPTIES)) + "]\n", encoding="utf-8")
    refused = measured([sys.executable, "-c", READ, str(small)])
    assert "the bound of a YAML file" in refused[2], refused[2]
    note = f"{size:.1f} MB file"
    base = "PyYAML CSafeLoader, data only"
    return [
        Row("YAML: 100,000-event script read", ours[0], theirs[0], "s", baseline_name=base, note=note, bench=BENCH),
        Row(
            "YAML: 100,000-event script read, peak",
            ours[1],
            theirs[1],
            "MB",
            baseline_name=base,
            note=note,
            bench=BENCH,
        ),
        Row("YAML: 100,000-event script loaded (validated)", loaded[0], None, "s", note=note, bench=BENCH),
        Row("YAML: 100,000-event script loaded, peak", loaded[1], None, "MB", note=note, bench=BENCH),
        Row("YAML: 50 MB of small values refused", refused[0], None, "s", note="at 24x its size", bench=BENCH),
        Row(
            "YAML: 50 MB of small values refused, peak",
            refused[1],
            None,
            "MB",
            target=at_most(24 * 50 + 3 * 50 + 100, "value"),
            note="was over 3 GB at 80 s; bound: 24x + its text",
            bench=BENCH,
        ),
    ]


def _conform_rows(folder: Path) -> list[Row]:
    (client := folder / "client.py").write_text(BIG_ANSWER_CLIENT, encoding="utf-8")
    (scenario := folder / "big.yaml").write_text(BIG_ANSWER_SCENARIO, encoding="utf-8")
    argv = [sys.executable, "-m", "rrkit", "conform", "--json", "--scenario", str(scenario), "--"]
    wall, peak, out = measured([*argv, sys.executable, str(client)])
    note = "50 MB answer, 5 MB stderr; was not done in 10 min (575 MB)"
    return [
        Row("conform, a 50 MB answer", wall, None, "s", note=note, bench=BENCH),
        Row("conform, a 50 MB answer, peak", peak, None, "MB", note=note, bench=BENCH),
        Row("conform, a 50 MB answer, JSON report", len(out) / 1024, None, "KiB", bench=BENCH),
    ]


def _explore_rows(folder: Path) -> list[Row]:
    argv = [sys.executable, "-m", "rrkit", "explore", "--seconds", "10", "--case-timeout", "5", "--transport"]
    argv += ["http", "--out", str(folder), "--json", "--", sys.executable, "-c", "import time; time.sleep(1000)"]
    wall, _, _ = measured(argv)
    return [
        Row(
            "explore --seconds 10 --case-timeout 5, a hanging client",
            wall,
            None,
            "s",
            target=at_most(10 + 5 + 5, "value"),
            note="was 62-75 s (shrinking past the budget)",
            bench=BENCH,
        )
    ]


def rows(profile: Profile) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="rrkit-bounds-") as folder:
        return _yaml_rows(Path(folder)) + _conform_rows(Path(folder)) + _explore_rows(Path(folder))


if __name__ == "__main__":
    run_main(rows, __doc__)

"""Import and start-up cost of rrkit's pytest plugin beside pytest-recording's (vcrpy's pytest plugin), measured
in the same run, interleaved, each sample in a fresh subprocess. Prints medians of the rounds:

- `import rrkit.pytest_plugin` vs `import pytest_recording.plugin`, timed in the child with `time.perf_counter`
  around the import after `import pytest` (pytest's own cost excluded), and around `import pytest` + the plugin;
- `pytest --co -q` in an empty temporary project: with rrkit's plugin (`-p no:recording`), with pytest-recording's
  (`-p no:rrkit`) and with neither, all other installed plugins loaded as pytest loads them; then the same with
  plugin autoloading off (`PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`) and only `-p <the plugin>`.

The acceptance figure (issue 11) is the first row: rrkit's import within 1.5x of pytest-recording's.
Without pytest-recording installed (`pip install pytest-recording`), the baseline columns are skipped and say so.

Run: python -m benchmarks.bench_import [--rounds 15] [--quick] [--table]
(`python -m benchmarks` shows its rows: the import probe only in the quick profile.)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import DEFAULT, QUICK, Profile, Row, at_most, table

BENCH = "import"
RRKIT, RECORDING = "rrkit.pytest_plugin", "pytest_recording.plugin"
RRKIT_NAME, RECORDING_NAME = "rrkit", "recording"  # their pytest11 entry-point names, for `-p no:NAME`
LIMIT = 1.5

IMPORT_PROBE = """
import time
start = time.perf_counter()
import pytest
middle = time.perf_counter()
{import_line}
end = time.perf_counter()
print(end - middle, end - start)
"""


def import_times(module: str | None, folder: Path) -> tuple[float, float]:
    """(seconds for `import module` after pytest, seconds for pytest + module) in a fresh interpreter."""
    probe = IMPORT_PROBE.format(import_line=f"import {module}" if module else "pass")
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=folder, capture_output=True, text=True, check=True, env=_env(folder)
    )
    plugin, total = (float(value) for value in result.stdout.split())
    return plugin, total


def startup_time(folder: Path, options: list[str], autoload: bool = True) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of `pytest --co -q` in the empty project, start to exit. The CPU time (the
    child's user + system) is the steadier figure on a loaded machine."""
    env = _env(folder)
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *options],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 5):  # 5: no tests collected, as expected in an empty project
        raise SystemExit(f"pytest {' '.join(options)} failed ({result.returncode}):\n{result.stdout[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(folder: Path) -> dict[str, str]:
    """The children's environment: bytecode cached for every module alike (an installed rrkit has its .pyc files,
    as pip wrote pytest-recording's; a checkout run with PYTHONDONTWRITEBYTECODE=1 would compile rrkit from source
    on every import), kept in the temporary folder so that nothing is written into the tree."""
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPROFILEIMPORTTIME"):
        env.pop(name, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


Probe = Callable[[Path], tuple[float, float]]
PROBES: dict[str, tuple[tuple[str, str], dict[str, Probe]]] = {
    # probe: (the names of its two figures, kind -> the probe for rrkit, the baseline and neither)
    "import": (
        ("import plugin (after pytest)", "import pytest + plugin"),
        {
            "rrkit": lambda f: import_times(RRKIT, f),
            "baseline": lambda f: import_times(RECORDING, f),
            "neither": lambda f: import_times(None, f),
        },
    ),
    "start-up": (
        ("pytest --co start-up, wall", "pytest --co start-up, CPU"),
        {
            "rrkit": lambda f: startup_time(f, ["-p", f"no:{RECORDING_NAME}"]),
            "baseline": lambda f: startup_time(f, ["-p", f"no:{RRKIT_NAME}"]),
            "neither": lambda f: startup_time(f, ["-p", f"no:{RRKIT_NAME}", "-p", f"no:{RECORDING_NAME}"]),
        },
    ),
    "only this plugin": (
        ("pytest --co only plugin, wall", "pytest --co only plugin, CPU"),
        {
            "rrkit": lambda f: startup_time(f, ["-p", RRKIT], autoload=False),
            "baseline": lambda f: startup_time(f, ["-p", RECORDING], autoload=False),
            "neither": lambda f: startup_time(f, [], autoload=False),
        },
    ),
}


def measure(rounds: int, probes: list[str]) -> dict[str, dict[str, float]]:
    """figure name -> kind (rrkit, baseline, neither) -> median of `rounds` interleaved rounds (order rotated)."""
    baseline = importlib.util.find_spec("pytest_recording") is not None
    kinds = ["rrkit", "baseline", "neither"] if baseline else ["rrkit", "neither"]
    chosen = [PROBES[probe] for probe in probes]
    samples: dict[str, dict[str, list[float]]] = {
        name: {kind: [] for kind in kinds} for names, _ in chosen for name in names
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pytest.ini").write_text("[pytest]\n")  # the project's root: pytest looks no further up
        for _, by_kind in chosen:  # warm-up, not counted: fills the bytecode cache and the file system's
            for kind in kinds:
                by_kind[kind](folder)
        for round_ in range(rounds):
            for names, by_kind in chosen:
                order = kinds[round_ % len(kinds) :] + kinds[: round_ % len(kinds)]  # rotate who goes first
                for kind in order:
                    for name, value in zip(names, by_kind[kind](folder), strict=True):
                        samples[name][kind].append(value)
    return {name: {kind: statistics.median(values) for kind, values in got.items()} for name, got in samples.items()}


def rows(profile: Profile) -> list[Row]:
    """The import probe in the quick profile (5 rounds); every probe in the default one (7 rounds)."""
    probes = ["import"] if profile.quick else list(PROBES)
    rounds = 5 if profile.quick else 7
    got = []
    for name, values in measure(rounds, probes).items():
        theirs = values.get("baseline")
        got.append(
            Row(
                f"pytest plugin: {name}",
                values["rrkit"] * 1000,
                None if theirs is None else theirs * 1000,
                "ms",
                target=at_most(LIMIT) if name == "import plugin (after pytest)" else None,
                baseline_name="pytest-recording" if theirs is not None else "pytest-recording NOT INSTALLED",
                note=f"neither: {values['neither'] * 1000:.1f} ms"
                + ("; issue 11's target" if name.startswith("import plugin") else ""),
                bench=BENCH,
            )
        )
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=None, help="rounds of samples (default 15)")
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    parser.add_argument("--table", action="store_true", help="print the rows of `python -m benchmarks` instead")
    args = parser.parse_args()
    if args.table:
        print(table(rows(QUICK if args.quick else DEFAULT)))
        return
    rounds = args.rounds or (5 if args.quick else 15)
    baseline = importlib.util.find_spec("pytest_recording") is not None
    if not baseline:
        print(
            "pytest-recording is NOT installed: the baseline columns are SKIPPED (pip install pytest-recording); "
            "rrkit is measured against neither plugin only\n"
        )
    median = measure(rounds, list(PROBES))

    print(f"rrkit's pytest plugin vs pytest-recording's: medians of {rounds} rounds, fresh subprocesses, interleaved")
    print(f"{'measure':<34} {'rrkit':>10} {'baseline':>10} {'ratio':>6}   {'neither':>10}")
    for name, values in median.items():
        theirs = values.get("baseline")
        _row(name, values["rrkit"], theirs, values["neither"])
        if name.startswith("pytest"):  # what the plugin adds to start-up: the difference to neither
            added = None if theirs is None else theirs - values["neither"]
            _row("  added over neither", values["rrkit"] - values["neither"], added, None)
    version = _version("pytest-recording") if baseline else "SKIPPED: not installed"
    print(
        f"(baseline = pytest-recording {version}; neither = no plugin imported / both plugins off; "
        "'added over neither' is a difference of two start-ups of about the same size: noise of a few ms)"
    )
    if baseline:
        first = median["import plugin (after pytest)"]
        ratio = first["rrkit"] / first["baseline"]
        verdict = "within" if ratio <= LIMIT else "ABOVE"
        print(f"acceptance (import of the plugin after pytest): {ratio:.2f}x, {verdict} {LIMIT}x of pytest-recording's")


def _row(label: str, ours: float, theirs: float | None, neither: float | None) -> None:
    if theirs is None:
        ratio = "-"
    elif theirs <= 0 or ours <= 0:
        ratio = "n/a"  # below noise: a plugin adds nothing measurable
    else:
        ratio = f"{ours / theirs:.2f}"
    print(f"{label:<34} {_ms(ours)} {_ms(theirs)} {ratio:>6}   {_ms(neither)}")


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1000:>7.2f} ms" if seconds is not None else f"{'-':>10}"


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


if __name__ == "__main__":
    main()

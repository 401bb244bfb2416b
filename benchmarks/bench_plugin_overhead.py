"""Per-test overhead of the pytest fixtures: 200 tests with `rrkit_server`, with `rrkit_shared_server`,
and without rrkit, each run in its own pytest process. Prints seconds and the per-test overhead.

Run: python benchmarks/bench_plugin_overhead.py [--tests 200]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BODY = """
import httpx
import pytest
from rrkit.script import reply

client = httpx.Client()  # one client for all tests: a new httpx client costs tens of ms (TLS context)

@pytest.mark.parametrize("n", range({count}))
def test_case({fixture}n):
{body}
"""
WITH_SERVER = """    {fixture_name}.add(reply("hi"))
    client.post({fixture_name}.http_url + "/responses", json={{"model": "m", "input": "hi"}})
"""
WITHOUT = """    assert n >= 0
"""
FIXTURE_ONLY = """    assert {fixture_name}.http_url
"""


def run(folder: Path, name: str, count: int, fixture: str | None, template: str = WITH_SERVER) -> float:
    body = template.format(fixture_name=fixture) if fixture else WITHOUT
    (folder / f"test_{name}.py").write_text(
        BODY.format(count=count, fixture=f"{fixture}, " if fixture else "", body=body)
    )
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"test_{name}.py"],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{name} failed:\n{result.stdout[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", type=int, default=200)
    count = parser.parse_args().tests
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        baseline = run(folder, "baseline", count, None)
        fixture_only = run(folder, "fixture_only", count, "rrkit_server", FIXTURE_ONLY)
        per_test = run(folder, "per_test", count, "rrkit_server")
        shared = run(folder, "shared", count, "rrkit_shared_server")
    print(f"{count} tests in one pytest process each run (times include pytest start-up)")
    print(f"  without rrkit:              {baseline:6.2f} s")
    print(
        f"  rrkit_server, no request:   {fixture_only:6.2f} s   "
        f"overhead {(fixture_only - baseline) / count * 1000:6.1f} ms/test (start + stop)"
    )
    for label, seconds in (("rrkit_server + 1 request:  ", per_test), ("shared server + 1 request: ", shared)):
        print(f"  {label} {seconds:6.2f} s   overhead {(seconds - baseline) / count * 1000:6.1f} ms/test")
    print(f"  ratio per-test / shared:    {per_test / shared:6.2f}")


if __name__ == "__main__":
    main()

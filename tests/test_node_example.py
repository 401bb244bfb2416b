"""The Node test of docs/guide/other-languages.md (node's own test runner driving `rrkit serve` through its ready
file, admin API and journal) passes as written; skipped without node."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .docs_text import code_after


def test_the_documented_node_test_passes_with_node_s_own_test_runner(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found: the documented Node test needs Node 20 or newer")
    test = tmp_path / "rrkit.test.mjs"
    test.write_text(code_after("# Clients that are not Python", "javascript"), encoding="utf-8")
    env = {**os.environ, "RRKIT": f"{sys.executable} -m rrkit"}
    done = subprocess.run([node, "--test", str(test)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# pass 1" in done.stdout and "# fail 0" in done.stdout

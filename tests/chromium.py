"""Headless Chromium for the tests of rrkit's HTML pages: where it is, markup that must never run, and the DOM a
page renders to (the browser's whole process group is killed afterwards)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
HOSTILE = "<script>document.body.setAttribute('data-x', 'p' + 'wned')</script>"
"""Untrusted text a page must show as text: run, it would leave `pwned` in the DOM."""

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium at /usr/bin/chromium (apt-get install chromium)"
)


def dump_dom(page: Path, timeout: float = 60.0) -> str:
    """The DOM headless Chromium renders `page` to (the probe's flags: no network, a fresh profile)."""
    assert CHROMIUM is not None
    profile = tempfile.mkdtemp(prefix="rrkit-chromium-")
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--dump-dom", page.as_uri()]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True
    )
    try:
        dom, _ = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # its renderer and zygote children too
        process.wait()
        shutil.rmtree(profile, ignore_errors=True)
    assert process.returncode == 0 or dom, "chromium printed no DOM"
    return dom

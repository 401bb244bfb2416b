"""Headless Chromium for the tests of rrkit's HTML pages: where it is, markup that must never run, and the DOM a
page renders to (the browser's whole process group is killed afterwards)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from rrkit.drive.process import exited_unreaped, stop_group

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
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.append(process.stdout.read() if process.stdout else ""))
    reader.start()
    try:
        exited_unreaped(process, timeout)  # unreaped: its group's id is still its own when the group is stopped
    finally:
        stop_group(process)  # its renderer and zygote children too
        process.wait()
        reader.join(timeout)
        shutil.rmtree(profile, ignore_errors=True)
    dom = "".join(output)
    assert process.returncode == 0 or dom, "chromium printed no DOM"
    return dom

"""The `@copilotkit/aimock` npm server (pinned in .ci/run), started with its own documented command
(`llmock -h HOST -p PORT -f FIXTURES`) and a one-line fixture: a Responses server nobody here wrote, for
`rrkit conform --server` (its test, and docs/make_conformance.py)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

AIMOCK_VERSION = "1.43.0"
AIMOCK = Path(__file__).resolve().parents[2] / ".ci" / "node-aimock" / "node_modules" / "@copilotkit" / "aimock"
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


class NotInstalled(Exception):
    """node or the package is missing; the message says how to install it."""


def missing() -> str | None:
    """Why aimock cannot be started here, or None."""
    if shutil.which("node") is None:
        return "node not found: the aimock server needs it"
    if not (AIMOCK / "package.json").exists():
        return (
            f"@copilotkit/aimock is not installed: npm install --prefix {AIMOCK.parents[2]} "
            f"@copilotkit/aimock@{AIMOCK_VERSION}"
        )
    return None


@contextlib.contextmanager
def aimock_server() -> Iterator[str]:
    """A running aimock's base URL (`http://127.0.0.1:PORT/v1`), stopped on exit; NotInstalled without it."""
    why = missing()
    if why is not None:
        raise NotInstalled(why)
    version = json.loads((AIMOCK / "package.json").read_text(encoding="utf-8"))["version"]
    if version != AIMOCK_VERSION:
        raise NotInstalled(f"@copilotkit/aimock {version} is installed, {AIMOCK_VERSION} is the one pinned")
    with tempfile.TemporaryDirectory() as folder:
        fixtures = Path(folder) / "fixtures.json"
        fixtures.write_text(json.dumps({"fixtures": [{"match": {}, "response": {"content": "Hello!"}}]}))
        node = shutil.which("node") or "node"
        command = [node, str(AIMOCK / "dist" / "cli.js"), "-h", "127.0.0.1", "-p", "0", "-f", str(fixtures)]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert process.stdout is not None
        try:
            lines: list[str] = []
            for line in process.stdout:
                lines.append(line)
                if found := LISTENING.search(line):
                    threading.Thread(target=process.stdout.read, daemon=True).start()  # keep its pipe drained
                    yield found.group(1) + "/v1"
                    return
            raise RuntimeError(f"aimock exited before listening: {''.join(lines)}")
        finally:
            process.terminate()
            process.wait(timeout=60)

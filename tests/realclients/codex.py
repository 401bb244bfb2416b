"""The real Codex CLI (the pinned version of `rrkit.differential.codex`) as a test client: skip without it,
write a CODEX_HOME for a base URL, run `codex exec` in a given directory."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from rrkit.differential.codex import CODEX_VERSION, INSTALL_HINT, CodexRun, config_toml, exec_codex
from rrkit.differential.codex import find_codex as _find
from rrkit.differential.settings import Budgets
from rrkit.protocol.exceptions import CodexNotFound

__all__ = [
    "CODEX_VERSION",
    "NEWEST",
    "CodexRun",
    "codex_of",
    "find_codex",
    "require_codex",
    "run_codex",
    "write_codex_home",
]

NEWEST = "0.171.0"
"""The newest Codex release, judged beside the pinned one (installed by .ci/run into .ci/node-0.171.0)."""
NEWEST_BIN = Path(__file__).resolve().parents[2] / ".ci" / f"node-{NEWEST}" / "node_modules" / ".bin" / "codex"

RECORDING_BUDGETS = Budgets(request_max_retries=0, stream_max_retries=1, idle_timeout=30.0)
"""One retry, no request-level retries, and a stream idle timeout long enough for a slow machine."""


@functools.cache
def find_codex() -> str | None:
    """The pinned Codex binary ($RRKIT_CODEX_BIN, `.ci/node`'s, or `codex` on PATH), or None."""
    try:
        return _find()
    except CodexNotFound:
        return None


def require_codex() -> str:
    """The Codex binary, or skip the test saying what is missing."""
    binary = find_codex()
    if binary is not None:
        return binary
    if shutil.which("node") is None:  # the npm package's `codex` is a node script
        pytest.skip("node/npm not found")
    pytest.skip(f"Codex CLI {CODEX_VERSION} not installed: run `{INSTALL_HINT}`")


def codex_of(version: str) -> str:
    """The binary of `version` ("pinned" or NEWEST), or skip the test saying how to install it."""
    if version != NEWEST:
        return require_codex()
    try:
        return _find(str(NEWEST_BIN) if NEWEST_BIN.exists() else None, version=NEWEST)
    except CodexNotFound as error:
        pytest.skip(f"{error} (npm install --prefix .ci/node-{NEWEST} @openai/codex@{NEWEST})")


def write_codex_home(home: Path, base_url: str, *, websockets: bool) -> Path:
    """A CODEX_HOME whose config points Codex at `base_url` (…/v1)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        config_toml(base_url, websockets=websockets, budgets=RECORDING_BUDGETS), encoding="utf-8"
    )
    return home


def run_codex(
    binary: str,
    *,
    home: Path,
    workdir: Path,
    prompt: str = "say hi",
    timeout: float = 60.0,
    extra_args: tuple[str, ...] = (),
) -> CodexRun:
    """`codex exec` one turn in `workdir` with this CODEX_HOME; a run that times out fails the test."""
    run = exec_codex(binary, home, workdir, prompt, timeout, extra_args)
    if run.timed_out:
        output = f"--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}"
        raise AssertionError(f"codex exec did not finish within {timeout:g} s\n{output}")
    return run

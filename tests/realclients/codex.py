"""The real Codex CLI (one pinned version) as a test client: find it, write its CODEX_HOME, run `codex exec`."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

CODEX_VERSION = "0.169.0"
REPO = Path(__file__).resolve().parents[2]
LOCAL_CODEX = REPO / ".ci" / "node" / "node_modules" / ".bin" / "codex"
BIN_ENV = "RRKIT_CODEX_BIN"
API_KEY_ENV = "RRKIT_TEST_KEY"
INSTALL_HINT = f"npm install --prefix .ci/node @openai/codex@{CODEX_VERSION}"

# Inherited variables that would point Codex elsewhere than the CODEX_HOME written here.
_DROPPED_ENV_PREFIXES = ("CODEX_", "OPENAI_")


class CodexRun(NamedTuple):
    """What `run_codex` returns; unpacks as (exit code, stdout, stderr)."""

    returncode: int
    stdout: str
    stderr: str


def _version(binary: str) -> str | None:
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\b(\d+\.\d+\.\d+\S*)", done.stdout)
    return found.group(1) if done.returncode == 0 and found else None


def _candidates() -> list[str]:
    found = [os.environ.get(BIN_ENV, ""), str(LOCAL_CODEX) if LOCAL_CODEX.exists() else "", shutil.which("codex") or ""]
    return list(dict.fromkeys(candidate for candidate in found if candidate))


@functools.cache
def find_codex() -> str | None:
    """The first of $RRKIT_CODEX_BIN, .ci/node's codex and `codex` on PATH that is Codex CLI 0.169.0."""
    for candidate in _candidates():
        if _version(candidate) == CODEX_VERSION:
            return candidate
    return None


def require_codex() -> str:
    """The Codex binary, or skip the test saying what is missing."""
    binary = find_codex()
    if binary is not None:
        return binary
    if shutil.which("node") is None:  # the npm package's `codex` is a node script
        pytest.skip("node/npm not found")
    pytest.skip(f"Codex CLI {CODEX_VERSION} not installed: run `{INSTALL_HINT}`")


def write_codex_home(home: Path, base_url: str, *, websockets: bool) -> Path:
    """A CODEX_HOME whose config points Codex at `base_url` (…/v1) with one retry and no request-level retries."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"""model = "gpt-test"
model_provider = "rrkit"

[model_providers.rrkit]
name = "rrkit"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{API_KEY_ENV}"
supports_websockets = {"true" if websockets else "false"}
request_max_retries = 0
stream_max_retries = 1
""",
        encoding="utf-8",
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
    """`codex exec` one turn in `workdir` with this CODEX_HOME; the whole process group is killed on timeout."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(_DROPPED_ENV_PREFIXES)}
    # HOME = CODEX_HOME keeps the user's shell profile (sourced by Codex's login shells) out of tool output.
    env.update({"CODEX_HOME": str(home), "HOME": str(home), API_KEY_ENV: "sk-rrkit-test"})
    command = [
        binary,
        "exec",
        "--skip-git-repo-check",
        "--ephemeral",
        "-s",
        "read-only",
        # the plugins feature runs `git ls-remote https://github.com/openai/plugins` at start-up
        "--disable",
        "plugins",
        *extra_args,
        prompt,
    ]
    process = subprocess.Popen(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,  # with an open stdin pipe, `codex exec` waits to read more prompt from it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        raise AssertionError(
            f"codex exec did not finish within {timeout:g} s\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        ) from None
    finally:
        _kill_group(process)  # also whatever Codex left running in its group (shell sessions)
        process.wait()
    return CodexRun(process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[str]) -> None:
    # the npm entry point is a node script that runs the native binary as its child
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)

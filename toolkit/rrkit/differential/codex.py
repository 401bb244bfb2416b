"""The real Codex CLI (one pinned version) as a client of the fake server: find it, configure it, run a turn."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..drive.process import run_process
from ..protocol.exceptions import CodexNotFound
from .settings import DEFAULT_BUDGETS, Budgets

CODEX_VERSION = "0.169.0"
"""The pin: the version the observation table in tests/realclients was checked against."""
INSTALL_HINT = f"npm install --prefix .ci/node @openai/codex@{CODEX_VERSION}"
BIN_ENV = "RRKIT_CODEX_BIN"
API_KEY_ENV = "RRKIT_TEST_KEY"
_REPO = Path(__file__).resolve().parents[3]
_LOCAL_CODEX = _REPO / ".ci" / "node" / "node_modules" / ".bin" / "codex"
_DROPPED_ENV_PREFIXES = ("CODEX_", "OPENAI_")  # would point Codex elsewhere than the CODEX_HOME written here


@dataclass(frozen=True, slots=True)
class CodexRun:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def errors(self) -> list[str]:
        """The `ERROR: ...` lines Codex printed (each failure is printed twice: once here)."""
        return list(dict.fromkeys(line for line in self.stderr.splitlines() if line.startswith("ERROR:")))


def codex_version(binary: str) -> str | None:
    try:
        done = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\b(\d+\.\d+\.\d+\S*)", done.stdout)
    return found.group(1) if done.returncode == 0 and found else None


def find_codex(explicit: str | None = None, *, version: str = CODEX_VERSION) -> str:
    """`explicit`, else the first of $RRKIT_CODEX_BIN, `.ci/node`'s codex and `codex` on PATH that is `version`."""
    if explicit:
        found = codex_version(explicit)
        if found != version:
            what = "cannot be run" if found is None else f"is version {found}"
            raise CodexNotFound(f"{explicit} {what}, not Codex CLI {version}")
        return explicit
    local = str(_LOCAL_CODEX) if _LOCAL_CODEX.exists() else ""
    for candidate in dict.fromkeys(c for c in (os.environ.get(BIN_ENV, ""), local, shutil.which("codex") or "") if c):
        if codex_version(candidate) == version:
            return candidate
    node = "" if shutil.which("node") else " (node is not installed either)"
    raise CodexNotFound(f"Codex CLI {version} not found{node}; install it with `{INSTALL_HINT}`")


def config_toml(base_url: str, *, websockets: bool, budgets: Budgets) -> str:
    retries = "".join(
        f"{name} = {value}\n"
        for name, value in (
            ("request_max_retries", budgets.request_max_retries),
            ("stream_max_retries", budgets.stream_max_retries),
        )
        if value is not None
    )
    return f"""model = "gpt-test"
model_provider = "rrkit"

[model_providers.rrkit]
name = "rrkit"
base_url = "{base_url}"
wire_api = "responses"
env_key = "{API_KEY_ENV}"
supports_websockets = {"true" if websockets else "false"}
stream_idle_timeout_ms = {round(budgets.idle_timeout * 1000)}
{retries}"""


def run_codex(
    binary: str,
    base_url: str,
    *,
    websockets: bool,
    budgets: Budgets = DEFAULT_BUDGETS,
    prompt: str = "say hi",
    timeout: float = 30.0,
) -> CodexRun:
    """One `codex exec` turn against `base_url` (…/v1), in a fresh empty directory and CODEX_HOME."""
    with tempfile.TemporaryDirectory(prefix="rrkit-codex-") as temp:
        home, workdir = Path(temp) / "home", Path(temp) / "work"
        home.mkdir()
        workdir.mkdir()
        (home / "config.toml").write_text(config_toml(base_url, websockets=websockets, budgets=budgets))
        return exec_codex(binary, home, workdir, prompt, timeout)


def exec_codex(
    binary: str, home: Path, workdir: Path, prompt: str, timeout: float, extra_args: tuple[str, ...] = ()
) -> CodexRun:
    """`codex exec` one turn in `workdir` with the CODEX_HOME `home`; its whole process group is killed at the
    end (or on timeout: then `timed_out`)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(_DROPPED_ENV_PREFIXES)}
    # HOME = CODEX_HOME keeps the user's shell profile (sourced by Codex's login shells) out of the run
    env.update({"CODEX_HOME": str(home), "HOME": str(home), API_KEY_ENV: "sk-rrkit-test"})
    # --disable plugins: that feature runs `git ls-remote https://github.com/...` at start-up
    command = [binary, "exec", "--skip-git-repo-check", "--ephemeral", "-s", "read-only", "--disable", "plugins"]
    end = run_process([*command, *extra_args, prompt], env=env, cwd=workdir, timeout=timeout)
    if end.missing:
        raise CodexNotFound(f"cannot run the Codex CLI at {binary}: {end.stderr}")
    return CodexRun(end.returncode if end.returncode is not None else -9, end.stdout, end.stderr, end.timed_out)

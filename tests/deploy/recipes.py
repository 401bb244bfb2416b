"""The "run it as a service" recipes as the tests read and run them: the container's Dockerfile (its instructions,
its HEALTHCHECK command), its entrypoint, the compose example and the GitHub Action, each run as a plain process on
127.0.0.1 with this virtualenv's `rrkit` on PATH. Docker cannot build images on the machines these tests run on,
so no image is built: the processes are the ones the image and the action would start."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = ROOT / "deploy" / "container"
DOCKERFILE = CONTAINER / "Dockerfile"
ENTRYPOINT = CONTAINER / "entrypoint.sh"
COMPOSE = ROOT / "deploy" / "compose.yaml"
ACTION = ROOT / ".github" / "actions" / "rrkit-serve"
VENV_BIN = Path(sys.executable).parent
"""The `bin` folder of the Python running the tests, which holds its `rrkit`, `python` and the openai SDK's."""

START_BOUND = 60.0
"""Seconds a server may take to write its ready file: ~0.5 s on an idle machine, far above 10 times that."""
STOP_BOUND = 30.0
"""Seconds from SIGTERM to a server's exit (tests/server/test_shutdown.py's CEILING): it takes ~0.1 s."""

needs_sh = pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX sh on PATH to run entrypoint.sh with")
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on PATH to run the action's scripts")


# -- the Dockerfile --------------------------------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """Each instruction of the Dockerfile as (KEYWORD, its arguments), continuation lines joined, comments and the
    parser directive left out."""
    joined = re.sub(r"\\\n(?:[ \t]*#[^\n]*\n)*", " ", DOCKERFILE.read_text(encoding="utf-8"))
    instructions = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def healthcheck_command() -> list[str]:
    """The argv of the HEALTHCHECK's `CMD [...]` (exec form: no shell in between)."""
    (check,) = [rest for keyword, rest in dockerfile_instructions() if keyword == "HEALTHCHECK"]
    argv = json.loads(check.split(" CMD ", 1)[1])
    assert isinstance(argv, list) and all(isinstance(word, str) for word in argv)
    return argv


def run_healthcheck(ready_file: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The image's health check, as Docker runs it in the container: its argv, with the container's environment
    (here `env`, naming the ready file the entrypoint was given)."""
    return subprocess.run(
        healthcheck_command(),
        env={**env, "RRKIT_READY_FILE": str(ready_file)},
        capture_output=True,
        text=True,
        timeout=START_BOUND,
    )


# -- the compose file and the action ---------------------------------------------------------------------------------


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def compose_client_program() -> str:
    """The Python program the compose example's client runs (the here-document of its `sh -c` command)."""
    command = compose()["services"]["client"]["command"]
    assert command[:2] == ["sh", "-c"]
    match = re.search(r"<<'PY'\n(.*?)\nPY\n", command[2], re.S)
    assert match, command[2]
    return match.group(1) + "\n"


def action() -> dict[str, Any]:
    loaded = yaml.safe_load((ACTION / "action.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def action_step(name: str) -> dict[str, Any]:
    (step,) = [step for step in action()["runs"]["steps"] if step["name"] == name]
    assert isinstance(step, dict)
    return step


def step_env(name: str, **given: str) -> dict[str, str]:
    """The `env:` of the action's step `name`, its `${{ inputs.X }}` expressions given the values `given` (an
    input's name with `_` for `-`) or else the input's default, as GitHub Actions fills them."""
    inputs = {key: str(spec.get("default", "")) for key, spec in action()["inputs"].items()}
    inputs.update({key.replace("_", "-"): value for key, value in given.items()})
    unknown = set(inputs) - set(action()["inputs"])
    assert not unknown, f"not inputs of the action: {unknown}"
    env = action_step(name).get("env", {})
    return {
        key: re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], value)
        for key, value in env.items()
    }


def github_file(path: Path) -> dict[str, str]:
    """A `$GITHUB_ENV` or `$GITHUB_OUTPUT` file of NAME=VALUE lines."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines)


# -- processes -------------------------------------------------------------------------------------------------------


def base_env(**extra: str) -> dict[str, str]:
    """This environment with the virtualenv's bin first on PATH, none of the caller's rrkit or GitHub settings
    (a CI run of these tests has its own GITHUB_ENV), and `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("RRKIT_", "GITHUB_", "RUNNER_", "OPENAI_"))
    }
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    return {**env, **extra}


def free_port() -> int:
    """A port nothing listens on now (bound to 0 and let go): the entrypoint takes a fixed port, as in the image."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_ready_file(path: Path, process: subprocess.Popen[str] | None = None) -> dict[str, Any]:
    """The ready file's JSON once written (atomically, so never half of it); an error, with what the process said,
    when it exits first or START_BOUND passes."""
    deadline = time.monotonic() + START_BOUND
    while not path.exists():
        if process is not None and process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"exited {process.returncode} before writing {path}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no ready file {path} after {START_BOUND} s")
        time.sleep(0.05)
    facts = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(facts, dict)
    return facts


def running(pid: int) -> bool:
    """Whether process `pid` runs: it exists and is no zombie (a process adopted by an init that never reaps it,
    as in some containers, stays one after its exit)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def kill_if_running(pid: int) -> None:
    if running(pid):
        os.kill(pid, signal.SIGKILL)


# -- the fleet behind HAProxy ----------------------------------------------------------------------------------------

HAPROXY = ROOT / "deploy" / "haproxy"
KUBERNETES = ROOT / "deploy" / "kubernetes"


def fleet_module() -> Any:
    """deploy/haproxy/fleet.py, the launcher of N `rrkit serve` behind HAProxy (a script, not a package module),
    loaded once."""
    import importlib.util

    name = "rrkit_deploy_fleet"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HAPROXY / "fleet.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


needs_haproxy = pytest.mark.skipif(
    fleet_module().find_haproxy() is None,
    reason="no haproxy on PATH nor at /usr/sbin/haproxy (.ci/run installs Debian's package: apt-get install haproxy)",
)

"""The GitHub Action `.github/actions/rrkit-serve`, its steps run as GitHub Actions runs them but as plain processes:
`start.sh` and `stop.sh` under bash with the environment the action's steps give them (its inputs filled in),
`GITHUB_ENV`, `GITHUB_OUTPUT` and `RUNNER_TEMP` in the test's folder, and the virtualenv's `rrkit` on PATH."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .recipes import (
    ACTION,
    START_BOUND,
    STOP_BOUND,
    base_env,
    github_file,
    kill_if_running,
    needs_bash,
    running,
    step_env,
)

pytestmark = needs_bash


@dataclass
class Job:
    """What a job's steps share: the runner's folders and files, and the environment GITHUB_ENV builds up."""

    folder: Path

    @property
    def github_env(self) -> Path:
        return self.folder / "github_env"

    @property
    def github_output(self) -> Path:
        return self.folder / "github_output"

    def env(self, step: str, /, path: str | None = None, **inputs: str) -> dict[str, str]:
        runner = {
            "GITHUB_ENV": str(self.github_env),
            "GITHUB_OUTPUT": str(self.github_output),
            "GITHUB_ACTION_PATH": str(ACTION),
            "RUNNER_TEMP": str(self.folder),
        }
        env = base_env(**github_file(self.github_env), **runner, **step_env(step, **inputs))
        if path is not None:
            env["PATH"] = path + ":" + env["PATH"]
        return env

    def run(self, file: str, step: str, /, path: str | None = None, **inputs: str) -> subprocess.CompletedProcess[str]:
        """The step's `bash "$GITHUB_ACTION_PATH/FILE"`, as a process of its own, `path` first on PATH."""
        return subprocess.run(
            ["bash", str(ACTION / file)],
            env=self.env(step, path, **inputs),
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=START_BOUND + STOP_BOUND,
        )

    def started_pids(self) -> list[int]:
        pids = [int(github_file(self.github_env).get("RRKIT_PID", "0"))]
        pids += [int(path.read_text()) for path in self.folder.glob("rrkit-serve.*/launched-pid") if path.read_text()]
        return [pid for pid in pids if pid]


@pytest.fixture
def job(tmp_path: Path) -> Iterator[Job]:
    """A job's folders; a server its steps left running is killed at the test's end."""
    started = Job(tmp_path)
    yield started
    for pid in started.started_pids():
        kill_if_running(pid)


def test_start_sh_exports_urls_that_answer_then_stop_sh_stops_the_server_with_status_0(job: Job) -> None:
    started = job.run("start.sh", "Start rrkit serve", script="fixture:text", args="--quiet")  # port 0: a free one
    assert started.returncode == 0, started.stderr + started.stdout
    env, outputs = github_file(job.github_env), github_file(job.github_output)
    port = outputs["port"]
    assert env["RRKIT_HTTP_URL"] == env["OPENAI_BASE_URL"] == outputs["http_url"] == f"http://127.0.0.1:{port}/v1"
    assert env["RRKIT_WS_URL"] == outputs["ws_url"] == f"ws://127.0.0.1:{port}/v1"
    assert env["RRKIT_ADMIN_URL"] == outputs["admin_url"] == f"http://127.0.0.1:{port}/__rrkit"
    assert env["RRKIT_PID"] == outputs["pid"] and running(int(env["RRKIT_PID"]))
    with httpx.Client(timeout=START_BOUND, trust_env=False) as client:
        health = client.get(env["RRKIT_ADMIN_URL"] + "/health")
        assert health.status_code == 200 and health.json()["source"]["name"] == "text"
        answer = client.post(env["OPENAI_BASE_URL"] + "/responses", json={"model": "gpt-5", "input": "hi"})
        assert answer.status_code == 200 and answer.json()["status"] == "completed"

    stopped = job.run("stop.sh", "Stop rrkit serve", stop="true")  # a later step: the job's env from GITHUB_ENV
    assert stopped.returncode == 0, stopped.stderr + stopped.stdout
    assert "rrkit: stopped" in stopped.stdout  # rrkit's log, shown
    assert not running(int(env["RRKIT_PID"]))
    assert not Path(env["RRKIT_READY_FILE"]).exists()  # rrkit removes it when it exits cleanly


def test_start_sh_fails_at_once_showing_rrkit_s_log_when_rrkit_exits_before_listening(job: Job) -> None:
    started = job.run("start.sh", "Start rrkit serve", script="no-such-script.yaml", timeout="600")
    assert started.returncode == 1  # at once, not after the 600 s the timeout allows
    assert "no-such-script.yaml" in started.stdout  # rrkit's error, from its log
    assert "rrkit exited with status 2 before it listened" in started.stderr
    assert github_file(job.github_env) == {} and github_file(job.github_output) == {}


FAKE_RRKIT = """\
#!/bin/sh
echo "a server that never listens"
exec sleep 600
"""


def test_start_sh_stops_a_server_that_does_not_listen_in_time_and_shows_its_log(job: Job) -> None:
    fake = job.folder / "bin"
    fake.mkdir()
    (fake / "rrkit").write_text(FAKE_RRKIT)
    (fake / "rrkit").chmod(0o755)
    started = job.run("start.sh", "Start rrkit serve", path=str(fake), timeout="1")
    assert started.returncode == 1
    assert "rrkit did not listen within 1 s (stopped)" in started.stderr
    assert "a server that never listens" in started.stdout
    (launched,) = job.started_pids()
    assert not running(launched)


def test_stop_sh_fails_showing_the_log_when_the_server_had_exited_before_the_stop(job: Job) -> None:
    started = job.run("start.sh", "Start rrkit serve")
    assert started.returncode == 0, started.stderr
    env = github_file(job.github_env)
    pid = int(env["RRKIT_PID"])
    kill_if_running(pid)  # the server dies during the job
    status = Path(env["RRKIT_SERVE_DIR"]) / "exit-status"
    deadline = time.monotonic() + STOP_BOUND
    while not status.exists() and time.monotonic() < deadline:  # as start.sh's subshell sees it die
        time.sleep(0.05)
    stopped = job.run("stop.sh", "Stop rrkit serve", stop="true")
    assert stopped.returncode == 1
    assert f"rrkit (pid {pid}) had exited before the stop, with status 137" in stopped.stderr  # 128 + SIGKILL
    assert "Press Ctrl-C to stop." in stopped.stdout  # the log


def test_the_stop_step_without_a_started_server_fails_saying_so(job: Job) -> None:
    stopped = job.run("stop.sh", "Stop rrkit serve", stop="true")
    assert stopped.returncode == 1
    assert "no server to stop" in stopped.stderr

"""The container recipe, run as the image would run it but as plain processes (Docker cannot build images on the
machines these tests run on): `deploy/container/entrypoint.sh` with the virtualenv's `rrkit` on PATH, on a free
port of 127.0.0.1, and the Dockerfile's own HEALTHCHECK command against it. The compose example's client program
is run against it too."""

from __future__ import annotations

import json
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from rrkit.script.default_reply import TEXT

from ..rrkit_process import STARTED
from .recipes import (
    ENTRYPOINT,
    START_BOUND,
    STOP_BOUND,
    base_env,
    compose,
    compose_client_program,
    free_port,
    needs_sh,
    run_healthcheck,
    wait_for_ready_file,
)

pytestmark = needs_sh

SCRIPT = """\
name: from-the-container
default:
  output: [{text: "Answered by the script RRKIT_SCRIPT named."}]
"""


class Entrypoint:
    """entrypoint.sh running as a plain process: its environment (the container's), ready file and port."""

    def __init__(self, tmp_path: Path, *args: str, **settings: str) -> None:
        self.ready = tmp_path / "rrkit.ready"
        self.port = free_port()
        # on loopback: these tests reach nothing beyond it (the image binds 0.0.0.0, the default RRKIT_HOST)
        self.env = base_env(
            RRKIT_HOST="127.0.0.1", RRKIT_PORT=str(self.port), RRKIT_READY_FILE=str(self.ready), **settings
        )
        self.process = subprocess.Popen(
            ["sh", str(ENTRYPOINT), *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        STARTED.append(self.process)  # killed at the test's end if still running (tests/conftest.py)
        self.facts = wait_for_ready_file(self.ready, self.process)

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def terminate(self) -> tuple[int, str, str]:
        """SIGTERM, as `docker stop` sends it; the exit status and what it printed, once it exited."""
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=STOP_BOUND)
        return self.process.returncode, out, err


@pytest.fixture
def entrypoint(tmp_path: Path) -> Iterator[Entrypoint]:
    running = Entrypoint(tmp_path, RRKIT_ADMIN_TOKEN="token-of-the-deployment")
    yield running
    if running.process.poll() is None:
        running.terminate()


def test_the_entrypoint_execs_rrkit_serve_on_rrkit_port_so_the_process_the_container_signals_is_rrkit(
    entrypoint: Entrypoint,
) -> None:
    assert entrypoint.facts["pid"] == entrypoint.process.pid  # exec: no shell left between the signal and rrkit
    assert entrypoint.facts["port"] == entrypoint.port
    assert entrypoint.facts["http_url"] == entrypoint.http_url


def test_the_image_healthcheck_passes_against_the_entrypoint_with_the_admin_token_from_the_ready_file(
    entrypoint: Entrypoint,
) -> None:
    """The token is in the server's environment only: the check finds it in the ready file, as it finds the token
    rrkit makes up when bound to 0.0.0.0 without one (the image's default)."""
    health_env = {key: value for key, value in entrypoint.env.items() if key != "RRKIT_ADMIN_TOKEN"}
    checked = run_healthcheck(entrypoint.ready, health_env)
    assert checked.returncode == 0, checked.stderr
    assert entrypoint.facts["admin_token"] == "token-of-the-deployment"
    assert stat.S_IMODE(entrypoint.ready.stat().st_mode) == 0o600
    with httpx.Client(timeout=START_BOUND, trust_env=False) as client:
        without = client.get(f"http://127.0.0.1:{entrypoint.port}/__rrkit/health")
        assert without.status_code == 401  # the check passed because it sent the token
        health = client.get(
            f"http://127.0.0.1:{entrypoint.port}/__rrkit/health",
            headers={"authorization": "Bearer token-of-the-deployment"},
        )
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_the_image_healthcheck_fails_before_the_server_is_ready_and_once_it_is_gone(tmp_path: Path) -> None:
    ready = tmp_path / "rrkit.ready"
    assert run_healthcheck(ready, base_env()).returncode != 0  # no ready file yet
    port = free_port()  # nothing listens there
    ready.write_text(json.dumps({"port": port, "http_url": f"http://127.0.0.1:{port}/v1"}))
    assert run_healthcheck(ready, base_env()).returncode != 0


def test_sigterm_stops_the_entrypoint_s_rrkit_promptly_with_status_0_and_removes_the_ready_file(
    entrypoint: Entrypoint,
) -> None:
    answered = httpx.post(entrypoint.http_url + "/responses", json={"model": "gpt-5", "input": "hi"}, trust_env=False)
    assert answered.status_code == 200
    status, out, err = entrypoint.terminate()  # within STOP_BOUND, or communicate() raises
    assert status == 0, err
    assert "rrkit: stopped" in out and "Traceback" not in err
    assert not entrypoint.ready.exists()


def test_the_entrypoint_passes_rrkit_script_rrkit_args_and_its_arguments_to_rrkit_serve(tmp_path: Path) -> None:
    """RRKIT_SCRIPT becomes --script; RRKIT_ARGS and the container's arguments (compose `command:`) are more
    options, here --keep and --journal from the environment and --quiet as an argument. An openai SDK client gets
    the script's answer."""
    script, journal = tmp_path / "replies.yaml", tmp_path / "exchanges.jsonl"
    script.write_text(SCRIPT, encoding="utf-8")
    served = Entrypoint(tmp_path, "--quiet", RRKIT_SCRIPT=str(script), RRKIT_ARGS=f"--keep 7  --journal {journal}")
    client = openai.OpenAI(
        base_url=served.http_url,
        api_key="sk-any",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(trust_env=False, timeout=START_BOUND),
    )
    response = client.responses.create(model="gpt-5", input="Who answers?")
    assert response.output_text == "Answered by the script RRKIT_SCRIPT named."
    with httpx.Client(timeout=START_BOUND, trust_env=False) as http:
        health = http.get(served.facts["admin_url"] + "/health").json()
    assert health["source"]["name"] == "from-the-container" and health["keep"] == 7
    status, out, err = served.terminate()
    assert status == 0, err
    assert [json.loads(line)["model"] for line in journal.read_text().splitlines()] == ["gpt-5"]
    assert "gpt-5" not in out  # --quiet: no line per exchange


def test_the_compose_client_program_gets_its_answer_from_the_entrypoint_s_server(entrypoint: Entrypoint) -> None:
    """The client service's program, with its environment but the URL of this machine's server for
    http://rrkit:8080/v1 (the service's name, which resolves only inside compose's network)."""
    client_env = compose()["services"]["client"]["environment"]
    assert client_env["OPENAI_BASE_URL"] == "http://rrkit:8080/v1"
    env = base_env(**{**client_env, "OPENAI_BASE_URL": entrypoint.http_url})
    ran = subprocess.run(
        [sys.executable, "-"],
        input=compose_client_program(),
        env=env,
        capture_output=True,
        text=True,
        timeout=START_BOUND,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"rrkit answered: {TEXT}\n"


# -- bound to every interface, as in the image -----------------------------------------------------------------------


def _namespace_command() -> list[str] | None:
    """`unshare` making a network namespace of its own whose loopback is up, if this machine allows one: there,
    binding 0.0.0.0 reaches nothing beyond that loopback."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return None
    for flags in ("-rn", "-n"):
        command = ["unshare", flags, "sh", "-c", 'ip link set lo up && exec "$0" "$@"']
        try:
            tried = subprocess.run([*command, "true"], capture_output=True, timeout=START_BOUND)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if tried.returncode == 0:
            return command
    return None


def test_bound_to_every_interface_without_a_token_rrkit_makes_one_up_that_the_healthcheck_reads(
    tmp_path: Path,
) -> None:
    """The image's defaults exactly (RRKIT_HOST unset: 0.0.0.0, no RRKIT_ADMIN_TOKEN), inside a network namespace
    of its own that has only a loopback interface (`unshare -n`): tests/deploy/namespaced.py starts the entrypoint,
    runs the health check, then stops it, and reports."""
    namespace = _namespace_command()
    if namespace is None:
        pytest.skip("no network namespace of its own here (unshare -n, ip): 0.0.0.0 is bound only inside one")
    ran = subprocess.run(
        [*namespace, sys.executable, "-m", "tests.deploy.namespaced", str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=START_BOUND + STOP_BOUND + START_BOUND,
    )
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    assert report["bound"] == "0.0.0.0" and report["token_made_up"] and report["ready_file_mode"] == 0o600
    assert report["healthcheck"] == 0, report
    assert report["health_without_token"] == 401
    assert report["exit_status"] == 0, report

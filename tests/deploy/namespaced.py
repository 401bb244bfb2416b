"""Run inside a network namespace of its own (tests/deploy/test_container.py, `unshare -n`): the container's
entrypoint with the image's defaults (bound to 0.0.0.0, no admin token given), the image's health check against
it, then SIGTERM. Prints what it saw as JSON. `python -m tests.deploy.namespaced TMP_DIR`."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from .recipes import ENTRYPOINT, STOP_BOUND, base_env, run_healthcheck, wait_for_ready_file


def main(folder: Path) -> dict[str, object]:
    ready = folder / "namespaced.ready"
    env = base_env(RRKIT_PORT="8080", RRKIT_READY_FILE=str(ready))  # RRKIT_HOST and RRKIT_ADMIN_TOKEN unset
    process = subprocess.Popen(
        ["sh", str(ENTRYPOINT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        facts = wait_for_ready_file(ready, process)
        report: dict[str, object] = {
            "bound": facts["http_url"].split("//", 1)[1].split(":", 1)[0],
            "token_made_up": bool(facts.get("admin_token")),
            "ready_file_mode": stat.S_IMODE(ready.stat().st_mode),
            "healthcheck": run_healthcheck(ready, env).returncode,
        }
        with httpx.Client(timeout=STOP_BOUND, trust_env=False) as client:
            report["health_without_token"] = client.get("http://127.0.0.1:8080/__rrkit/health").status_code
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=STOP_BOUND)
        report |= {"exit_status": process.returncode, "stderr": err[-2000:]}
        return report
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))

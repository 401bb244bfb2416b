"""`rrkit serve` launch to first answered request, beside a bare uvicorn + Starlette (+ websockets) server: each
round starts the command in a fresh process on a free port, polls the port until a streaming `POST
/v1/responses` is answered, then stops it; the two are interleaved and the medians printed: the wall time, and
the CPU time the process had used by then (/proc; the steadier figure on a busy machine).

Both run with a warm bytecode cache, as every launch but the first after an install does: the children write
and read `.pyc` files in a temporary PYTHONPYCACHEPREFIX (filled by the warm-up round) even where
PYTHONDONTWRITEBYTECODE is set, which would otherwise compile each of rrkit's modules from source at every
launch but none of the baseline's (its dependencies' `.pyc` files come with their install).

Run: python -m benchmarks.bench_launch [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.common import (
    ROOT,
    Profile,
    Row,
    at_most,
    child_env,
    free_port,
    interleaved,
    median,
    process_cpu,
    run_main,
)

BENCH = "launch"
BODY = {"model": "m", "input": "hi", "stream": True}


def rrkit_command(port: int) -> list[str]:
    script = Path(sys.executable).with_name("rrkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rrkit"]
    return [*command, "serve", "--port", str(port)]


def bare_command(port: int) -> list[str]:
    return [sys.executable, "-m", "benchmarks.servers", "bare-app", str(port)]


def cached_env(cache: Path) -> dict[str, str]:
    """The children's environment, with their bytecode cached in `cache`."""
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def launch_ms(command: list[str], port: int, client: httpx.Client, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) milliseconds from starting `command` to the first complete answer to a request on `port`:
    the CPU time is the process's own, read as the answer arrives."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env
    )
    try:
        while True:
            try:
                answer = client.post(f"http://127.0.0.1:{port}/v1/responses", json=BODY)
                break
            except httpx.TransportError:
                if process.poll() is not None:
                    assert process.stderr is not None
                    raise RuntimeError(f"{command} exited: {process.stderr.read()[-2000:]!r}") from None
                time.sleep(0.002)
        elapsed = (time.perf_counter() - start) * 1000
        cpu = process_cpu(process.pid) * 1000
        if answer.status_code != 200 or "response.completed" not in answer.text:
            raise RuntimeError(f"{command}: unexpected answer {answer.status_code} {answer.text[:300]!r}")
        return elapsed, cpu
    finally:
        process.send_signal(signal.SIGINT)
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rows(profile: Profile) -> list[Row]:
    rounds = profile.rounds if profile.quick else profile.rounds + 2
    with tempfile.TemporaryDirectory(prefix="rrkit-launch-pyc-") as cache, httpx.Client(timeout=10) as client:
        env = cached_env(Path(cache))
        got = interleaved(
            {
                "rrkit": lambda: launch_ms(rrkit_command(port := free_port()), port, client, env),
                "bare": lambda: launch_ms(bare_command(port := free_port()), port, client, env),
            },
            rounds,
        )
    baseline_name = "bare uvicorn + Starlette + websockets"
    note = f"{rounds} rounds, warm bytecode cache"
    return [
        Row(
            "`rrkit serve` launch to first answered request",
            median(wall for wall, _ in got["rrkit"]),
            median(wall for wall, _ in got["bare"]),
            "ms",
            target=at_most(1.3),
            baseline_name=baseline_name,
            note=note,
            bench=BENCH,
        ),
        Row(
            "`rrkit serve` launch: CPU time to first answered request",
            median(cpu for _, cpu in got["rrkit"]),
            median(cpu for _, cpu in got["bare"]),
            "ms CPU",
            baseline_name=baseline_name,
            note=note,
            bench=BENCH,
        ),
    ]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()

"""`rrkit serve` launch to first answered request, beside a bare uvicorn + Starlette (+ websockets) server: each
round starts the command in a fresh process on a free port, polls the port until a streaming `POST
/v1/responses` is answered, then stops it; the two are interleaved and the medians printed.

Run: python -m benchmarks.bench_launch [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from benchmarks.common import ROOT, Profile, Row, at_most, child_env, free_port, interleaved, median, run_main

BENCH = "launch"
BODY = {"model": "m", "input": "hi", "stream": True}


def rrkit_command(port: int) -> list[str]:
    script = Path(sys.executable).with_name("rrkit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "rrkit"]
    return [*command, "serve", "--port", str(port)]


def bare_command(port: int) -> list[str]:
    return [sys.executable, "-m", "benchmarks.servers", "bare-app", str(port)]


def launch_ms(command: list[str], port: int, client: httpx.Client) -> float:
    """Milliseconds from starting `command` to the first complete answer to a request on `port`."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=child_env()
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
        if answer.status_code != 200 or "response.completed" not in answer.text:
            raise RuntimeError(f"{command}: unexpected answer {answer.status_code} {answer.text[:300]!r}")
        return elapsed
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
    with httpx.Client(timeout=10) as client:
        got = interleaved(
            {
                "rrkit": lambda: launch_ms(rrkit_command(port := free_port()), port, client),
                "bare": lambda: launch_ms(bare_command(port := free_port()), port, client),
            },
            rounds,
        )
    return [
        Row(
            "`rrkit serve` launch to first answered request",
            median(got["rrkit"]),
            median(got["bare"]),
            "ms",
            target=at_most(1.3),
            baseline_name="bare uvicorn + Starlette + websockets",
            note=f"{rounds} rounds",
            bench=BENCH,
        )
    ]


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()

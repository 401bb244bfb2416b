"""N `rrkit serve` processes behind HAProxy on one machine, routed by session (haproxy.cfg beside this file).

    python deploy/haproxy/fleet.py --processes 3 --port 8080 -- --quiet --journal /tmp/rrkit-{n}.jsonl

Everything after `--` goes to each `rrkit serve`, `{n}` replaced by the process's number (1..N). Each process
listens on a free loopback port (`--port 0 --ready-file`); HAProxy listens on --host:--port. Ctrl-C or SIGTERM stops
them all. Needs only the standard library, the `rrkit` of this Python and `haproxy` (Debian: apt-get install haproxy).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any, Self

CONFIG = Path(__file__).resolve().with_name("haproxy.cfg")
SERVERS_MARK = "# @servers@"
START_BOUND = 60.0
"""Seconds a process (or the balancer) may take to be ready: ~0.5 s on an idle machine."""


def render(servers: list[tuple[str, str]], template: str | None = None) -> str:
    """haproxy.cfg with a `server NAME ADDRESS` line per (name, address) where its `@servers@` line is."""
    text = CONFIG.read_text(encoding="utf-8") if template is None else template
    if text.count(SERVERS_MARK) != 1:
        raise ValueError(f"{CONFIG}: the configuration needs exactly one {SERVERS_MARK!r} line, where servers go")
    lines = "".join(f"\n    server {name} {address}" for name, address in servers)
    return text.replace(SERVERS_MARK, SERVERS_MARK + lines)


def find_haproxy() -> str | None:
    """haproxy on PATH, or Debian's /usr/sbin/haproxy (not on a user's PATH)."""
    return shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy",) if Path(p).exists()), None)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _wait_for(path: Path, process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    deadline = time.monotonic() + START_BOUND
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"{' '.join(map(str, process.args))} exited {process.returncode}: {log.read_text()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no ready file {path} after {START_BOUND:g} s; its log: {log.read_text()}")
        time.sleep(0.05)
    facts: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return facts


class Fleet:
    """`processes` rrkit servers and the HAProxy in front of them, started on entry, stopped on exit. `url` is the
    balancer's root (append /v1 for the API, /__rrkit for the admin API); `servers` each process's ready file."""

    def __init__(
        self,
        processes: int,
        serve_args: list[str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        haproxy: str | None = None,
        workdir: Path | None = None,
    ) -> None:
        if processes < 1:
            raise ValueError(f"--processes: give 1 or more, got {processes}")
        found = haproxy or find_haproxy()
        if found is None:
            raise FileNotFoundError("no haproxy on PATH (nor /usr/sbin/haproxy): install it (apt-get install haproxy)")
        self.haproxy_binary = found
        self.count, self.serve_args, self.host = processes, list(serve_args or []), host
        self.port = port or free_port(host)
        self._own_dir = None if workdir is not None else tempfile.TemporaryDirectory(prefix="rrkit-fleet-")
        self.workdir = workdir if workdir is not None else Path(self._own_dir.name)  # type: ignore[union-attr]
        self.servers: list[dict[str, Any]] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.balancer: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Self:
        try:
            for n in range(1, self.count + 1):
                self.processes.append(self._serve(n))
            self.servers = [
                _wait_for(self.workdir / f"rrkit-{n}.ready", process, self.workdir / f"rrkit-{n}.log")
                for n, process in enumerate(self.processes, 1)
            ]
            self._balance()
        except BaseException:
            self.stop()
            raise
        return self

    def _serve(self, n: int) -> subprocess.Popen[bytes]:
        args = [arg.replace("{n}", str(n)) for arg in self.serve_args]
        ready = ["--port", "0", "--ready-file", str(self.workdir / f"rrkit-{n}.ready")]
        log = (self.workdir / f"rrkit-{n}.log").open("wb")
        with log:
            return subprocess.Popen(
                [sys.executable, "-m", "rrkit", "serve", *ready, *args], stdout=log, stderr=subprocess.STDOUT
            )

    def _balance(self) -> None:
        config = self.workdir / "haproxy.cfg"
        addresses = [(f"rrkit-{n}", f"127.0.0.1:{facts['port']}") for n, facts in enumerate(self.servers, 1)]
        config.write_text(render(addresses), encoding="utf-8")
        env = {**os.environ, "RRKIT_FLEET_BIND": f"{self.host}:{self.port}"}
        env.setdefault("RRKIT_ADMIN_TOKEN", "")
        log_path = self.workdir / "haproxy.log"
        with log_path.open("wb") as log:
            self.balancer = subprocess.Popen(
                [self.haproxy_binary, "-db", "-f", str(config)], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_BOUND
        while not self._answers():
            if self.balancer.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"haproxy did not answer on {self.url}: {log_path.read_text()}")
            time.sleep(0.05)

    def _answers(self) -> bool:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        token = os.environ.get("RRKIT_ADMIN_TOKEN")
        headers = {"authorization": f"Bearer {token}"} if token else {}
        try:
            with opener.open(urllib.request.Request(self.url + "/__rrkit/health", headers=headers), timeout=5) as r:
                return int(r.status) == 200
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        """SIGTERM to the balancer and every process, then SIGKILL to any still running after 30 s."""
        everyone = [p for p in [self.balancer, *self.processes] if p is not None]
        for process in everyone:
            if process.poll() is None:
                process.terminate()
        for process in everyone:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._own_dir is not None:
            self._own_dir.cleanup()
            self._own_dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="rrkit serve processes (cores)")
    parser.add_argument("--host", default="127.0.0.1", help="address the balancer binds (loopback by default)")
    parser.add_argument("--port", type=int, default=8080, help="port the balancer listens on (0: a free one)")
    parser.add_argument("--haproxy", default=None, help="the haproxy binary (default: haproxy on PATH)")
    parser.add_argument("serve_args", nargs="*", help="after --: options for each rrkit serve ({n}: its number)")
    args = parser.parse_args(argv)
    try:
        fleet = Fleet(args.processes, args.serve_args, host=args.host, port=args.port, haproxy=args.haproxy).start()
    except (OSError, RuntimeError, ValueError) as error:
        print(f"fleet: {error}", file=sys.stderr)
        return 2

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    ports = ", ".join(str(facts["port"]) for facts in fleet.servers)
    print(f"fleet: {fleet.url}/v1 -> {fleet.count} rrkit serve processes (ports {ports})", flush=True)
    try:
        while all(p.poll() is None for p in [fleet.balancer, *fleet.processes] if p is not None):
            time.sleep(0.5)
        print("fleet: a process exited; stopping the others", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        fleet.stop()


if __name__ == "__main__":
    sys.exit(main())

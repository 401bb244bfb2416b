"""The Codex CLI as a client of `rrkit conform`: `rrkit conform --profile codex -- python -m
rrkit.conform.codex_client [--codex PATH]` runs one `codex exec` turn per scenario, configured for the scenario's
server (RRKIT_HTTP_URL, over WebSocket when RRKIT_TRANSPORT is `ws`) with Codex's default budgets and the
reference client's idle timeout, in a fresh CODEX_HOME; its exit status is Codex's."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..differential.codex import codex_version, config_toml, exec_codex
from ..differential.settings import DEFAULT_BUDGETS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rrkit.conform.codex_client", description=__doc__)
    parser.add_argument("--codex", default=shutil.which("codex"), help="the Codex CLI (default: `codex` on PATH)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds the turn may take")
    args = parser.parse_args(argv)
    url, transport = os.environ.get("RRKIT_HTTP_URL"), os.environ.get("RRKIT_TRANSPORT", "http")
    if not url:
        parser.error("RRKIT_HTTP_URL is not set: run this under `rrkit conform -- ...`")
    if not args.codex or codex_version(args.codex) is None:
        parser.error(f"no Codex CLI to run ({args.codex or 'none on PATH'}): give --codex PATH")
    binary = str(Path(args.codex).absolute()) if os.sep in args.codex else args.codex  # Codex runs elsewhere
    with tempfile.TemporaryDirectory(prefix="rrkit-conform-codex-") as temp:
        home, workdir = Path(temp) / "home", Path(temp) / "work"
        home.mkdir()
        workdir.mkdir()
        config = config_toml(url, websockets=transport == "ws", budgets=DEFAULT_BUDGETS)
        (home / "config.toml").write_text(config, encoding="utf-8")
        run = exec_codex(binary, home, workdir, "What is the weather in Paris?", args.timeout)
    for line in run.errors or ([f"codex exec timed out after {args.timeout:g} s"] if run.timed_out else []):
        print(line, file=sys.stderr)
    return 124 if run.timed_out else run.returncode


if __name__ == "__main__":
    sys.exit(main())

"""Each command imports only its own stack: a budget per command, as data (the module prefixes it may not load),
checked by running the command in a fresh interpreter and reading `sys.modules` after it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CLIENT_CONFORMANCE = ("rrkit.client", "rrkit.differential", "rrkit.conform.drive", "rrkit.conform.checks")
JUDGES = (
    *(f"rrkit.conform.{name}" for name in ("report", "checks", "scenario", "drive", "server", "profile")),
    "rrkit.drive",
    "rrkit.differential",
    "rrkit.client",
)
"""The judges of peers (the CLI knows only `rrkit.conform.timeouts`, the defaults its help shows)."""
WEB = (
    "uvicorn",
    "starlette",
    "httpx",
    "websockets",
    "openai",
    "rrkit.server.app",
    "rrkit.server.runner",
    "rrkit.relay.http",
)
"""The web stack: servers, clients, the official SDK (a capture's types, `rrkit.server.capture`, are no web stack)."""
WRITING = ("filelock", "rrkit.cassette.journal", "rrkit.cassette.record")
"""A recording's machinery: its journal, the cross-process lock, the cassette built from a capture."""
BUDGETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "conform --server URL --list": (
        ("conform", "--server", "http://127.0.0.1:9/v1", "--list"),
        (*CLIENT_CONFORMANCE, "rrkit.conform.scenario", "rrkit.drive", "rrkit.conform.server.probe", "pydantic", *WEB),
    ),
    "conform --list": (
        ("conform", "--list"),
        ("rrkit.conform.server", "rrkit.drive", "rrkit.conform.report", "rrkit.conform.scenario", "pydantic", *WEB),
    ),
    "validate": (("validate", "cassettes/text.http.json"), (*JUDGES, *WEB, *WRITING)),
    "diff": (("diff", "cassettes/text.http.json", "cassettes/text.http.json"), (*JUDGES, *WEB, *WRITING)),
    "show": (("show", "cassettes/text.http.json"), (*JUDGES, *WEB, *WRITING, "rrkit.report.model")),
    "recover (nothing to recover)": (("recover", "no-such.json"), (*JUDGES, *WEB, *WRITING, "pydantic")),
    "--help": (("--help",), (*JUDGES, "rrkit.report", *WEB, "yaml", "pydantic", "rich")),
    "fixtures": (("fixtures",), (*JUDGES, *WEB, "pydantic", "rrkit.script.models")),
    "schema script": (("schema", "script"), (*JUDGES, *WEB, "pydantic", "yaml", "rrkit.script.models")),
}
"""Command -> (its arguments, the modules and packages it may not load): a judge of servers loads nothing of the
clients' side, a judge of clients nothing of the servers', a cassette check no judge of peers."""

PROGRAM = """
import json, sys
from rrkit.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(args: tuple[str, ...]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("command", list(BUDGETS))
def test_a_command_loads_only_its_own_stack(command: str) -> None:
    args, forbidden = BUDGETS[command]
    loaded = _loaded(args)
    assert [name for name in loaded if name in forbidden or name.startswith(tuple(f"{p}." for p in forbidden))] == []


def test_each_command_is_defined_by_the_module_the_group_loads_for_it() -> None:
    from rrkit.cli.group import COMMAND_MODULES, commands

    defined = {name: command.callback.__module__ for name, command in commands().items() if command.callback}
    assert defined == {name: f"rrkit.cli.{module}" for name, module in COMMAND_MODULES.items()}

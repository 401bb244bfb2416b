"""One layer drives every judge (`rrkit.drive`): the client under test and the remote-server driver are each
defined once, and no judge (tools/, conform/, differential/) opens a connection or starts a process itself."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "toolkit" / "rrkit"
DRIVE = PACKAGE / "drive"
ONCE = ("ClientUnderTest", "ReferenceClient", "CommandClient", "FunctionClient", "ServerURLs", "RemoteServer")
"""What the drive layer defines, and nothing else may define again."""
JUDGES = ("tools", "conform", "differential")
NETWORK = {
    "httpx": {"AsyncClient", "Client", "stream", "get", "post", "request"},
    "websockets": {"connect"},
    "subprocess": {"Popen", "run", "call", "check_call", "check_output"},
    "asyncio": {"open_connection", "create_subprocess_exec", "create_subprocess_shell"},
}
"""Calls that open a connection or start a process: in a judge, only through rrkit.drive."""
ALLOWED = {
    # the long-lived `codex app-server` session the differential suite talks JSON-RPC to (stopped by drive)
    PACKAGE / "differential" / "appserver.py",
    # `codex --version`, a lookup before anything is judged
    PACKAGE / "differential" / "codex.py",
}


def _classes() -> dict[str, list[str]]:
    defined: dict[str, list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined[node.name].append(str(path.relative_to(PACKAGE)))
    return defined


def test_the_client_under_test_and_the_remote_server_driver_are_each_defined_once_in_drive() -> None:
    defined = _classes()
    for name in ONCE:
        assert len(defined[name]) == 1 and defined[name][0].startswith("drive/"), (name, defined[name])


def _network_calls(path: Path) -> list[str]:
    """The calls of NETWORK in a file: `module.call(...)`, or a call of a name imported from the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name in NETWORK.get((node.module or "").split(".")[0], ())
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            if function.attr in NETWORK.get(function.value.id, ()):
                found.append(f"{function.value.id}.{function.attr} at line {node.lineno}")
        elif isinstance(function, ast.Name) and function.id in imported:
            found.append(f"{function.id} at line {node.lineno}")
    return found


def test_no_judge_opens_a_connection_or_starts_a_process_itself() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): calls
        for judge in JUDGES
        for path in sorted((PACKAGE / judge).rglob("*.py"))
        if path not in ALLOWED and (calls := _network_calls(path))
    }
    assert offenders == {}, "send and run through rrkit.drive (RemoteServer, run_process, CommandClient)"


def test_the_contract_sees_a_connection_opened_by_hand(tmp_path: Path) -> None:
    judge = tmp_path / "judge.py"
    judge.write_text(
        "import httpx\nfrom websockets.asyncio.client import connect\nhttpx.AsyncClient()\nconnect('ws://x')\n"
    )
    assert _network_calls(judge) == ["httpx.AsyncClient at line 3", "connect at line 4"]

"""Every command's exit statuses against the one table (rrkit.cli.group.ExitStatus): 0 ok, 1 a difference or a
failed check, 2 a usage or file error; each command's help says which it uses, and each of those is exercised here."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from rrkit.cassette import RecordedEvent, load_cassette, save_cassette
from rrkit.cli import commands, main
from rrkit.cli.group import EXIT_STATUSES, ExitStatus, exit_status
from rrkit.protocol.exceptions import CassetteError, CodexNotFound, LockHeld, RRKitError, ScriptError

from ..cassette.test_cassette_write_failures import serve_until_stopped
from ..docs_text import page
from ..rrkit_process import start

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "cassettes"
TEXT = str(GOLDEN / "text.http.json")
OTHER = str(GOLDEN / "tool-loop.http.json")
BAD_SCRIPT = "name: bad\nresponses:\n  - output: [{txet: Hi.}]\n"
WRONG_EXPECTATION = (
    "name: wrong\nexpect: {outcome: failed, code: context_length_exceeded}\n"
    "responses:\n  - repeat: true\n    output: [{text: Fine.}]\n"
)


@dataclass(frozen=True)
class Case:
    command: str
    status: ExitStatus
    what: str
    args: Callable[[Path], list[str]]


def _folder(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path)


def _out_of_order(tmp_path: Path) -> str:
    """The golden text cassette with its terminal event's sequence_number off by one."""
    cassette = load_cassette(Path(TEXT))
    exchange = cassette.exchanges[0]
    *head, last = exchange.events
    shifted = last.event | {"sequence_number": last.event["sequence_number"] + 1}
    exchange.events = [*head, RecordedEvent.of(last.at, shifted)]
    return str(save_cassette(cassette, tmp_path / "out-of-order.json"))


CASES = [
    Case("show", ExitStatus.OK, "a cassette", lambda _: ["show", TEXT]),
    Case("show", ExitStatus.USAGE, "no such file", lambda p: ["show", str(p / "none.json")]),
    Case("show", ExitStatus.USAGE, "a script given", lambda p: ["show", str(ROOT / "fixtures" / "text.yaml")]),
    Case("diff", ExitStatus.OK, "the same cassette twice", lambda _: ["diff", TEXT, TEXT]),
    Case("validate", ExitStatus.OK, "the golden cassettes", lambda _: ["validate", str(GOLDEN)]),
    Case("validate", ExitStatus.FAILED, "a cassette breaking a rule", lambda p: ["validate", _out_of_order(p)]),
    Case("validate", ExitStatus.USAGE, "no such file", lambda p: ["validate", str(p / "none.json")]),
    Case("diff", ExitStatus.FAILED, "two cassettes that differ", lambda _: ["diff", TEXT, OTHER]),
    Case(
        "diff", ExitStatus.USAGE, "an --ignore path that is not one", lambda _: ["diff", TEXT, TEXT, "--ignore", "a[*"]
    ),
    Case("diff", ExitStatus.USAGE, "no such file", lambda p: ["diff", TEXT, str(p / "none.json")]),
    Case("replay", ExitStatus.OK, "the reference client as recorded", lambda _: ["replay", TEXT]),
    Case(
        "replay",
        ExitStatus.FAILED,
        "a client that sends nothing",
        lambda _: ["replay", TEXT, "--", sys.executable, "-c", "pass"],
    ),
    Case("replay", ExitStatus.USAGE, "a folder without cassettes", lambda p: ["replay", str(p)]),
    Case(
        "replay",
        ExitStatus.USAGE,
        "--against beside a client",
        lambda _: ["replay", TEXT, "--against", "http://127.0.0.1:9/v1", "--", "true"],
    ),
    Case("recover", ExitStatus.OK, "no journal", lambda p: ["recover", str(p / "c.json")]),
    Case("recover", ExitStatus.USAGE, "no cassette named", lambda _: ["recover"]),
    Case(
        "conform", ExitStatus.OK, "the reference client", lambda _: ["conform", "--only", "text", "--transport", "http"]
    ),
    Case(
        "conform",
        ExitStatus.FAILED,
        "a client that fails",
        lambda _: [
            "conform",
            "--only",
            "text",
            "--transport",
            "http",
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(3)",
        ],
    ),
    Case("conform", ExitStatus.USAGE, "an unknown scenario", lambda _: ["conform", "--only", "no-such-scenario"]),
    Case(
        "explore",
        ExitStatus.USAGE,
        "a --from file of no kind",
        lambda p: ["explore", "--from", _folder(p, "x.yaml", "a: 1\n") + "/x.yaml"],
    ),
    Case("conform", ExitStatus.USAGE, "an unknown profile", lambda _: ["conform", "--profile", "no-such-profile"]),
    Case(
        "conform",
        ExitStatus.USAGE,
        "a --server where nothing answers",
        lambda _: ["conform", "--server", "http://127.0.0.1:9/v1", "--only", "sse-text"],
    ),
    Case(
        "compare-codex",
        ExitStatus.USAGE,
        "no Codex CLI there",
        lambda p: ["compare-codex", "--codex", str(p / "codex")],
    ),
    Case("compare-codex", ExitStatus.USAGE, "a bad option", lambda _: ["compare-codex", "--idle-timeout", "0"]),
    Case(
        "demo",
        ExitStatus.OK,
        "the shipped text script",
        lambda p: [
            "demo",
            "--fixtures",
            _folder(p, "text.yaml", (ROOT / "fixtures" / "text.yaml").read_text()),
            "--transport",
            "http",
        ],
    ),
    Case(
        "demo",
        ExitStatus.FAILED,
        "a run not as its script expects",
        lambda p: ["demo", "--fixtures", _folder(p, "wrong.yaml", WRONG_EXPECTATION), "--transport", "http"],
    ),
    Case(
        "demo",
        ExitStatus.USAGE,
        "a script that cannot be used",
        lambda p: ["demo", "--fixtures", _folder(p, "bad.yaml", BAD_SCRIPT)],
    ),
    Case("demo", ExitStatus.USAGE, "a folder without scripts", lambda p: ["demo", "--fixtures", str(p)]),
    Case("fixtures", ExitStatus.OK, "the shipped list", lambda _: ["fixtures"]),
    Case("fixtures", ExitStatus.USAGE, "an unknown option", lambda _: ["fixtures", "--all"]),
    Case("schema", ExitStatus.OK, "a schema printed", lambda _: ["schema", "profile"]),
    Case("schema", ExitStatus.USAGE, "an unknown name", lambda _: ["schema", "scripts"]),
    Case(
        "serve",
        ExitStatus.USAGE,
        "a script that cannot be used",
        lambda p: ["serve", "--script", _folder(p, "bad.yaml", BAD_SCRIPT) + "/bad.yaml"],
    ),
    Case("serve", ExitStatus.USAGE, "a cassette given as the script", lambda _: ["serve", "--script", TEXT]),
    Case("record", ExitStatus.USAGE, "no upstream", lambda p: ["record", "--cassette", str(p / "c.json")]),
    Case(
        "record",
        ExitStatus.USAGE,
        "a script given as the cassette",
        lambda _: ["record", "--upstream", "http://127.0.0.1:9/v1", "--cassette", str(ROOT / "fixtures" / "text.yaml")],
    ),
]
"""In-process cases; serve's and record's 0 and 1 run them as processes (below)."""

PROCESS_CASES = {
    ("explore", ExitStatus.OK),  # tests/cli/test_cli_explore.py: a client explored as a process
    ("explore", ExitStatus.FAILED),
    ("serve", ExitStatus.OK),
    ("serve", ExitStatus.FAILED),
    ("record", ExitStatus.OK),
    ("record", ExitStatus.FAILED),
}


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.command} {case.status.value} {case.what}")
def test_each_command_exits_with_the_status_the_table_gives(case: Case, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, case.args(tmp_path))
    assert result.exit_code == case.status, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if case.status is ExitStatus.USAGE:
        assert "Error:" in result.output and "Traceback" not in result.output, result.output


def _documented(command: str) -> set[ExitStatus]:
    """The statuses a command's help names in its `Exit status:` paragraph."""
    help_text = commands()[command].help or ""
    said = re.search(r"Exit status:(.*?)(?:\n\s*\n|$)", help_text, re.S)
    assert said, f"`rrkit {command} --help` does not say its exit statuses"
    return {ExitStatus(int(number)) for number in re.findall(r"\b([012]) ", said.group(1))}


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_command_documents_its_exit_statuses_and_each_is_tested(command: str) -> None:
    tested = {case.status for case in CASES if case.command == command}
    tested |= {status for name, status in PROCESS_CASES if name == command}
    if command == "compare-codex":  # 0 and 1 need the Codex CLI: tests/realclients/test_codex_differential.py
        tested |= {ExitStatus.OK, ExitStatus.FAILED}
    assert _documented(command) == tested


def test_the_table_gives_file_errors_2_and_an_unwritable_recording_1() -> None:
    assert exit_status(ScriptError("x")) is ExitStatus.USAGE
    assert exit_status(CassetteError("x")) is ExitStatus.USAGE
    assert exit_status(CodexNotFound("x")) is ExitStatus.USAGE
    assert exit_status(LockHeld("x")) is ExitStatus.FAILED  # a subclass of CassetteError: its row comes first
    assert exit_status(RRKitError("x")) is ExitStatus.FAILED
    kinds = [kind for kind, _ in EXIT_STATUSES]
    for at, kind in enumerate(kinds):  # no row is hidden behind a base listed before it
        assert not any(issubclass(kind, earlier) for earlier in kinds[:at]), kind


def _stopped(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    return process.returncode


def test_serve_exits_0_when_stopped_and_1_when_its_recording_cannot_be_written(tmp_path: Path) -> None:
    process, url = start("--script", "fixture:text")
    assert httpx.post(url + "/responses", json={"model": "m", "input": "hi"}, trust_env=False).status_code == 200
    assert _stopped(process) == ExitStatus.OK
    _, code = serve_until_stopped(tmp_path / "session.json", 1, breaking=Path.mkdir)
    assert code == ExitStatus.FAILED


def test_record_exits_0_when_stopped_and_1_when_its_cassette_cannot_be_written(tmp_path: Path) -> None:
    upstream, upstream_url = start("--script", "fixture:text")
    for cassette, breaking in ((tmp_path / "kept.json", None), (tmp_path / "lost.json", Path.mkdir)):
        process, url = start("--upstream", upstream_url, "--cassette", str(cassette), command="record")
        body = {"model": "m", "input": "hi", "stream": True}
        assert httpx.post(url + "/responses", json=body, trust_env=False, timeout=30).status_code == 200
        if breaking is not None:
            breaking(cassette)
        expected = ExitStatus.OK if breaking is None else ExitStatus.FAILED
        assert _stopped(process) == expected
    assert _stopped(upstream) == ExitStatus.OK


def test_the_exit_status_page_lists_every_status() -> None:
    section = page("reference/exit-statuses.md")
    listed = [int(number) for number in re.findall(r"^\| (\d) \|", section, re.M)]
    assert listed == [status.value for status in ExitStatus]

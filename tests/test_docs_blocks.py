"""Every code block of the README and the documentation site is checked against what it shows: a Python program
runs (against a live fake server), a pytest module's imports resolve (tests/test_docs.py and the conform tests run
each one), a script in YAML loads, a CI workflow's steps and a shell block name only commands and options that
exist (`rrkit`, the benchmarks), an admin API call gets an answer from a live server, a Codex config names a
Responses provider, a usage line names only real options; shown output is `text`. A block in no language is
refused: nothing shown to a reader goes unchecked. The faults table's YAML and Python build what they say."""

from __future__ import annotations

import ast
import importlib
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import httpx
import pytest
import yaml

import rrkit.script as builders
from rrkit.cli import commands
from rrkit.drive import ServerURLs
from rrkit.schema import json_schema
from rrkit.script import Reply, Script, parse_script
from rrkit.server import FakeServer

from .docs_text import ROOT, Block, blocks

BLOCKS = blocks()
LANGUAGES = {"python", "sh", "yaml", "toml", "text", "javascript"}
SETUP_COMMANDS = ("python3 -m venv", "pip ", ".venv/bin/pip", ".venv/bin/pytest", ".venv/bin/mkdocs", "pytest")
OTHER_PROGRAMS = ("codex exec ", "kill %", "kubectl ", "helm ")
"""Commands of programs rrkit does not own that a tutorial runs as a user would: the Codex CLI, the shell's job
control, a Kubernetes cluster's tools."""
FLEET = ("python", "deploy/haproxy/fleet.py")


def _of(language: str) -> list[Block]:
    return [block for block in BLOCKS if block.language == language]


def test_every_block_names_a_language_this_file_checks() -> None:
    assert [str(block) for block in BLOCKS if block.language not in LANGUAGES] == []
    assert len(_of("javascript")) == 1  # tests/test_node_example.py runs it with node's own test runner


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rrkit"
        for alias in node.names
    ]


@pytest.mark.parametrize("block", _of("python"), ids=str)
def test_a_python_block_parses_and_each_name_it_imports_from_rrkit_exists(block: Block) -> None:
    tree = ast.parse(block.text, filename=str(block))
    missing = [
        f"{module}.{name}" for module, name in _imports(tree) if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []


PROGRAMS = [block for block in _of("python") if "def test_" not in block.text]


@pytest.mark.parametrize("block", PROGRAMS, ids=str)
def test_a_python_program_runs_as_written(block: Block, tmp_path: Path) -> None:
    """Run with a live fake server's URLs in its environment, as `rrkit conform` runs a client."""
    program = tmp_path / "example.py"
    program.write_text(block.text, encoding="utf-8")
    with FakeServer(None) as server:
        env = {**os.environ, **ServerURLs(server.http_url, server.ws_url).environment(), "RRKIT_TRANSPORT": "http"}
        ran = subprocess.run(
            [sys.executable, str(program)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
    assert ran.returncode == 0, ran.stderr[-2000:]


@pytest.mark.parametrize("block", _of("yaml"), ids=str)
def test_a_yaml_block_is_a_script_that_loads(block: Block) -> None:
    data = yaml.safe_load(block.text)
    if data is None:  # only a comment: the editor's schema line
        assert block.text.startswith("# yaml-language-server: $schema=")
        return
    if "jobs" in data:  # a CI workflow: each step it runs is a command the shell blocks' rules check
        runs = [step["run"] for job in data["jobs"].values() for step in job["steps"] if "run" in step]
        assert runs and _shell_problems(Block(block.document, block.line, "sh", "\n".join(runs) + "\n")) == []
        return
    if set(data) <= {"responses", "handshakes", "steer", "default", "name", "description", "expect"}:
        parse_script(data)
        return
    pytest.fail(f"{block}: a YAML block that is neither a script nor a CI workflow: {sorted(map(str, data))}")


@pytest.mark.parametrize("block", _of("toml"), ids=str)
def test_a_toml_block_is_a_codex_config_naming_a_responses_provider(block: Block) -> None:
    config = tomllib.loads(block.text)
    provider = config["model_providers"][config["model_provider"]]
    assert provider["wire_api"] == "responses" and provider["base_url"].startswith("http://127.0.0.1:")


def _commands(block: Block) -> list[list[str]]:
    """Each command of a shell block, as words: lines split at `&&`, comments and a trailing `&` left out."""
    commands = []
    for line in block.text.splitlines():
        line = line.split(" #", 1)[0].strip().rstrip("&").strip()
        for part in filter(None, (piece.strip() for piece in line.split("&&"))):
            commands.append(shlex.split(part))
    return commands


def _options_of(command: click.Command) -> set[str]:
    return {name for param in command.params for name in [*param.opts, *param.secondary_opts]}


def _check_rrkit(words: list[str]) -> list[str]:
    """What is wrong with an `rrkit ...` command line: an unknown command, or an option it does not have."""
    name = words[1]
    if name not in commands():
        return [f"no command rrkit {name}"]
    known = _options_of(commands()[name]) | {"--help"}
    given = [word.split("=", 1)[0] for word in words[2:] if word.startswith("--")]
    given = given[: given.index("--")] if "--" in given else given
    return [f"rrkit {name} has no option {option}" for option in given if option not in known]


def _help_options(*command: str) -> set[str]:
    shown = subprocess.run([sys.executable, *command, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return set(re.findall(r"--[a-z][a-z-]*", shown.stdout))


def _benchmark_options() -> set[str]:
    return _help_options("-m", "benchmarks")


def _check_fleet(words: list[str]) -> list[str]:
    """The fleet launcher's own options (before `--`), then those it passes to each `rrkit serve` (after it)."""
    own, serve = (words[2 : words.index("--")], words[words.index("--") + 1 :]) if "--" in words else (words[2:], [])
    known = _help_options(FLEET[1])
    problems = [f"fleet.py has no option {word}" for word in own if word.startswith("--") and word not in known]
    return problems + _check_rrkit(["rrkit", "serve", *serve])


@pytest.mark.parametrize("block", _of("sh"), ids=str)
def test_a_shell_block_names_only_commands_and_options_that_exist(block: Block) -> None:
    assert _shell_problems(block) == []


def _shell_problems(block: Block) -> list[str]:
    problems: list[str] = []
    for words in _commands(block):
        program = words[0].removeprefix(".venv/bin/")
        if program == "rrkit":
            problems += _check_rrkit(["rrkit", *words[1:]])
        elif words[:3] == ["python", "-m", "benchmarks"]:
            problems += [f"no benchmark option {word}" for word in words[3:] if word.startswith("--")]
            problems = [problem for problem in problems if problem.rsplit(" ", 1)[1] not in _benchmark_options()]
        elif tuple(words[:2]) == FLEET:
            problems += _check_fleet(words)
        elif program == "curl":
            continue  # an admin API call: test_every_admin_api_call_shown_is_answered
        elif not " ".join(words).startswith((*SETUP_COMMANDS, *OTHER_PROGRAMS)):
            problems.append(f"a command this test does not know: {' '.join(words)}")
    return problems


AdminCall = tuple[str, str, dict[str, str], bytes | None]


def _admin_calls() -> list[AdminCall]:
    """Each `curl` call shown: method, path, headers, body (`--data-binary @FILE`: a shipped script stands for the
    reader's own file)."""
    calls: list[AdminCall] = []
    for block in _of("sh"):
        for words in _commands(block):
            if words[0] != "curl":
                continue
            method = words[words.index("-X") + 1] if "-X" in words else "GET"
            url = next(word for word in words[1:] if "/__rrkit" in word)
            headers: dict[str, str] = {}
            for at, word in enumerate(words):
                if word == "-H":
                    header, value = words[at + 1].split(":", 1)
                    headers[header.strip()] = value.strip()
            body = (ROOT / "fixtures" / "text.yaml").read_bytes() if "--data-binary" in words else None
            calls.append((method, url.split("localhost:8000", 1)[1], headers, body))
    return calls


def test_every_admin_api_call_shown_is_answered_by_a_live_server() -> None:
    calls = _admin_calls()
    assert calls, "the documentation shows no admin API call"
    with FakeServer(None) as server, httpx.Client(base_url=server.http_url.removesuffix("/v1")) as http:
        http.post("/v1/responses", json={"model": "gpt-test", "input": "hi"})
        answers = {
            f"{method} {path}": http.request(method, path, headers=headers, content=body)
            for method, path, headers, body in calls
        }
    unanswered = {call: answer.status_code for call, answer in answers.items() if answer.status_code >= 500}
    unrouted = {call for call, answer in answers.items() if "Invalid URL" in answer.text or answer.status_code == 405}
    assert (unanswered, unrouted) == ({}, set())
    # every call answers 200 but the read of an exchange the fresh server never had
    assert {call: answer.status_code for call, answer in answers.items() if answer.status_code != 200} == {
        "GET /__rrkit/exchanges/42": 404
    }


USAGE = re.compile(r"^rrkit ([a-z-]+) ", re.M)


@pytest.mark.parametrize("block", [block for block in _of("text") if USAGE.match(block.text)], ids=str)
def test_a_usage_line_names_only_options_its_command_has(block: Block) -> None:
    (name,) = set(USAGE.findall(block.text))
    assert name in commands()
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", block.text))
    assert sorted(shown - _options_of(commands()[name])) == []


def test_the_schema_line_an_editor_reads_names_a_schema_rrkit_ships() -> None:
    lines = [block.text for block in _of("yaml") if block.text.startswith("# yaml-language-server:")]
    assert lines and all(line.rstrip().endswith("/script.schema.json") for line in lines)
    assert json_schema("script")["title"] == "rrkit script"


FAULTS = ROOT / "docs" / "how-to" / "faults.md"


def _fault_rows() -> list[tuple[str, str]]:
    """The faults table's YAML and Python cells, each row's first code span of each."""
    rows = [line.split(" | ") for line in FAULTS.read_text().splitlines() if line.startswith("| ") and "`" in line]
    return [(re.findall(r"`([^`]+)`", cells[1])[0], re.findall(r"`([^`]+)`", cells[2])[0]) for cells in rows]


@pytest.mark.parametrize(("in_yaml", "in_python"), _fault_rows(), ids=lambda cell: cell[:40])
def test_each_fault_of_the_table_is_a_reply_in_yaml_and_in_python(in_yaml: str, in_python: str) -> None:
    """The YAML cell loads in a script (a reply's keys, or `handshakes`); the Python cell, run as written (its
    `reply(...)` placeholder filled), builds a reply or adds the handshake to `script`."""
    data = yaml.safe_load("{" + in_yaml + "}")
    loaded = parse_script(data if "handshakes" in data else {"responses": [{"output": [{"text": "x"}], **data}]})
    assert loaded.handshakes if "handshakes" in data else loaded.responses
    namespace = {name: getattr(builders, name) for name in builders.__all__} | {"script": Script()}
    built = eval(in_python.replace("reply(...)", 'reply(text("x"))'), namespace)
    assert namespace["script"].handshakes if "handshakes" in data else isinstance(built, Reply)

"""The calls a client runs, the outputs it sends back and the service's own items: a file's `output:` entry and
the Python builder make the same model, the builders' fields reach the wire, and a wrong entry is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rrkit.script import (
    Script,
    ScriptError,
    apply_patch_call,
    apply_patch_call_output,
    audio,
    compaction,
    computer_call_output,
    function_call,
    load_script,
    local_shell_call,
    mcp_call,
    reply,
    shell_call,
    shell_call_output,
    shell_output,
    text,
    tool_search_call,
)

from ..server.faultclient import Serve, stream

YAML_AND_BUILDER: dict[str, tuple[str, Any]] = {
    "local_shell_call": (
        "{type: local_shell_call, command: [ls, -l], env: {LANG: C}, call_id: call_1}",
        local_shell_call("ls", "-l", env={"LANG": "C"}, call_id="call_1"),
    ),
    "shell_call": (
        "{type: shell_call, commands: [ls, pwd], timeout_ms: 500}",
        shell_call("ls", "pwd", timeout_ms=500),
    ),
    "shell_call_output": (
        "{type: shell_call_output, call_id: c, output: [{stdout: a}, {stderr: slow, exit_code: null}]}",
        shell_call_output("c", shell_output("a"), shell_output(stderr="slow", exit_code=None)),
    ),
    "apply_patch_call": (
        "{type: apply_patch_call, operation: create_file, path: a.py, diff: '+x'}",
        apply_patch_call("create_file", "a.py", "+x"),
    ),
    "apply_patch_call_output": (
        "{type: apply_patch_call_output, call_id: c, status: failed}",
        apply_patch_call_output("c", "failed"),
    ),
    "computer_call_output": (
        "{type: computer_call_output, call_id: c, file_id: file_1}",
        computer_call_output("c", file_id="file_1"),
    ),
    "tool_search_call": (
        "{type: tool_search_call, arguments: {query: w}, execution: client}",
        tool_search_call({"query": "w"}, execution="client"),
    ),
    "compaction": ("{type: compaction, encrypted_content: enc}", compaction("enc")),
    "audio": ("{type: audio, transcript: Hi, audio: [AAAA], chunks: 2}", audio("Hi", "AAAA", chunks=2)),
    "message with annotations": (
        "{text: Hi, annotations: [{type: file_citation, file_id: f, filename: a.txt, index: 0}]}",
        text("Hi", annotations=[{"type": "file_citation", "file_id": "f", "filename": "a.txt", "index": 0}]),
    ),
    "function_call with namespace": (
        "{type: function_call, name: get, namespace: tools}",
        function_call("get", namespace="tools"),
    ),
    "failed mcp_call": (
        "{type: mcp_call, server_label: docs, name: search, error: gone}",
        mcp_call("docs", "search", error="gone"),
    ),
}


@pytest.mark.parametrize("kind", list(YAML_AND_BUILDER))
def test_a_file_entry_and_the_builder_make_the_same_output(tmp_path: Path, kind: str) -> None:
    entry, built = YAML_AND_BUILDER[kind]
    path = tmp_path / "script.yaml"
    path.write_text(f"name: items\ndefault:\n  output:\n    - {entry}\n")
    assert load_script(path).default == reply(built)


def _done(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event["item"] for event in events if event["type"] == "response.output_item.done"]


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_client_s_call_arrives_with_a_call_id_and_what_it_asks_for(serve: Serve, transport: str) -> None:
    server = serve(Script(default=reply(local_shell_call("ls", "-l"), apply_patch_call("delete_file", "old.py"))))
    shell, patch = _done(stream(server, transport))
    assert shell["call_id"].startswith("call_") and shell["status"] == "completed"
    assert shell["action"] == {"type": "exec", "command": ["ls", "-l"], "env": {}}
    assert patch["operation"] == {"type": "delete_file", "path": "old.py"} and patch["call_id"] != shell["call_id"]


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_each_shell_command_streams_as_its_own_command_events(serve: Serve, transport: str) -> None:
    events = stream(serve(Script(default=reply(shell_call("ls", "pwd")))), transport)
    commands = [(e["command_index"], e["command"]) for e in events if e["type"] == "response.shell_call_command.done"]
    assert commands == [(0, "ls"), (1, "pwd")]
    assert _done(events)[0]["action"]["commands"] == ["ls", "pwd"]


def test_an_item_type_without_in_progress_is_added_with_its_final_status(serve: Serve) -> None:
    events = stream(serve(Script(default=reply(apply_patch_call_output("c", "failed")))), "http")
    added = next(event["item"] for event in events if event["type"] == "response.output_item.added")
    assert added["status"] == "failed"  # the SDK's literal for this type knows completed and failed only


def test_an_item_type_without_a_status_is_sent_without_one(serve: Serve) -> None:
    events = stream(serve(Script(default=reply(compaction("enc")))), "ws")
    items = [event["item"] for event in events if "item" in event]
    assert len(items) == 2 and all("status" not in item for item in items)
    assert "response.compaction.compacting" in [event["type"] for event in events]


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("{type: local_shel_call, command: [ls]}", "unknown output type 'local_shel_call' (did you mean"),
        ("{type: apply_patch_call, operation: delete_file, path: a, diff: x}", "delete_file takes no diff"),
        ("{type: apply_patch_call, operation: update_file, path: a}", "update_file needs a diff"),
        ("{type: shell_call, commands: []}", "default.output[0].commands"),
        ("{type: local_shell_call, command: ls}", "default.output[0].command"),
        ("{type: function_call_output, output: x}", "default.output[0].call_id"),
    ],
)
def test_a_wrong_entry_is_named_by_its_line_place_and_problem(tmp_path: Path, entry: str, says: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: bad\ndefault:\n  output:\n    - {entry}\n")
    with pytest.raises(ScriptError) as error:
        load_script(path)
    assert str(path) in str(error.value) and "line 4" in str(error.value) and says in str(error.value)

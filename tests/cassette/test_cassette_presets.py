"""The built-in presets against real traffic: Codex CLI 0.169.0 requests captured in two directories and
CODEX_HOMEs, over SSE and WebSocket (tests/cassette/data/codex-0.169.0-requests.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from rrkit.cassette import Cassette, CassetteSource, MatchConfig
from rrkit.cassette.match import compare
from rrkit.protocol.incremental import logical_from_wire

from ..errortrap import Serve
from .recordings import record

RUNS: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "codex-0.169.0-requests.json").read_text())["runs"]
CODEX = MatchConfig.preset("codex")


def bodies(run: str) -> list[dict[str, Any]]:
    return [request["body"] for request in RUNS[run]["requests"]]


def moved(value: Any, run: str, cwd: str, home: str) -> Any:
    """`value` as if the run had been made in `cwd` with CODEX_HOME `home`."""
    raw = json.dumps(value).replace(RUNS[run]["cwd"], cwd).replace(RUNS[run]["codex_home"], home)
    return json.loads(raw)


def replayed(serve: Serve, cassette: Cassette, config: MatchConfig, requests: list[dict[str, Any]]) -> list[str]:
    """Per request, the recorded answer that came back, or `no match`."""
    answers = []
    with serve.running(source=CassetteSource(cassette, config)) as replay, httpx.Client() as client:
        for request in requests:
            response = client.post(replay.http_url + "/responses", json=request)
            found = [part for part in response.text.split('"') if part.startswith("answer ")]
            answers.append(found[0] if response.status_code == 200 and found else "no match")
    return answers


def test_codex_session_recorded_in_one_directory_replays_from_another(serve: Serve) -> None:
    cassette = record(serve, bodies("sse-tool-A"), lenient=True)  # the recorded tools are trimmed to name and type
    assert replayed(serve, cassette, CODEX, bodies("sse-tool-B")) == ["answer 0", "answer 1"]
    assert replayed(serve, cassette, MatchConfig(), bodies("sse-tool-B")) == ["no match", "no match"]


def test_codex_websocket_logical_requests_match_the_sse_ones() -> None:
    over_sse = [logical_from_wire(body) for body in bodies("sse-tool-A")]
    over_ws = RUNS["ws-tool-B"]["logical_requests"]
    assert [compare(a, b, CODEX).failed for a, b in zip(over_sse, over_ws, strict=True)] == [[], []]
    assert [compare(a, b, MatchConfig()).failed for a, b in zip(over_sse, over_ws, strict=True)] == [["input"]] * 2


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("say hi", "say bye"),  # the prompt
        ("Process exited with code 0", "Process exited with code 1"),  # the command's result
        ("hello\\n", "goodbye\\n"),  # the command's output
        ("<shell>bash</shell>", "<shel>bash</shel>"),  # the markup around a normalized value
    ],
)
def test_codex_preset_still_tells_what_the_model_sees_apart(old: str, new: str) -> None:
    recorded = bodies("sse-tool-A")[1]
    changed = json.loads(json.dumps(recorded).replace(old, new))
    assert changed != recorded
    assert compare(recorded, changed, CODEX).failed == ["input"]


def test_codex_workspace_write_prompt_matches_from_another_directory_with_its_sandbox_paths_still_compared() -> None:
    (recorded,) = bodies("exp-workspace-write")
    elsewhere = moved(recorded, "exp-workspace-write", "/home/someone/project", "/home/someone/.codex")
    assert compare(recorded, elsewhere, CODEX).ok
    assert not compare(recorded, elsewhere, MatchConfig()).ok
    other_entry = json.loads(json.dumps(elsewhere).replace("/project/.aws</path>", "/project/.ssh</path>"))
    assert compare(recorded, other_entry, CODEX).failed == ["input"]


def test_every_codex_header_that_differs_between_runs_is_left_out_by_the_preset() -> None:
    first, second = RUNS["sse-tool-A"]["requests"][0]["headers"], RUNS["sse-tool-B"]["requests"][0]["headers"]
    differing = {name for name in first if first[name] != second.get(name)} - {"host"}  # a port: masked anyway
    assert {"session-id", "x-codex-turn-metadata"} <= differing
    assert all(CODEX.header_ignored(name) for name in differing)
    assert not any(CODEX.header_ignored(name) for name in ("originator", "x-codex-beta-features", "accept"))

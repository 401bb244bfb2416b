"""A cassette remembers how it should be matched: a recording stores the matching preset of the client it saw (or
the one given), a replay applies it unless told otherwise, and says which applied."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from rrkit.cassette import Cassette, cassette_from_capture, load_cassette, save_cassette
from rrkit.cassette.match import MatchConfig
from rrkit.cassette.modes import CassetteDeck
from rrkit.cassette.presets import detect_presets
from rrkit.cassette.proxy import RecordingProxy
from rrkit.cassette.recordmode import RecordMode
from rrkit.cassette.replay import CassetteSource
from rrkit.protocol.exceptions import CassetteError
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

CODEX_UPGRADE = {"originator": "codex_exec", "user-agent": "codex_exec/0.169.0 (Debian 12.0.0; x86_64) xterm"}
CODEX_TUI = {"Originator": "codex_cli_rs", "User-Agent": "codex_cli_rs/0.171.0"}
SDK = {"x-stainless-lang": "python", "user-agent": "OpenAI/Python 3.57.0"}
RRKIT_CLIENT = {"originator": "rrkit", "user-agent": "python-httpx/0.28.1"}


@pytest.mark.parametrize(
    ("sent", "presets"),
    [
        ([CODEX_UPGRADE], ("codex",)),
        ([CODEX_TUI], ("codex",)),
        ([SDK], ("openai-sdk",)),
        ([RRKIT_CLIENT], ()),
        ([{}], ()),
        ([SDK, CODEX_UPGRADE], ("codex", "openai-sdk")),
    ],
    ids=["codex-exec", "codex-tui", "openai-sdk", "rrkit-client", "no-headers", "both"],
)
def test_the_client_s_preset_is_detected_from_what_it_says_it_is(sent: list[dict[str, str]], presets: tuple) -> None:
    assert detect_presets(sent) == presets


def test_a_proxy_recording_of_the_sdk_stores_the_openai_sdk_preset(serve: Serve, tmp_path: Path) -> None:
    with serve.running(Script(default=reply(text("Hi.")))) as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        openai.OpenAI(base_url=proxy.http_url, api_key="sk-test", max_retries=0).responses.create(
            model="gpt-test", input="Hi"
        )
        cassette = proxy.cassette("sdk")
    path = save_cassette(cassette, tmp_path / "sdk.json")
    assert load_cassette(path).match_presets == ["openai-sdk"]
    assert json.loads(path.read_text())["match_presets"] == ["openai-sdk"]


def test_a_cassette_without_presets_is_written_as_before(serve: Serve, tmp_path: Path) -> None:
    with serve.running(Script(default=reply(text("Hi.")))) as server:
        httpx.post(server.http_url + "/responses", json={"model": "m", "input": "Hi"}, timeout=10)
        server.settle()
        path = tmp_path / "plain.json"
        deck = CassetteDeck.open(path, RecordMode.ALL, upstream=Script(), match=MatchConfig())
        deck.save(server.exchanges, server.connections)
    assert "match_presets" not in json.loads(path.read_text())


@pytest.mark.parametrize(("given", "stored"), [(("codex",), ["codex"]), (("none",), [])])
def test_a_preset_given_to_the_recording_is_stored_in_place_of_the_detected_one(
    serve: Serve, tmp_path: Path, given: tuple[str, ...], stored: list[str]
) -> None:
    with serve.running(Script(default=reply(text("Hi.")))) as server:
        httpx.post(server.http_url + "/responses", json={"model": "m", "input": "Hi"}, headers=SDK, timeout=10)
        server.settle()
        path = tmp_path / "given.json"
        deck = CassetteDeck.open(path, RecordMode.ALL, upstream=Script(), match=MatchConfig.preset(*given))
        deck.save(server.exchanges, server.connections)
    assert load_cassette(path).match_presets == stored


def test_a_replay_applies_the_stored_preset_unless_one_is_given() -> None:
    cassette = Cassette(match_presets=["codex"])
    stored = CassetteSource(cassette)
    given = CassetteSource(cassette, MatchConfig.preset("openai-sdk"))
    refused = CassetteSource(cassette, MatchConfig.preset("none"))
    assert (stored.match.presets, stored.matching) == (("codex",), "preset codex (stored in the cassette)")
    assert (given.match.presets, given.matching) == (("openai-sdk",), "preset openai-sdk (given)")
    assert (refused.match.presets, refused.matching) == (("none",), "")


def test_the_stored_codex_preset_matches_a_request_from_another_directory(serve: Serve) -> None:
    def codex_turn(cwd: str) -> dict[str, object]:
        context = f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"
        message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]}
        return {"model": "gpt-test", "input": [message], "stream": True, "prompt_cache_key": cwd}

    with serve.running(Script(default=reply(text("Hi.")))) as server:
        with httpx.Client(timeout=10, headers=CODEX_UPGRADE) as client:
            client.post(server.http_url + "/responses", json=codex_turn("/home/a/project")).read()
        server.settle()
        cassette = cassette_from_capture(server.exchanges, server.connections)
    assert cassette.match_presets == ["codex"]
    with FakeServer(source=CassetteSource(cassette)) as replay, httpx.Client(timeout=10) as client:
        elsewhere = client.post(replay.http_url + "/responses", json=codex_turn("/tmp/elsewhere"))
    assert elsewhere.status_code == 200 and "response.completed" in elsewhere.text


def test_an_unknown_stored_preset_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"rrkit_cassette": 1, "match_presets": ["codx"], "exchanges": []}))
    with pytest.raises(CassetteError) as raised:
        load_cassette(path)
    message = str(raised.value)
    assert str(path) in message and "match_presets" in message and "'codx'" in message and "codex" in message

"""The official `openai` npm SDK, the pinned 6.49.0 and the newest 7.60.0, walks every route of the resource
(tests/realclients/node_routes.cjs) against `rrkit serve`, through `rrkit record` in front of it, and against the
recorded cassette alone: the same answers each time, as the SDK parses them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rrkit.cassette import CassetteDeck
from rrkit.cassette.proxy import RecordingProxy

from ..errortrap import Serve

ROOT = Path(__file__).resolve().parents[2]
SDKS = {"6.49.0": ROOT / ".ci" / "node-sdk", "7.60.0": ROOT / ".ci" / "node-sdk-7.60.0"}
"""The pinned npm SDK (.ci/run installs it for the conformance tests) and the newest release."""
WALK = Path(__file__).with_name("node_routes.cjs")
EXPECTED = {
    "create": "completed",
    "retrieve": "completed",
    "input_items": ["message"],
    "input_tokens": "response.input_tokens",
    "compact": ["message", "compaction"],
    "background": "queued",
    "resumed": list(range(3, 13)),  # the default reply's events after sequence number 2
    "cancel_finished": 400,
    "delete": "done",
    "retrieve_deleted": 404,
    "conversation": "conversation",
    "conversation_items": ["user", "user", "assistant"],
    "conversation_deleted": True,
    "models": ["gpt-rrkit", "gpt-test", "gpt-5.5", "gpt-5.4", "gpt-5.4-mini"],
    "model_deleted": True,
}


def walk(version: str, base_url: str) -> dict[str, object]:
    node, modules = shutil.which("node"), SDKS[version] / "node_modules"
    if node is None:
        pytest.skip("node not found: the npm SDK needs it")
    if not (modules / "openai" / "package.json").exists():
        pytest.skip(
            f"openai {version} from npm is not installed: npm install --prefix {SDKS[version]} openai@{version}"
        )
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test", "NODE_PATH": str(modules)}
    done = subprocess.run([node, str(WALK)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("version", list(SDKS))
def test_the_npm_sdk_walks_every_route_direct_through_the_proxy_and_offline_from_the_cassette(
    serve: Serve, tmp_path: Path, version: str
) -> None:
    with serve.running() as server:
        assert walk(version, server.http_url) == EXPECTED
    cassette = tmp_path / "node-walk.json"
    with serve.running() as upstream, RecordingProxy(upstream.http_url) as proxy:
        serve.guard(proxy)
        assert walk(version, proxy.http_url) == EXPECTED
        proxy.save(cassette)
    with serve.running(source=CassetteDeck.open(cassette, "none").source()) as replay:
        assert walk(version, replay.http_url) == EXPECTED
        assert all(exchange.replayed for exchange in replay.settle().exchanges)

"""Remote compaction as the Codex binaries make it (the pinned 0.169.0 and the newest 0.171.0 alike), observed against
rrkit serve: with a provider whose `capabilities.remote_compaction = "v2"`, a context over the auto-compact limit is
compacted by a create (never `POST /v1/responses/compact`) whose input is the history then a `compaction_trigger`
item, marked `request_kind: compaction`; its answer must be exactly one `compaction` item, and the next request
carries the developer and user messages (each now with an `id`), then that item, in place of the model's
output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rrkit.protocol import is_warmup, routes
from rrkit.protocol.request import COMPACTION_TRIGGER, compacted_history
from rrkit.script import Match, Script, compaction, function_call, reply, text
from rrkit.server import FakeServer

from .codex import NEWEST, codex_of, run_codex, write_codex_home

pytestmark = pytest.mark.codex

OVER_THE_LIMIT = {"input_tokens": 900_000, "output_tokens": 10}
"""Usage far over the auto-compact limit set below: Codex compacts before it samples again."""
LIMITS = "model_auto_compact_token_limit = 5000\nmodel_context_window = 1000000\n"
REMOTE_V2 = '\n[model_providers.rrkit.capabilities]\nremote_compaction = "v2"\n'


def script() -> Script:
    compacted = reply(compaction("rrkit-summary"))
    first = reply(text("Let me check."), function_call("shell", {"command": ["echo", "hi"]}), usage=OVER_THE_LIMIT)
    return (
        Script()
        .add(compacted, when=Match(last_input_type=COMPACTION_TRIGGER), repeat=True)
        .add(first, times=1)
        .add(reply(text("Done."), usage={"input_tokens": 10, "output_tokens": 2}), repeat=True)
    )


@pytest.mark.parametrize("version", ["pinned", NEWEST])
def test_codex_compacts_remotely_with_a_compaction_trigger_create_and_keeps_the_user_messages(
    tmp_path: Path, version: str
) -> None:
    binary = codex_of(version)
    with FakeServer(script()) as server:
        home = write_codex_home(tmp_path / "home", server.http_url, websockets=False)
        config = (home / "config.toml").read_text(encoding="utf-8")
        (home / "config.toml").write_text(LIMITS + config + REMOTE_V2, encoding="utf-8")
        workdir = tmp_path / "work"
        workdir.mkdir()
        run = run_codex(binary, home=home, workdir=workdir, prompt="run echo hi, then say done")
        assert run.returncode == 0, run.stderr
        exchanges = [e for e in server.settle().exchanges if not is_warmup(e.wire_request or {})]
    assert all(exchange.route == routes.CREATE for exchange in exchanges)  # no /responses/compact
    inputs = [list((exchange.wire_request or {}).get("input") or []) for exchange in exchanges]
    [at] = [index for index, items in enumerate(inputs) if items and items[-1].get("type") == COMPACTION_TRIGGER]
    trigger = exchanges[at].wire_request or {}
    metadata = json.loads(trigger["client_metadata"]["x-codex-turn-metadata"])
    assert metadata["request_kind"] == "compaction"
    assert metadata["compaction"]["implementation"] == "responses_compaction_v2"
    history = inputs[at][:-1]
    assert [item.get("type") for item in history][-2:] == ["function_call", "function_call_output"]
    item = next(event.event["item"] for event in exchanges[at].events if event.type == "response.output_item.done")
    assert without_ids(inputs[at + 1]) == without_ids(compacted_history(history, item))  # kept ones get an `id`


def without_ids(items: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{key: value for key, value in item.items() if key != "id"} for item in items]

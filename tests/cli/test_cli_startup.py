"""What a plain `rrkit serve` loads before it answers: no cassette code, no YAML parser, no file locks, no pydantic
(nor after answering over both transports, until a body is wrong or a script is loaded), and a default script that
is valid although it is built without validation."""

from __future__ import annotations

import json
import subprocess
import sys

from rrkit.script import Script
from rrkit.script.loader import default_script

SERVE = """
import sys
from click.testing import CliRunner
from rrkit.cli import main
from rrkit.server.runner import FakeServer

FakeServer.serve_forever = lambda self, on_ready: None  # the command up to listening, without serving
result = CliRunner().invoke(main, ["serve", "--port", "0", "--quiet"])
assert result.exit_code == 0, result.output
print(" ".join(sorted(sys.modules)))
"""


def test_a_plain_serve_loads_no_cassette_module_no_yaml_and_no_file_lock() -> None:
    loaded = subprocess.run([sys.executable, "-c", SERVE], capture_output=True, text=True, check=True).stdout.split()
    assert "rrkit.server.runner" in loaded
    assert {name for name in loaded if name.startswith("rrkit.cassette")} == {
        "rrkit.cassette",
        "rrkit.cassette.recordmode",
    }
    assert not [name for name in loaded if name.split(".")[0] in ("yaml", "filelock", "pydantic", "pydantic_core")]


ANSWER = """
import asyncio, json, sys
import httpx, websockets
from rrkit.server import FakeServer

def pydantic_loaded():
    return any(name.split(".")[0] in ("pydantic", "pydantic_core") for name in sys.modules)

async def over_ws(url):
    async with websockets.connect(url + "/responses") as ws:
        await ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi", "generate": False}))
        while (event := json.loads(await ws.recv()))["type"] != "response.completed":
            pass
        target = event["response"]["id"]
        await ws.send(json.dumps({"type": "response.steer", "previous_response_id": target, "input": "hurry"}))
        return json.loads(await ws.recv())["type"]

with FakeServer() as server:
    answer = httpx.post(server.http_url + "/responses", json={"model": "m", "input": "hi", "stream": True})
    assert answer.status_code == 200 and "response.completed" in answer.text, answer.text
    steered = asyncio.run(over_ws(server.ws_url))
    print(json.dumps({"answered": steered, "pydantic": pydantic_loaded()}))
    wrong = httpx.post(server.http_url + "/responses", json={"model": "m", "stream": "yes"})
    print(json.dumps({"wrong": wrong.status_code, "pydantic": pydantic_loaded()}))
"""


def test_a_plain_server_answers_both_transports_without_pydantic_and_loads_it_for_a_wrong_body() -> None:
    lines = subprocess.run([sys.executable, "-c", ANSWER], capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )
    answered, wrong = (json.loads(line) for line in lines[:2])
    assert answered["pydantic"] is False and answered["answered"] == "response.steer.failed"
    assert wrong == {"wrong": 400, "pydantic": True}  # worded by the models, loaded on that first need


def test_the_default_script_is_what_validating_it_gives() -> None:
    script = default_script()
    assert Script.model_validate(script.model_dump(exclude_unset=True)) == script
    assert script.default is not None
    assert [item.model_dump() for item in script.default.output] == [
        {
            "type": "message",
            "text": "Hello from rrkit, the fake Responses server.",
            "chunks": 5,
            "phase": None,
            "annotations": [],
        }
    ]


def test_the_servers_own_warmup_reply_is_the_default_reply() -> None:
    from rrkit.script.models import Reply
    from rrkit.script.reply_plan import WARMUP_REPLY

    assert Reply() == WARMUP_REPLY

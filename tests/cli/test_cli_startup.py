"""What a plain `rrkit serve` loads before it answers: no cassette code, no YAML parser, no file locks, and a
default script that is valid although it is built without validation."""

from __future__ import annotations

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
    assert not [name for name in loaded if name.split(".")[0] in ("yaml", "filelock")]


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
    from rrkit.script.render import WARMUP_REPLY

    assert Reply() == WARMUP_REPLY

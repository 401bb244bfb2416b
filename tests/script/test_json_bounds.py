"""Every JSON document rrkit reads (scripts, scenarios, profiles, probes, a script posted to the admin API) is read
within a YAML file's bounds: a file of many small values is refused before its values are built, naming the file,
the bound and the line and column; nesting is bounded (never a RecursionError); a script of 100,000 recorded
events as JSON still loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rrkit.files.yaml_reader import YAML_MEMORY_FACTOR
from rrkit.script import Script, ScriptError, load_script, reply

from ..errortrap import Serve
from .test_yaml_bounds import KINDS

MB = 1_000_000
EMPTIES = "[],"


def small_values(path: Path, size: int) -> Path:
    path.write_text('{"responses": [' + EMPTIES * (size // len(EMPTIES)) + "[]]}\n", encoding="utf-8")
    return path


@pytest.mark.hostile
def test_a_50_mb_json_of_small_values_is_refused_within_its_memory_bound_as_every_kind_of_file(
    tmp_path: Path,
) -> None:
    big = small_values(tmp_path / "big.json", 50 * MB)
    small = small_values(tmp_path / "small.json", 8 * MB)
    ran = subprocess.run(
        [sys.executable, "-c", KINDS, str(big), str(small)], capture_output=True, text=True, timeout=600
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    kinds = ("script", "scenario", "profile", "probe")
    assert set(result["refused"]) == {"script big.json"} | {f"{kind} small.json" for kind in kinds}
    for key, message in result["refused"].items():
        name = key.split()[1]
        assert message.startswith(f"{tmp_path / name}: line 1, column "), message
        assert f"the bound of a JSON file ({YAML_MEMORY_FACTOR} times its" in message, message
    # Refused before any value is built: the text held (bytes and str) and the interpreter.
    bound = 3 * 50 * MB + 200 * MB
    assert result["peak"] < bound, f"peak {result['peak'] / MB:.0f} MB, bound {bound / MB:.0f} MB"


@pytest.mark.hostile
@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('{"responses": [' + "[" * 100_000 + "]" * 100_000 + "]}", "nested too deeply to read (over 500 levels)"),
        ('{"responses": [1' + "0" * 5000 + "]}", "an integer of 5001 digits"),
        ('{"responses": [NaN]}', "NaN is not a JSON number"),
    ],
)
def test_a_json_script_too_deep_or_with_what_json_cannot_hold_is_refused_naming_the_file(
    tmp_path: Path, body: str, said: str
) -> None:
    (path := tmp_path / "hostile.json").write_text(body, encoding="utf-8")
    with pytest.raises(ScriptError) as refused:
        load_script(path)
    assert str(refused.value).startswith(f"{path}: ") and said in str(refused.value)


@pytest.mark.hostile
def test_a_posted_json_script_of_small_values_or_too_deep_is_a_400_naming_the_bound(serve: Serve) -> None:
    server = serve(kept := Script(default=reply("kept")))
    bodies = {
        '{"responses": [' + EMPTIES * (8 * MB // len(EMPTIES)) + "[]]}": "the bound of a JSON file",
        '{"responses": ' + "[" * 100_000 + "]" * 100_000 + "}": "nested too deeply to read (over 500 levels)",
    }
    with httpx.Client(timeout=60, trust_env=False) as client:
        for body, said in bodies.items():
            posted = client.post(
                server.admin_url + "/script", content=body, headers={"content-type": "application/json"}
            )
            assert posted.status_code == 400 and said in posted.json()["error"]["message"], posted.text[:500]
    assert server.script == kept


def test_a_json_script_of_100000_recorded_events_loads(tmp_path: Path) -> None:
    events = [
        {
            "at": n / 1000,
            "event": {
                "type": "response.output_text.delta",
                "sequence_number": n,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": f"word{n} ",
            },
        }
        for n in range(100_000)
    ]
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps({"name": "recorded", "responses": [{"events": events}]}, indent=2), encoding="utf-8")
    loaded = load_script(path).responses[0].events
    assert loaded is not None and len(loaded) == 100_000
    assert loaded[-1].at == 99.999 and loaded[-1].event["delta"] == "word99999 "

"""Every YAML rrkit reads (scripts, scenarios, profiles, probes, a script posted to the admin API) is bounded as it is
read: a file of many small values is refused once its values would take more than YAML_MEMORY_FACTOR times its size
(the process's peak memory stays within that), naming the file, the bound and the line; a script of 100,000
recorded events still loads, and a validation error still names its line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from rrkit.files.yaml_reader import YAML_MEMORY_FACTOR
from rrkit.script import Script, ScriptError, load_script, reply

from ..errortrap import Serve

MB = 1_000_000
EMPTIES = "[],"
"""The smallest YAML value that costs most to hold: an empty list (three characters, a list and its lines)."""

KINDS = """
import json, resource, sys
from pathlib import Path
from rrkit.conform.profile import load_profile
from rrkit.conform.scenario import load_scenario
from rrkit.conform.server.probe import load_probe
from rrkit.protocol.exceptions import RRKitError
from rrkit.script import load_script

resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))  # a regression fails here, not the machine
refused = {}
for kind, load in (("script", load_script), ("scenario", load_scenario), ("profile", load_profile),
                   ("probe", load_probe)):
    for path in sys.argv[1:] if kind == "script" else sys.argv[2:]:
        try:
            load(Path(path))
        except RRKitError as error:
            refused[f"{kind} {Path(path).name}"] = str(error)[:600]
# this process's own peak (VmHWM): ru_maxrss starts at the parent's when it was spawned (vfork), a pytest worker's
peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"refused": refused, "peak": peak}))
"""


def small_values(path: Path, size: int) -> Path:
    path.write_text("responses: [" + EMPTIES * (size // len(EMPTIES)) + "]\n", encoding="utf-8")
    return path


@pytest.mark.hostile
def test_a_50_mb_yaml_of_small_values_is_refused_within_its_memory_bound_as_every_kind_of_file(
    tmp_path: Path,
) -> None:
    big = small_values(tmp_path / "big.yaml", 50 * MB)
    small = small_values(tmp_path / "small.yaml", 8 * MB)  # the other kinds: the same reader, sooner refused
    ran = subprocess.run(
        [sys.executable, "-c", KINDS, str(big), str(small)], capture_output=True, text=True, timeout=600
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    kinds = ("script", "scenario", "profile", "probe")
    assert set(result["refused"]) == {"script big.yaml"} | {f"{kind} small.yaml" for kind in kinds}
    for key, message in result["refused"].items():
        name = key.split()[1]
        assert message.startswith(f"{tmp_path / name}: line 1, column "), message
        assert f"the bound of a YAML file ({YAML_MEMORY_FACTOR} times its" in message, message
    # The stated bound (values) plus the text held twice (Python's and libyaml's) and the interpreter.
    bound = YAML_MEMORY_FACTOR * 50 * MB + 2 * 50 * MB + 200 * MB
    assert result["peak"] < bound, f"peak {result['peak'] / MB:.0f} MB, bound {bound / MB:.0f} MB"


@pytest.mark.hostile
def test_a_posted_yaml_script_of_small_values_is_a_400_naming_the_bound(serve: Serve) -> None:
    kept = Script(default=reply("kept"))
    server = serve(kept)
    body = "responses: [" + EMPTIES * (8 * MB // len(EMPTIES)) + "]\n"
    with httpx.Client(timeout=60, trust_env=False) as client:
        posted = client.post(server.admin_url + "/script", content=body, headers={"content-type": "application/yaml"})
    assert posted.status_code == 400, posted.text
    assert f"the bound of a YAML file ({YAML_MEMORY_FACTOR} times its" in posted.json()["error"]["message"]
    assert server.script == kept


def recorded(count: int) -> str:
    lines = ["name: recorded", "responses:", "  - events:"]
    for n in range(count):
        lines.append(f"      - at: {n / 1000:.3f}")
        lines.append(
            f"        event: {{type: response.output_text.delta, sequence_number: {n}, item_id: msg_1, "
            f'output_index: 0, content_index: 0, delta: "word{n} "}}'
        )
    return "\n".join(lines) + "\n"


def test_a_script_of_100000_recorded_events_loads(tmp_path: Path) -> None:
    path = tmp_path / "recorded.yaml"
    path.write_text(recorded(100_000), encoding="utf-8")
    events = load_script(path).responses[0].events
    assert events is not None and len(events) == 100_000
    assert events[-1].at == 99.999 and events[-1].event["delta"] == "word99999 "


def test_a_problem_deep_in_a_large_script_names_its_line(tmp_path: Path) -> None:
    text = recorded(20_000).replace("- at: 12.345", "- at: -1")
    (path := tmp_path / "recorded.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ScriptError, match=r"line 24694, responses\[0\]\.events\[12345\]\.at: "):
        load_script(path)


def test_merge_keys_and_anchors_read_as_pyyaml_reads_them(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    text = textwrap.dedent(
        """\
        base: &base {x: 1, y: [a, b]}
        over: {<<: *base, y: 3}
        many: {<<: [{a: 1}, {a: 2, b: 2}], c: 3}
        shared: *base
        plain: [1, 2.5, null, true, 2020-01-01, '3', !!str 4, ~, 0x10, 1e3]
        """
    )
    from rrkit.files.yaml_reader import read_yaml

    data, lines = read_yaml(text)
    assert data == yaml.safe_load(text)
    assert lines is not None and lines.line_of(("many", "c")) == 3 and lines.line_of(("plain", 4)) == 5

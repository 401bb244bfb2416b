"""Per-test cost of the pytest fixtures beside pytest-recording's replay of the same request. One pytest process
runs, interleaved, tests that each make one streaming request (through one OpenAI SDK client, and through one
httpx client, each shared by all tests): with `rrkit_server` (a fresh server per test), with
`rrkit_shared_server`, and with `@pytest.mark.vcr` replaying a VCR cassette of the same answer (record mode
none); and plain tests doing nothing. A conftest hook times each test's whole protocol (setup + call +
teardown), in wall-clock time and in the process's CPU time (all threads: the server's too, steadier on a shared
machine); the medians per kind are printed (the first tests of each kind are left out: imports).

Run: python -m benchmarks.bench_plugin_overhead [--quick] [--rounds N] [--json]
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import yaml

from benchmarks.common import Profile, Row, at_most, child_env, median, run_main

BENCH = "plugin_overhead"
BODY = {"model": "m", "input": "hi", "stream": True}
VCR_URL = "http://api.bench.invalid/v1/responses"
KINDS = ("rrkit", "shared", "vcr", "rrkit-sdk", "shared-sdk", "vcr-sdk", "plain")
SKIPPED = 3  # the first tests of each kind: imports and first connections

CONFTEST = """
import json
import os
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DURATIONS = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, cpu = time.perf_counter(), time.process_time()
    yield
    taken = (time.perf_counter() - start, time.process_time() - cpu)
    DURATIONS.setdefault(item.name.rsplit("__", 1)[1], []).append(taken)


def pytest_sessionfinish(session):
    (HERE / "durations.json").write_text(json.dumps(DURATIONS))


@pytest.fixture(scope="module")
def vcr_config():
    return {"record_mode": "none"}


@pytest.fixture(scope="module")
def vcr_cassette_dir():
    return str(HERE / "cassettes")


@pytest.fixture
def default_cassette_name():
    return "replay"
"""

HEADER = """
import httpx
import pytest
from rrkit.script import reply

BODY = {body!r}
client = httpx.Client()  # one client for all tests: a new httpx client costs tens of ms (TLS context)
sdk = None
try:
    from openai import OpenAI

    sdk = OpenAI(api_key="sk-bench", base_url="http://unused.invalid/v1", max_retries=0)  # one, as `client`
except ImportError:
    pass


def sdk_request(base_url):  # one streamed `responses.create`; `with_options` keeps the SDK's HTTP client
    events = list(sdk.with_options(base_url=base_url).responses.create(model="m", input="hi", stream=True))
    assert events[-1].type == "response.completed"
"""

TESTS = {
    "rrkit": """
def test_{index:04d}__rrkit(rrkit_server):
    rrkit_server.add(reply("hi"))
    assert "response.completed" in client.post(rrkit_server.http_url + "/responses", json=BODY).text
""",
    "shared": """
def test_{index:04d}__shared(rrkit_shared_server):
    rrkit_shared_server.add(reply("hi"))
    assert "response.completed" in client.post(rrkit_shared_server.http_url + "/responses", json=BODY).text
""",
    "vcr": """
@pytest.mark.vcr
def test_{index:04d}__vcr():
    assert "response.completed" in client.post({url!r}, json=BODY).text
""",
    "rrkit-sdk": """
def test_{index:04d}__rrkit-sdk(rrkit_server):
    rrkit_server.add(reply("hi"))
    sdk_request(rrkit_server.http_url)
""",
    "shared-sdk": """
def test_{index:04d}__shared-sdk(rrkit_shared_server):
    rrkit_shared_server.add(reply("hi"))
    sdk_request(rrkit_shared_server.http_url)
""",
    "vcr-sdk": """
@pytest.mark.vcr
def test_{index:04d}__vcr-sdk():
    sdk_request({url!r}.rsplit("/", 1)[0])
""",
    "plain": """
def test_{index:04d}__plain():
    assert BODY
""",
}


def vcr_cassette() -> str:
    """A VCR cassette of the answer rrkit's server gives the request (one interaction, SSE body)."""
    from rrkit.script import Script, reply
    from rrkit.server import FakeServer

    with FakeServer(Script(default=reply("hi"))) as server:
        answer = httpx.post(server.http_url + "/responses", json=BODY)
    interaction = {
        "request": {"body": json.dumps(BODY), "headers": {}, "method": "POST", "uri": VCR_URL},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": [answer.headers["content-type"]]},
            "body": {"string": answer.text},
        },
    }
    return yaml.safe_dump({"interactions": [interaction], "version": 1})


def vcr_installed() -> bool:
    """pytest-recording and vcrpy, the baseline: the `bench` extra, not a dependency."""
    return all(importlib.util.find_spec(name) is not None for name in ("vcr", "pytest_recording"))


def per_test_ms(per_kind: int) -> dict[str, tuple[float, float]]:
    """Median milliseconds per test of each kind (wall clock, process CPU), in one pytest process, kinds
    interleaved (order rotated)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pytest.ini").write_text("[pytest]\n")
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "cassettes").mkdir()
        (folder / "cassettes" / "replay.yaml").write_text(vcr_cassette())
        source = [HEADER.format(body=BODY)]
        index = 0
        sdk = importlib.util.find_spec("openai") is not None
        vcr = vcr_installed()
        for round_ in range(per_kind):
            shift = round_ % len(KINDS)
            for kind in KINDS[shift:] + KINDS[:shift]:
                if (kind.endswith("-sdk") and not sdk) or (kind.startswith("vcr") and not vcr):
                    continue
                source.append(TESTS[kind].format(index=index, url=VCR_URL).replace("-sdk(", "_sdk("))
                index += 1
        (folder / "test_bench.py").write_text("".join(source))
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_bench.py"],
            cwd=folder,
            capture_output=True,
            text=True,
            env=child_env(),
        )
        if result.returncode != 0:
            raise RuntimeError(f"the fixture benchmark's tests failed:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
        durations: dict[str, list[tuple[float, float]]] = json.loads((folder / "durations.json").read_text())
    return {
        kind.replace("_", "-"): (
            median(wall for wall, _ in values[SKIPPED:]) * 1000,
            median(cpu for _, cpu in values[SKIPPED:]) * 1000,
        )
        for kind, values in durations.items()
    }


def rows(profile: Profile) -> list[Row]:
    per_kind = 25 if profile.quick else 80
    ms = per_test_ms(per_kind)
    first = f"median of {per_kind - SKIPPED} per kind; a plain test costs {ms['plain'][0]:.2f} ms; "
    out = []
    for suffix, how in (("-sdk", "one OpenAI SDK request"), ("", "one httpx request")):
        if f"rrkit{suffix}" not in ms:
            continue
        baseline, baseline_cpu = ms.get(f"vcr{suffix}", (None, None))
        named = "pytest-recording replay of the same request"
        if baseline is None:
            named = "pytest-recording NOT INSTALLED: baseline skipped (pip install -e '.[bench]')"
        for kind, fixture, target in (("rrkit", "rrkit_server", 1.0), ("shared", "rrkit_shared_server", 1.0)):
            wall, cpu = ms[f"{kind}{suffix}"]
            versus = f" vs {baseline_cpu:.2f} ms, {cpu / baseline_cpu:.2f}x" if baseline_cpu else ""
            out.append(
                Row(
                    f"pytest per-test cost, {fixture} + {how}",
                    wall,
                    baseline,
                    "ms",
                    target=at_most(target),
                    baseline_name=named,
                    note=f"{first}process CPU {cpu:.2f} ms{versus}",
                    bench=BENCH,
                )
            )
            first = ""
    return out


def main() -> None:
    run_main(rows, __doc__)


if __name__ == "__main__":
    main()

"""rrkit as a user gets it: the wheel built from this checkout, installed into a fresh virtualenv, used from a
directory outside the repository (no `fixtures/` beside it, no editable install)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..docs_text import code_after

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.packaging  # a build and a fresh virtualenv: run by .ci/run beside the matrix


def _run(*command: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The `bin/` of a fresh virtualenv holding the wheel (with the `pytest` extra) and the openai SDK."""
    where = tmp_path_factory.mktemp("wheel")
    built = _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", where / "dist", ROOT, cwd=where)
    if built.returncode != 0:
        pytest.skip(f"cannot build the wheel here (no build backend from the package index?): {built.stderr[-400:]}")
    (wheel,) = (where / "dist").glob("rrkit-*.whl")
    venv.create(where / "venv", with_pip=True)
    bin_ = where / "venv" / "bin"
    got = _run(bin_ / "pip", "install", "-q", f"{wheel}[pytest]", "openai", cwd=where)
    if got.returncode != 0:
        pytest.skip(f"cannot install the wheel's dependencies here (no package index?): {got.stderr[-400:]}")
    yield bin_


def test_the_installed_wheel_runs_the_demo_outside_the_repository(installed: Path, tmp_path: Path) -> None:
    demo = _run(installed / "rrkit", "demo", cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "runs ended as their scripts expect" in demo.stdout
    assert str(ROOT) not in demo.stdout  # the shipped scripts, not the checkout's


def test_the_installed_wheel_judges_the_reference_client_on_its_shipped_scenarios(
    installed: Path, tmp_path: Path
) -> None:
    listed = _run(installed / "rrkit", "conform", "--list", cwd=tmp_path)
    assert listed.returncode == 0 and "drop-mid-stream" in listed.stdout, listed.stdout + listed.stderr
    judged = _run(installed / "rrkit", "conform", "--only", "tool-loop", "--only", "http-500", "--json", cwd=tmp_path)
    assert judged.returncode == 0, judged.stdout + judged.stderr
    report = json.loads(judged.stdout)
    assert report["tool"] == "conform" and report["ok"] is True
    assert len(report["cases"]) == 4  # two scenarios, each over both transports


def test_the_installed_wheel_passes_the_pytest_guide_example(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "test_weather.py").write_text(code_after("A complete example to paste into `test_weather.py`:"))
    first = _run(
        installed / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--snapshot-update", cwd=tmp_path
    )
    assert first.returncode == 0, first.stdout + first.stderr
    again = _run(installed / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert again.returncode == 0 and "3 passed" in again.stdout, again.stdout + again.stderr


def test_the_installed_wheel_serves_a_shipped_script_by_name(installed: Path, tmp_path: Path) -> None:
    server = subprocess.Popen(
        [installed / "rrkit", "serve", "--script", "fixture:tool-loop", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = next(line.split()[-1] for line in server.stdout if "HTTP base URL" in line)
        answer = httpx.post(url + "/responses", json={"model": "m", "input": "weather?", "stream": True}, timeout=30)
        assert answer.status_code == 200 and "function_call" in answer.text
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    assert server.returncode == 0


def test_the_installed_wheel_states_its_licence_authors_and_classifiers_and_ships_the_licence(installed: Path) -> None:
    shown = _run(installed / "python", "-c", SHOW_METADATA, cwd=installed)
    assert shown.returncode == 0, shown.stderr
    metadata = json.loads(shown.stdout)
    assert metadata["license"] == "MIT" and "License :: OSI Approved :: MIT License" in metadata["classifiers"]
    assert metadata["author"] and "Framework :: Pytest" in metadata["classifiers"]
    assert any(name.endswith("LICENSE") for name in metadata["files"])
    assert "Permission is hereby granted" in (ROOT / "LICENSE").read_text()


SHOW_METADATA = """
import importlib.metadata, json
meta = importlib.metadata.metadata("rrkit")
files = [str(path) for path in importlib.metadata.files("rrkit") or ()]
print(json.dumps({"license": meta.get("License"), "author": meta.get("Author") or meta.get("Author-email"),
                  "classifiers": meta.get_all("Classifier"), "files": files}))
"""


def test_the_installed_wheel_ships_the_schemas_an_editor_reads(installed: Path, tmp_path: Path) -> None:
    for name in ("scenario", "report"):  # a file users write; the one every judge writes
        where = _run(installed / "rrkit", "schema", name, "--path", cwd=tmp_path)
        printed = _run(installed / "rrkit", "schema", name, cwd=tmp_path)
        assert where.returncode == 0 and printed.returncode == 0, where.stderr + printed.stderr
        shipped = Path(where.stdout.strip())
        assert str(ROOT) not in str(shipped) and shipped.read_text() == printed.stdout
        assert json.loads(printed.stdout)["title"] == f"rrkit {name}"

"""The recipe files as Docker, Docker Compose and GitHub Actions read them, checked without those programs (Docker
cannot build images on the machines these tests run on): the Dockerfile's instructions, the compose file and the
action as YAML, the shell scripts' syntax in the shells they name."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .recipes import (
    ACTION,
    COMPOSE,
    DOCKERFILE,
    ENTRYPOINT,
    ROOT,
    action,
    compose,
    dockerfile_instructions,
    healthcheck_command,
)

STAGE = re.compile(r"^(?P<image>\S+)(?:\s+AS\s+(?P<name>\S+))?$", re.I)


def _stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions, stage by stage (each starting with its FROM)."""
    stages: list[list[tuple[str, str]]] = []
    for keyword, rest in dockerfile_instructions():
        if keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((keyword, rest))
    return stages


def test_the_dockerfile_builds_the_wheel_from_the_checkout_and_installs_it_in_a_slim_final_stage() -> None:
    build, final = _stages()
    assert [STAGE.match(stage[0][1]).groupdict() for stage in (build, final)] == [  # type: ignore[union-attr]
        {"image": "python:3.11-slim", "name": "build"},
        {"image": "python:3.11-slim", "name": None},
    ]
    copied = [rest.split()[:-1] for keyword, rest in build if keyword == "COPY"]
    assert all((ROOT / source).exists() for sources in copied for source in sources)  # the build context: the root
    assert {"pyproject.toml", "README.md", "toolkit"} <= {source for sources in copied for source in sources}
    assert any(keyword == "RUN" and "pip wheel" in rest and "--wheel-dir /wheels" in rest for keyword, rest in build)
    (install,) = [rest for keyword, rest in final if keyword == "RUN" and "pip install" in rest]
    assert "from=build,source=/wheels" in install and "/wheels/*.whl" in install


def test_the_image_runs_rrkit_as_a_non_root_user_on_port_8080_with_the_entrypoint_and_a_python_health_check() -> None:
    _, final = _stages()
    keywords = dict(final)
    user = keywords["USER"].split(":", 1)[0]
    assert user not in ("root", "0") and (not user.isdigit() or int(user) >= 1000)
    assert keywords["EXPOSE"] == "8080"
    assert "RRKIT_PORT=8080" in keywords["ENV"] and "RRKIT_READY_FILE=/tmp/rrkit.ready" in keywords["ENV"]
    entrypoint = json.loads(keywords["ENTRYPOINT"])
    copies = [rest.split() for keyword, rest in final if keyword == "COPY"]
    assert ["deploy/container/entrypoint.sh", *entrypoint] in copies
    assert "chmod 0755 " + entrypoint[0] in " ".join(rest for keyword, rest in final if keyword == "RUN")
    check = healthcheck_command()  # exec form: no shell, and the slim image has no curl
    assert check[:2] == ["python", "-c"] and "/__rrkit/health" in check[2] and "http://127.0.0.1:" in check[2]
    assert not any(word in keywords["HEALTHCHECK"] for word in ("curl", "wget"))
    assert keywords["HEALTHCHECK"].startswith("--interval=")


def test_the_compose_file_builds_the_image_and_starts_the_client_once_rrkit_is_healthy() -> None:
    services = compose()["services"]
    rrkit, client = services["rrkit"], services["client"]
    context = (COMPOSE.parent / rrkit["build"]["context"]).resolve()
    assert context == ROOT and (context / rrkit["build"]["dockerfile"]) == DOCKERFILE
    assert rrkit["healthcheck"]["test"] == ["CMD", *healthcheck_command()]  # the image's check, word for word
    assert client["image"] == "python:3.11-slim"
    assert client["depends_on"] == {"rrkit": {"condition": "service_healthy"}}
    assert client["environment"]["OPENAI_BASE_URL"] == "http://rrkit:8080/v1"
    # Compose fills in `$NAME` everywhere in the file: the commands and checks hold none
    assert "$" not in COMPOSE.read_text(encoding="utf-8").replace("$$", "")


def _expressions(value: object) -> list[str]:
    """Every `${{ ... }}` in a value of action.yml, and every `if:` (an expression without the braces)."""
    if isinstance(value, dict):
        found = [str(inner) for key, inner in value.items() if key == "if"]
        return found + [text for inner in value.values() for text in _expressions(inner)]
    if isinstance(value, list):
        return [text for inner in value for text in _expressions(inner)]
    return re.findall(r"\$\{\{(.*?)\}\}", value) if isinstance(value, str) else []


def test_the_action_is_a_composite_whose_steps_use_only_its_inputs_and_export_what_start_sh_writes() -> None:
    spec = action()
    assert spec["runs"]["using"] == "composite"
    steps = spec["runs"]["steps"]
    assert all(step.get("shell") == "bash" for step in steps if "run" in step)  # a composite's run needs its shell
    expressions = _expressions(spec)
    used_inputs = {name for text in expressions for name in re.findall(r"\binputs\.([\w-]+)", text)}
    assert used_inputs == set(spec["inputs"])  # each input used, none used that is not declared
    assert {"install", "script", "port", "args", "timeout"} <= set(spec["inputs"])
    assert spec["inputs"]["port"]["default"] == "0" and spec["inputs"]["install"]["default"] == ""
    start = (ACTION / "start.sh").read_text(encoding="utf-8")
    ids = {step.get("id") for step in steps}
    for name, output in spec["outputs"].items():
        step, key = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.(\w+) \}\}", output["value"]).groups()  # type: ignore[union-attr]
        assert step in ids and f'echo "{key}=' in start, name
    for step in steps:
        for script in re.findall(r"\$GITHUB_ACTION_PATH/([\w.]+)", step.get("run", "")):
            assert (ACTION / script).is_file(), script


@pytest.mark.parametrize(
    ("script", "shell"),
    [(ENTRYPOINT, "sh"), (ENTRYPOINT, "dash"), (ACTION / "start.sh", "bash"), (ACTION / "stop.sh", "bash")],
    ids=["entrypoint.sh-sh", "entrypoint.sh-dash", "start.sh-bash", "stop.sh-bash"],
)
def test_each_shell_script_parses_in_the_shell_it_names(script: Path, shell: str) -> None:
    """The entrypoint is POSIX sh (dash, where there is one, is the strictest at hand); the action's are bash."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} on PATH to parse {script.name} with")
    first = script.read_text(encoding="utf-8").splitlines()[0]
    assert first == ("#!/bin/sh" if script == ENTRYPOINT else "#!/usr/bin/env bash")
    parsed = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
    assert script.stat().st_mode & 0o111  # executable, as the image's entrypoint is run


def test_the_service_guide_is_in_the_navigation_beside_the_serve_guide_and_names_the_sessions_section() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    (guides,) = [
        section["How-to guides"] for section in nav if isinstance(section, dict) and "How-to guides" in section
    ]
    assert guides[guides.index("guide/serve.md") + 1] == "guide/service.md"
    guide = (ROOT / "docs" / "guide" / "service.md").read_text(encoding="utf-8")
    assert "## Sharing one server between tests" in guide and "](serve.md#sessions)" in guide
    for path in ("deploy/container/Dockerfile", "deploy/compose.yaml", ".github/actions/rrkit-serve"):
        assert f"`{path}" in guide and (ROOT / path).exists()

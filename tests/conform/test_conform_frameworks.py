"""The agent frameworks of the conformance page, as it says (docs/conformance.md, "Agent frameworks"): each one's
client (tests/conform/frameworks/, in the virtualenv its requirements file makes) completes a plain turn and a tool
loop, and breaks the must the page explains for it, from the framework's own source. Skipped, with the command that
installs them, where the frameworks' virtualenvs are missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from rrkit.conform import CommandClient, run

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).parent / "frameworks"

CASES = [
    ("frameworks", "langchain_client.py", "ends-before-terminal", "answered"),
    ("frameworks", "pydantic_ai_client.py", "ends-before-terminal", "answered"),
    ("frameworks", "agents_client.py", "stall", "ends on its own"),
    ("frameworks", "litellm_client.py", "incomplete", "answered"),
    ("frameworks-llamaindex", "llamaindex_client.py", "sse-error-event", "answered"),
]


@pytest.mark.matrix
@pytest.mark.parametrize(("venv", "client", "scenario", "broken"), CASES, ids=[case[1] for case in CASES])
def test_a_framework_completes_a_tool_loop_and_breaks_the_must_the_page_explains(
    venv: str, client: str, scenario: str, broken: str
) -> None:
    python = ROOT / ".ci" / venv / "bin" / "python"
    requirements = "requirements-llamaindex.txt" if venv.endswith("llamaindex") else "requirements.txt"
    if not python.exists():
        pytest.skip(
            f"no .ci/{venv}: python3 -m venv .ci/{venv} && .ci/{venv}/bin/pip install -r "
            f"tests/conform/frameworks/{requirements}"
        )
    judged = CommandClient([str(python), str(CLIENTS / client)])
    # LiteLLM and LlamaIndex take seconds to import on a busy machine: a run stopped early would hold `answered`
    report = run(judged, only=("text", "tool-loop", scenario), transports=("http",), timeout=30.0)
    failed = [(verdict.scenario, verdict.expectation) for verdict in report.failures]
    assert failed == [(scenario, broken)], [verdict.seen for verdict in report.failures]

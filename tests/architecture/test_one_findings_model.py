"""One findings model (rrkit.report): `Finding`, `Severity` and `Report` are each defined once in the package, in
rrkit.report.model, and no other module defines a type of those names: a judge may not define its own findings
type; it reports with the model's, which every writer (JSON, JUnit, HTML, annotations, terminal) knows."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import rrkit
from rrkit import report

PACKAGE = Path(rrkit.__file__).parent
MODEL = "rrkit.report.model"
NAMES = ("Finding", "Severity", "Report")
JUDGES = (
    "rrkit.tools.validate",
    "rrkit.tools.diff_report",
    "rrkit.tools.replay",
    "rrkit.conform.report",
    "rrkit.conform.server.report",
    "rrkit.conform.server.found",
    "rrkit.conform.server.checks",
)
"""The modules that judge and report: each uses the model's types under their own names."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _definitions() -> dict[str, list[str]]:
    """Each name of NAMES -> every `module:line` that defines a type by it: a class statement (nested ones too), or
    a type made by a call (`Severity = StrEnum("Severity", ...)`, `Finding = make_dataclass(...)`)."""
    found: dict[str, list[str]] = {name: [] for name in NAMES}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef) and node.name in NAMES:
                found[node.name].append(f"{module}:{node.lineno}")
            elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id in NAMES:
                        found[target.id].append(f"{module}:{node.lineno}")
    return found


def test_the_walk_reads_every_module_of_the_package() -> None:
    modules = {_module_name(path) for path in PACKAGE.rglob("*.py")}
    assert {MODEL, *JUDGES, "rrkit.cli.conformance", "rrkit.tools.show"} <= modules and len(modules) > 100


@pytest.mark.parametrize("name", NAMES)
def test_each_findings_type_is_defined_once_in_the_report_model(name: str) -> None:
    places = _definitions()[name]
    assert [place.split(":")[0] for place in places] == [MODEL], (
        f"{name} is defined at {places}: a judge reports with rrkit.report.{name}, it may not define its own"
    )


@pytest.mark.parametrize("judge", JUDGES)
def test_a_judge_s_findings_types_are_the_model_s(judge: str) -> None:
    module = importlib.import_module(judge)
    for name in NAMES:
        bound = vars(module).get(name)
        assert bound is None or bound is getattr(report, name), f"{judge}.{name} is not rrkit.report.{name}"
    assert any(vars(module).get(name) is getattr(report, name) for name in NAMES), f"{judge} reports no findings"

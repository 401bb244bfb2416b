"""The pytest plugin is a thin front over public names: it imports no private helper of the modules it loads."""

from __future__ import annotations

import ast
from pathlib import Path

import rrkit.pytest_plugin

PLUGIN = Path(rrkit.pytest_plugin.__file__)


def test_the_plugin_imports_no_private_name_of_another_module() -> None:
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(ast.parse(PLUGIN.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []


def test_the_plugins_names_still_load_from_it() -> None:
    assert rrkit.pytest_plugin.safe_name("a b") == "a_b"
    assert rrkit.pytest_plugin.RRKitConfig().record_mode.value == "none"
    assert rrkit.pytest_plugin.RRKitServer.__name__ == "RRKitServer"

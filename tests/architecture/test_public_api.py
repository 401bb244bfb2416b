"""The public API is what the documentation lists (docs/reference/api.md): each package exports exactly the names
its line there names, and each of them imports."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from ..docs_text import page

SECTION = page("reference/api.md").split("<!-- public-api: start -->", 1)[1].split("<!-- public-api: end -->", 1)[0]


def _documented() -> dict[str, set[str]]:
    """Package -> the names its entry of the API page's list lists (its sub-bullets included)."""
    found: dict[str, set[str]] = {}
    package = ""
    for line in SECTION.splitlines():
        top = re.match(r"- `(rrkit[\w.]*)`:(.*)", line)
        if top:
            package, rest = top.group(1), top.group(2)
        elif line.startswith("  - ") and package:
            rest = line.split(":", 1)[1] if ":" in line else ""
        else:
            continue
        names = {name for name in re.findall(r"`([A-Za-z_][\w]*)`", rest)}
        found.setdefault(package, set()).update(names)
    return found


DOCUMENTED = _documented()


@pytest.mark.parametrize("package", sorted(DOCUMENTED))
def test_each_package_exports_exactly_what_the_api_page_lists(package: str) -> None:
    module = importlib.import_module(package)
    exported = set(module.__all__)
    assert exported == DOCUMENTED[package], {
        "exported, not in the API page": sorted(exported - DOCUMENTED[package]),
        "in the API page, not exported": sorted(DOCUMENTED[package] - exported),
    }
    for name in exported:
        assert getattr(module, name) is not None


def test_every_package_with_an_export_list_is_documented() -> None:
    root = Path(importlib.import_module("rrkit").__file__ or "").parent
    packages = {"rrkit", "rrkit.pytest_plugin"} | {
        "rrkit." + ".".join(init.parent.relative_to(root).parts)
        for init in root.glob("*/**/__init__.py")
        if "__all__" in init.read_text("utf-8")
    }
    assert packages == set(DOCUMENTED)

"""Every test of `rrkit conform` is a hostile test (tests/hostile.py): whatever the judged client or server does,
the judge shows no traceback and leaves no process behind."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.hostile)

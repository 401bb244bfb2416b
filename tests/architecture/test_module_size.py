"""The house rule on size (CONTRIBUTING.md): every module of the package is at most 500 lines. (Its rule on
complexity, no function past 15, is ruff's C901, set in pyproject.toml and run by `.ci/run`.)"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "toolkit" / "rrkit"
MOST_LINES = 500


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _over(root: Path) -> dict[str, int]:
    """The modules under `root` over `MOST_LINES` lines, named from `root`'s folder, with their line counts."""
    modules = sorted(root.rglob("*.py"))
    return {path.relative_to(root.parent).as_posix(): count for path in modules if (count := _lines(path)) > MOST_LINES}


def test_every_module_of_the_package_is_at_most_500_lines() -> None:
    assert len(list(PACKAGE.rglob("*.py"))) > 100  # the walk finds the package
    over = _over(PACKAGE)
    assert not over, (
        f"modules over {MOST_LINES} lines (the house rule, CONTRIBUTING.md): {over}; split each along a seam that "
        "reads naturally, a module named for what it holds"
    )


def test_a_module_over_500_lines_is_named_with_its_count(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "long.py").write_text("x = 1\n" * (MOST_LINES + 1), encoding="utf-8")
    (package / "short.py").write_text("x = 1\n" * MOST_LINES, encoding="utf-8")
    assert _over(package) == {"pkg/sub/long.py": MOST_LINES + 1}

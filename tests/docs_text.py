"""The documentation as the tests read it: the README and every page of the site in `docs/`, and the code blocks
in them (found by the text just before them, wherever the page is)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DOCUMENTS: dict[Path, str] = {
    path: path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
}


def page(relative: str) -> str:
    """One page of the site (`reference/api.md`), or the README (`README.md`)."""
    return (ROOT / relative if relative == "README.md" else DOCS / relative).read_text(encoding="utf-8")


def code_after(marker: str, language: str = "python", *, in_page: str | None = None) -> str:
    """The first `language` code block after `marker`, in the one document that holds the marker (or in `in_page`,
    a page as `page` names it)."""
    holding = [page(in_page)] if in_page else [text for text in DOCUMENTS.values() if marker in text]
    assert len(holding) == 1, f"{marker!r} is in {len(holding)} documents, where one was expected"
    return holding[0].split(marker, 1)[1].split(f"```{language}\n", 1)[1].split("```", 1)[0]

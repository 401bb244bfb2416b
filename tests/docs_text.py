"""The documentation as the tests read it: the README and every page of the site in `docs/`, and the code blocks
in them (found by the text just before them, wherever the page is)."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text."""

    document: Path
    line: int
    language: str
    text: str

    def __str__(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line} ({self.language or 'no language'})"


def blocks() -> list[Block]:
    """Every fenced code block of the README and the site, in order."""
    found: list[Block] = []
    for document, text in DOCUMENTS.items():
        lines = text.split("\n")
        start: int | None = None
        for number, line in enumerate(lines):
            if not line.startswith("```"):
                continue
            if start is None:
                start, language = number, line[3:].strip()
            else:
                found.append(Block(document, start + 1, language, "\n".join(lines[start + 1 : number]) + "\n"))
                start = None
    return found

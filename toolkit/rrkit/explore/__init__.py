"""`rrkit explore`: a client run on streams mutated from well-formed ones (events dropped, repeated, reordered,
renumbered, their ids switched, unknown types and fields, terminal events out of place or failed; bytes re-chunked,
cut, stalled), each distinct way it breaks a must shrunk to the fewest operators and events and written as a
script. The names below load on first use (PEP 562)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..drive import ClientUnderTest
    from ..protocol.vocabulary import Transport
    from ..report import Report
    from .budget import Budget
    from .case import Case
    from .judge import MUSTS, Broken
    from .operators import OPERATORS, Op
    from .search import Exploration
    from .seeds import Seed, catalogue_seeds, default_seeds, seeds_from, shipped_seeds
    from .stream import Expected, Stream, Verdict, expected

_HOMES = {
    ".case": ("Case",),
    ".judge": ("MUSTS", "Broken"),
    ".operators": ("OPERATORS", "Op"),
    ".budget": ("Budget",),
    ".search": ("Exploration",),
    ".seeds": ("Seed", "catalogue_seeds", "default_seeds", "seeds_from", "shipped_seeds"),
    ".stream": ("Expected", "Stream", "Verdict", "expected"),
}
__all__ = [
    "MUSTS",
    "OPERATORS",
    "Broken",
    "Budget",
    "Case",
    "Expected",
    "Exploration",
    "Op",
    "Seed",
    "Stream",
    "Verdict",
    "catalogue_seeds",
    "check",
    "default_seeds",
    "expected",
    "run",
    "seeds_from",
    "shipped_seeds",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, [name for name in __all__ if name not in ("check", "run")])


def run(
    client: ClientUnderTest | Sequence[str] | Callable[[dict[str, str]], object] | None = None,
    *,
    seeds: Sequence[Seed] | None = None,
    transports: Sequence[Transport] = ("http", "ws"),
    seed: int = 0,
    budget: Budget | None = None,
    out: Path | None = None,
    command: str = "",
    on_case: Callable[[Case, Broken | None], None] | None = None,
) -> tuple[Exploration, Report]:
    """Explore `client` (rrkit's reference client by default; a command as a list of strings; a Python callable
    given a command's environment, as `rrkit conform` runs it) from `seeds` (rrkit's own streams and the catalogue's
    first replies by default) over `transports`, seeded with `seed`, within `budget`; each finding's script is
    written into `out` when given. Returns the exploration and its report."""
    from ..drive import as_client
    from .budget import Budget
    from .report import Written, to_report, write_findings
    from .search import search
    from .seeds import default_seeds

    judged = as_client(client)
    exploration = search(
        judged, seeds or default_seeds(), transports, seed=seed, budget=budget or Budget(), on_case=on_case
    )
    said = command or judged.describe()
    written = (
        write_findings(exploration, out, said)
        if out is not None
        else [Written(found, None) for found in exploration.findings]
    )
    return exploration, to_report(exploration, judged.describe(), written)


def check(
    client: ClientUnderTest | Sequence[str] | Callable[[dict[str, str]], object] | None = None,
    *,
    out: Path | None = None,
    **options: Any,
) -> Exploration:
    """`run`, as a test asserts it: the exploration when nothing is found, else an AssertionError listing each
    finding (its must, what was seen, its minimal script when `out` is given). What `rrkit_explore` calls."""
    exploration, report = run(client, out=out, **options)
    if report.ok:
        return exploration
    lines = [f"rrkit explore: {report.summary}"]
    lines += [f"  - {finding}" for finding in report.findings]
    raise AssertionError("\n".join(lines))

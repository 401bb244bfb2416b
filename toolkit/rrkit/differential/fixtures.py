"""`rrkit compare-codex`: a folder of scripts run by Codex and by the reference client, and where they differ."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..protocol.headers import TURN_STATE_HEADER
from ..protocol.vocabulary import TRANSPORTS
from ..script.loader import load_script
from .observation import WATCHED_HEADERS, Observation
from .run import observe_codex, observe_reference
from .settings import DEFAULT_BUDGETS, Budgets

ASPECTS: dict[str, Callable[[Observation], str]] = {
    "attempts": lambda seen: str(len(seen.attempts)),
    "transports": lambda seen: " ".join(attempt.transport for attempt in seen.attempts) or "-",
    "kinds": lambda seen: " ".join(attempt.kind for attempt in seen.attempts) or "-",
    "waits": lambda seen: " ".join(attempt.wait for attempt in seen.attempts[1:]) or "-",
    "outcome": lambda seen: seen.outcome,
    "headers missing": lambda seen: _missing_headers(seen),
}
"""What is compared, each as a short text: equal texts agree."""


def _missing_headers(seen: Observation) -> str:
    """The watched headers some request went without (the beta header only matters on upgrades)."""
    missing = set()
    for attempt in seen.attempts:
        expected = {name for name in WATCHED_HEADERS if name != TURN_STATE_HEADER}
        if attempt.transport != "ws":
            expected.discard("openai-beta")
        missing |= expected - attempt.headers
    return " ".join(sorted(missing)) or "-"


@dataclass(frozen=True, slots=True)
class Comparison:
    script: str
    transport: str
    codex: Observation
    reference: Observation

    def cell(self, aspect: str) -> str:
        ours, theirs = ASPECTS[aspect](self.codex), ASPECTS[aspect](self.reference)
        return ours if ours == theirs else f"codex: {ours} | rrkit: {theirs}"

    @property
    def differences(self) -> list[str]:
        return [aspect for aspect, read in ASPECTS.items() if read(self.codex) != read(self.reference)]

    @property
    def agree(self) -> bool:
        return not self.differences


def compare_scripts(
    paths: Sequence[Path],
    codex: str,
    *,
    transports: Sequence[str] = TRANSPORTS,
    budgets: Budgets = DEFAULT_BUDGETS,
    progress: Callable[[Comparison], None] | None = None,
) -> list[Comparison]:
    """Each script over each transport, once by `codex exec` and once by the reference client, each on a fresh
    server."""
    results = []
    for path in paths:
        script = load_script(path)
        for transport in transports:
            websockets = transport == "ws"
            seen_by_codex = observe_codex(codex, script, websockets=websockets, budgets=budgets)
            seen_by_reference = observe_reference(script, websockets=websockets, budgets=budgets)
            result = Comparison(script.name or path.stem, transport, seen_by_codex, seen_by_reference)
            if progress is not None:
                progress(result)
            results.append(result)
    return results


def format_comparisons(results: Sequence[Comparison], *, verbose: bool = False) -> str:
    header = ["script", "transport", *ASPECTS, "agree"]
    cells = [
        [result.script, result.transport, *(result.cell(a) for a in ASPECTS), "yes" if result.agree else "NO"]
        for result in results
    ]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    lines = [
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *cells]
    ]
    if verbose:
        for result in results:
            if not result.agree:
                lines += ["", f"{result.script} over {result.transport}:"]
                for who, seen in (("codex", result.codex), ("rrkit", result.reference)):
                    lines += [f"  {who}: {row}" for row in seen.flow] + [f"  {who}: => {seen.outcome}"]
    return "\n".join(lines)


def summary(results: Sequence[Comparison]) -> str:
    differing = [result for result in results if not result.agree]
    if not differing:
        return f"Codex and the reference client agree on all {len(results)} runs."
    return f"They differ on {len(differing)} of {len(results)} runs."

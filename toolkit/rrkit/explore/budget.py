"""How much an exploration may do (light: the command's help reads its defaults without loading the search)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_CASES = 200
SECONDS = 300.0
CASE_TIMEOUT = 30.0


@dataclass(frozen=True)
class Budget:
    """`cases` generated at most (Hypothesis's examples; each distinct one run once; shrinking a finding runs more),
    `seconds` of running the client (generation and shrinking together: no run starts after them, so a search
    ends within `seconds` and one run's `case_timeout`; a finding not shrunk by then is reported as found, not
    minimal), `case_timeout` seconds per run."""

    cases: int = MAX_CASES
    seconds: float = SECONDS
    case_timeout: float = CASE_TIMEOUT

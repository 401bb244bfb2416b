"""An exploration's findings as files (each minimal stream a script, its must, seed and command in its header) and
as the report every judge writes (`rrkit.report`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..report import Case, Finding, Held, Place, Report
from .case import script_of
from .judge import MUSTS
from .search import Exploration, Found

NOT_MINIMAL = "the budget's seconds ran out while it was shrunk"


@dataclass(frozen=True)
class Written:
    finding: Found
    path: Path | None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def file_name(number: int, found: Found) -> str:
    broken = found.broken
    return f"explore-{number:02d}-{_slug(broken.reason)}-{_slug(broken.behaviour)}.yaml"


def finding_text(found: Found, exploration: Exploration, command: str) -> str:
    """The minimal stream of a finding as a script file: what it breaks, how it was found and how to replay it, in
    its header; the script below it (`rrkit serve --script`, `rrkit conform --scenario`)."""
    broken = found.broken
    script = script_of(found.stream, found.case.transport, found.expected, name=f"explore-{_slug(broken.reason)}")
    script.description = (
        f"rrkit explore: {broken.must.name}: {broken.reason}, the client {broken.behaviour}. {broken.must.why}."
    )
    body = yaml.safe_dump(
        script.model_dump(mode="json", exclude_defaults=True), sort_keys=False, allow_unicode=True, width=100
    )
    header = [
        f"# rrkit explore finding: {broken.must.name} ({broken.reason}): the client {broken.behaviour}",
        f"# seen: {' '.join(broken.seen.split())}",  # one comment line, however the client's output ran
        f"# found with --seed {exploration.seed}: {found.hits} case(s) hit it; shrunk from: {found.case}",
        f"# operators: {', '.join(sorted(found.operators))}; {len(found.stream.events)} event(s) left"
        + ("" if found.minimal else f" (not minimal: {NOT_MINIMAL})"),
        f"# explored: {command}",
        "# replay:   rrkit conform --scenario THIS_FILE -- COMMAND   (or: rrkit serve --script THIS_FILE)",
    ]
    return "\n".join(header) + "\n" + body


def write_findings(exploration: Exploration, folder: Path, command: str) -> list[Written]:
    """Each finding's script written into `folder` (made if needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for number, found in enumerate(exploration.findings, 1):
        path = folder / file_name(number, found)
        path.write_text(finding_text(found, exploration, command), encoding="utf-8")
        written.append(Written(found, path))
    return written


def to_report(exploration: Exploration, client: str, written: list[Written]) -> Report:
    """A case per finding (its must broken, what was seen, the minimal script); without one, a case holding both
    musts over the cases run."""
    cases = []
    for entry in written:
        found, broken = entry.finding, entry.finding.broken
        evidence = (
            f"{broken.seen}; {'minimal' if found.minimal else f'not minimal ({NOT_MINIMAL})'}: "
            f"{len(found.stream.events)} event(s) ({found.case.seed} with "
            f"{', '.join(sorted(found.operators))}); {found.hits} case(s) hit it"
            + (f"; script {entry.path}" if entry.path else "")
        )
        finding = Finding(
            rule=broken.must.name,
            place=Place(label=f"{broken.reason} [{found.case.transport}]"),
            reason=broken.must.why,
            evidence=evidence,
        )
        cases.append(
            Case(
                group=f"rrkit.explore.{found.case.transport}",
                name=f"{broken.reason}: {broken.behaviour}",
                findings=(finding,),
                output=str(found.case),
                file=str(entry.path) if entry.path else None,
            )
        )
    if not cases:
        held = tuple(Held(rule=must.name, evidence=f"{exploration.cases} case(s) run") for must in MUSTS)
        cases.append(Case(group="rrkit.explore", name="exploration", held=held))
    summary = (
        f"{client}: {len(written)} finding(s) in {exploration.cases} case(s) run ({exploration.generated} generated), "
        f"seed {exploration.seed}"
    )
    detail = {
        "seed": exploration.seed,
        "budget": {
            "cases": exploration.budget.cases,
            "seconds": exploration.budget.seconds,
            "case_timeout": exploration.budget.case_timeout,
        },
        "cases": exploration.cases,
        "generated": exploration.generated,
        "seconds": round(exploration.seconds, 3),
        "transports": list(exploration.transports),
        "seeds": list(exploration.seeds),
        "findings": [
            {
                "must": entry.finding.broken.must.name,
                "reason": entry.finding.broken.reason,
                "behaviour": entry.finding.broken.behaviour,
                "seen": entry.finding.broken.seen,
                "hits": entry.finding.hits,
                "operators": sorted(entry.finding.operators),
                "case": str(entry.finding.case),
                "events": len(entry.finding.stream.events),
                "minimal": entry.finding.minimal,
                "file": str(entry.path) if entry.path else None,
            }
            for entry in written
        ],
    }
    properties = {"client": client, "seed": str(exploration.seed), "cases": str(exploration.cases)}
    return Report(
        tool="explore", subject=client, summary=summary, properties=properties, cases=tuple(cases), detail=detail
    )

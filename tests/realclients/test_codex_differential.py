"""The real Codex CLI and the reference client against the same scripts: the server sees the same attempts.

Both halves are checked against one table (`differential_cases.CASES`): the Codex half proves the table is
what Codex 0.169.0 does; the reference half, which needs no Codex, that the reference client does the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from rrkit.differential import Observation
from rrkit.differential.observation import WaitRanges
from rrkit.differential.run import observe_codex, observe_reference

from .codex import NEWEST, codex_of
from .differential_broken import BROKEN_CASES
from .differential_cases import CASES, Case, render

ALL_CASES = {**CASES, **BROKEN_CASES}
CODEX_TIMEOUT = 30.0
SLOW_CODEX_TIMEOUT = 90.0


def _params(for_reference: bool) -> list[object]:
    params: list[object] = []
    for name, case in ALL_CASES.items():
        marks = []
        if for_reference and case.reference_xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=case.reference_xfail))
        if case.slow:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def _versions() -> list[object]:
    """The pinned Codex in the suite; the newest release in the matrix step (`pytest -m matrix`), which judges it
    by the same table: what the server saw, never its log wording."""
    return ["pinned", pytest.param(NEWEST, marks=pytest.mark.matrix, id=NEWEST)]


def _ranges(case: Case) -> WaitRanges:
    """The wait ranges of a case that names the connect timeout."""
    budgets = case.budgets
    return WaitRanges(budgets.idle_timeout, connect_timeout=case.connect_timeout)


def _waits_only(rows: tuple[str, ...]) -> tuple[str, ...]:
    """The rows with their wait labels (`<backoff> `, `<none> `, ...) left out."""
    return tuple(re.sub(r"^<[^>]*> ", "", row) for row in rows)


def _observed(case: Case, observe: Callable[[], Observation]) -> Observation:
    """One observation; once more when it differs from the table in its waits alone. A wait is a time measured on
    a machine that may be busy with a parallel test run; the attempts and the outcome must still agree both times."""
    seen = observe()
    rows = render(seen, case.show)
    if (rows, seen.outcome) != (case.flow, case.outcome) and (_waits_only(rows), seen.outcome) == (
        _waits_only(case.flow),
        case.outcome,
    ):
        seen = observe()
    return seen


def _check(case: Case, seen: Observation, who: str) -> None:
    report = "\n".join(
        [
            f"{who}: {case.rule}",
            "  expected:",
            *(f"    {row}" for row in case.flow),
            f"    => {case.outcome}",
            "  seen:",
            *(f"    {row}" for row in render(seen, case.show)),
            f"    => {seen.outcome}",
            *(f"  {note}" for note in seen.notes[:4]),
        ]
    )
    assert (render(seen, case.show), seen.outcome) == (case.flow, case.outcome), report


@pytest.mark.codex
@pytest.mark.parametrize("name", _params(for_reference=False))
@pytest.mark.parametrize("version", _versions())
def test_codex_does_what_the_observation_table_says(name: str, version: str) -> None:
    case = ALL_CASES[name]
    codex = codex_of(version)

    def observe() -> Observation:
        if case.connect_timeout is not None:
            return observe_codex(
                codex,
                case.script,
                websockets=case.websockets,
                budgets=case.budgets,
                ranges=_ranges(case),
                unanswered=True,
                timeout=SLOW_CODEX_TIMEOUT,
            )
        if case.turns > 1:
            return observe_codex(
                codex,
                case.script,
                turns=case.turns,
                websockets=case.websockets,
                budgets=case.budgets,
                timeout=CODEX_TIMEOUT,
            )
        return observe_codex(
            codex,
            case.script,
            websockets=case.websockets,
            budgets=case.budgets,
            timeout=SLOW_CODEX_TIMEOUT if case.slow else CODEX_TIMEOUT,
        )

    seen = _observed(case, observe)
    _check(case, seen, "Codex CLI")


@pytest.mark.parametrize("name", _params(for_reference=True))
def test_reference_client_does_what_codex_does(name: str) -> None:
    case = ALL_CASES[name]

    def observe() -> Observation:
        if case.connect_timeout is not None:
            return observe_reference(
                case.script, websockets=case.websockets, budgets=case.budgets, ranges=_ranges(case), unanswered=True
            )
        if case.turns > 1:
            return observe_reference(case.script, turns=case.turns, websockets=case.websockets, budgets=case.budgets)
        return observe_reference(case.script, websockets=case.websockets, budgets=case.budgets)

    seen = _observed(case, observe)
    _check(case, seen, "reference client")

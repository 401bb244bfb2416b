"""`rrkit_explore` as a test uses it: a finding fails the test, named with its minimal script; nothing found passes
and gives the exploration back."""

from __future__ import annotations

import pytest


def test_a_finding_fails_the_test_naming_its_minimal_script(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from rrkit.explore import Budget

        def test_always_answers(rrkit_explore):
            rrkit_explore(lambda env: True, transports=["http"], seed=4, budget=Budget(cases=10))
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*rrkit explore: *finding(s) in*", "*[[]must[]]*script *explore-01-*.yaml*"])


def test_nothing_found_passes_and_gives_the_exploration_back(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from rrkit.drive import ReferenceClient
        from rrkit.explore import Budget

        def test_reference_client(rrkit_explore):
            strict = ReferenceClient(strict_streams=True)  # stricter than Codex: it answers no broken stream
            exploration = rrkit_explore(strict, transports=["http"], seed=0, budget=Budget(cases=4))
            assert exploration.cases == 4 and not exploration.findings
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)

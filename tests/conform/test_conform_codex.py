"""The real Codex CLI judged by `rrkit conform` through `rrkit.conform.codex_client`: the pinned version and the
newest release keep every must and the `codex` profile over each transport (markers `codex` and `matrix`: a
step of its own in .ci/run; skipped without them)."""

from __future__ import annotations

import sys

import pytest

from rrkit.conform import CommandClient, catalogue, run
from rrkit.protocol.vocabulary import Transport

from ..realclients.codex import NEWEST, codex_of


@pytest.mark.codex
@pytest.mark.matrix
@pytest.mark.parametrize("transport", ["http", "ws"])
@pytest.mark.parametrize("version", ["pinned", NEWEST])
def test_codex_keeps_every_must_and_the_codex_profile(version: str, transport: Transport) -> None:
    binary = codex_of(version)
    client = CommandClient([sys.executable, "-m", "rrkit.conform.codex_client", "--codex", binary])
    report = run(client, transports=(transport,), profile="codex")
    assert report.ok, [(v.scenario, v.transport, v.expectation, v.seen) for v in report.failures]
    ran = {result.run.scenario for result in report.results}
    assert ran == {scenario.name for scenario in catalogue() if transport in scenario.transports}

"""A verdict is never better than what was observed: a client the server never saw (a command that exits 0 at
once, one that cannot even start), or one that never tried a WebSocket in a scenario over `ws`, holds no must;
a scenario that calls a tool the client never declared is not applicable to it, neither passed nor failed."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from rrkit.conform import CommandClient, ConformReport, FunctionClient, catalogue, run, select
from rrkit.conform.checks import ConformRun, unobserved
from rrkit.differential.observation import Attempt

from . import minimal_client as minimal

TIMEOUT = 20.0


def _held(report: ConformReport) -> list[str]:
    return [verdict.expectation for result in report.results for verdict in result.verdicts if verdict.held]


def test_a_command_that_exits_0_without_a_request_holds_no_must_over_either_transport() -> None:
    report = run(CommandClient(["true"]), scenarios=select(catalogue(), ("text",)), timeout=TIMEOUT)
    assert not report.ok and _held(report) == []
    assert {result.run.transport for result in report.results} == {"http", "ws"}
    assert all("the server saw no request" in verdict.seen for verdict in report.failures)


def test_a_command_that_cannot_start_passes_no_scenario_that_expects_the_client_to_fail(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_client.py"
    report = run(
        CommandClient([sys.executable, str(missing)]),
        scenarios=select(catalogue(), ("failed-context-length",)),
        transports=("http",),
        timeout=TIMEOUT,
    )
    assert not report.ok and _held(report) == []
    (result,) = report.results
    assert result.run.outcome == "failed" and str(missing) in result.run.detail


def test_a_client_that_answers_over_http_when_told_ws_holds_no_must_of_the_ws_run() -> None:
    def http_only(env: dict[str, str]) -> bool:  # a correct client, but it ignores RRKIT_TRANSPORT
        return minimal.main(env) == 0

    report = run(FunctionClient(http_only), scenarios=select(catalogue(), ("text",)), timeout=TIMEOUT)
    by_transport = {result.run.transport: result for result in report.results}
    assert by_transport["http"].ok
    assert not by_transport["ws"].ok and all(not verdict.held for verdict in by_transport["ws"].verdicts)
    assert all("never tried a WebSocket" in verdict.seen for verdict in by_transport["ws"].verdicts)


def test_what_counts_as_observed() -> None:
    http = Attempt(transport="http", kind="full", wait="first", outcome="completed")
    upgrade = Attempt(transport="ws", kind="upgrade", wait="first", outcome="refused")
    assert unobserved(ConformRun("text", "http", (), "completed")) is not None
    assert unobserved(ConformRun("text", "http", (http,), "completed")) is None
    assert unobserved(ConformRun("text", "ws", (http,), "completed")) is not None
    assert unobserved(ConformRun("ws-refuse-426", "ws", (upgrade, http), "completed")) is None  # tried, refused


def _one_turn(tools: list[dict[str, object]]) -> FunctionClient:
    """A client that asks once, declaring `tools`, and takes whatever completes as its answer (it answers no
    tool call)."""

    def client(env: dict[str, str]) -> bool:
        body = {"model": "gpt-test", "input": "Weather in Paris?", "stream": True, "tools": tools}
        with (
            httpx.Client(base_url=env["OPENAI_BASE_URL"], timeout=10, trust_env=False) as http,
            http.stream("POST", "/responses", json=body) as response,
        ):
            return any('"response.completed"' in line for line in response.iter_lines())

    return FunctionClient(client)


def _tool(name: str) -> dict[str, object]:
    return {"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}}


def test_a_scenario_calling_a_tool_the_client_never_declared_is_not_applicable_neither_passed_nor_failed() -> None:
    for tools in ([], [_tool("lookup_stock")]):
        report = run(_one_turn(tools), scenarios=select(catalogue(), ("tool-loop",)), transports=("http",))
        (result,) = report.results
        assert result.not_applicable and "get_weather" in result.not_applicable
        assert report.ok and report.failures == [] and _held(report) == []
        (case,) = report.to_report().cases
        assert case.skipped == result.not_applicable and case.findings == () and case.ok
        assert "not applicable to this client" in report.to_report().summary


def test_a_client_that_declares_the_tool_but_does_not_answer_it_breaks_the_must() -> None:
    report = run(_one_turn([_tool("get_weather")]), scenarios=select(catalogue(), ("tool-loop",)), transports=("http",))
    (result,) = report.results
    assert not result.not_applicable and not report.ok
    assert any(verdict.expectation.startswith("tool") for verdict in report.failures), report.failures

"""Writes docs/conformance.md: `rrkit conform` run on real clients (rrkit's reference client, the Codex CLI at the
pinned version and at the newest release, the official `openai` SDKs for Python and Node), one column each, one
row per scenario and transport, every failed verdict explained below the table; then on the agent frameworks built
on the Responses API (LangChain, Pydantic AI, the Agents SDK, LiteLLM, LlamaIndex: tests/conform/frameworks/);
then `rrkit conform --server` run on servers (rrkit's own, and `@copilotkit/aimock` from npm), one row per probe
and transport, every finding listed.

Run from the repository's root, with the clients installed as .ci/run installs them, and the frameworks in
virtualenvs of their own as tests/conform/frameworks/requirements*.txt say:

    .venv/bin/python docs/make_conformance.py

`--servers` rewrites only the Servers section (the servers' runs need none of the clients).

A client that is not installed is left out (and said so). A failed verdict without an explanation in
EXPLAINED, or an explanation that no verdict needs any more, stops it with exit status 1: the page never
carries a verdict nobody looked at.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrkit.conform import (  # noqa: E402
    ClientUnderTest,
    CommandClient,
    ConformReport,
    ReferenceClient,
    Scenario,
    Verdict,
    catalogue,
    run,
)
from rrkit.conform.server import ServerReport, Target, probe_catalogue, run_server  # noqa: E402
from rrkit.conform.server.check_texts import FIELDS  # noqa: E402
from rrkit.differential.codex import CODEX_VERSION, find_codex  # noqa: E402
from rrkit.protocol.exceptions import CodexNotFound  # noqa: E402
from rrkit.protocol.vocabulary import Transport  # noqa: E402
from rrkit.report import Finding, Severity  # noqa: E402
from rrkit.server import FakeServer  # noqa: E402
from tests.conform.aimock import AIMOCK_VERSION, aimock_server, missing  # noqa: E402

TESTS = ROOT / "tests" / "conform"
NODE_SDK = ROOT / ".ci" / "node-sdk" / "node_modules"
NEWEST_CODEX = "0.171.0"
RUN_TIMEOUT = 20.0
"""Seconds one run may take (a client that hangs on a silent stream is stopped after it; the others take a few)."""


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    profile: str | None
    transports: tuple[Transport, ...]
    client: Callable[[], ClientUnderTest | None]  # None: not installed here
    opt_in: tuple[str, ...] = ()  # the opt-in scenarios this client can take part in (what they ask, it can do)


def _codex(version: str) -> ClientUnderTest | None:
    local = ROOT / ".ci" / ("node" if version == CODEX_VERSION else f"node-{version}") / "node_modules" / ".bin"
    try:
        binary = find_codex(str(local / "codex") if (local / "codex").exists() else None, version=version)
    except CodexNotFound:
        return None
    return CommandClient([sys.executable, "-m", "rrkit.conform.codex_client", "--codex", binary])


def _node_sdk() -> ClientUnderTest | None:
    node = shutil.which("node")
    if node is None or not (NODE_SDK / "openai" / "package.json").exists():
        return None
    return CommandClient([node, str(TESTS / "sdk_client.cjs")], env={"NODE_PATH": str(NODE_SDK)})


def _npm_version() -> str:
    package = NODE_SDK / "openai" / "package.json"
    return str(json.loads(package.read_text())["version"]) if package.exists() else "?"


OPT_IN = tuple(scenario.name for scenario in catalogue(opt_in=True) if scenario.opt_in)
"""Background responses, cancel, compaction, conversations: for the clients that can make such requests."""
STREAMING_OPT_IN = tuple(name for name in OPT_IN if name != "background-poll")
"""The reference client, like the Codex CLI it follows, only ever streams: a response not streamed is not its to
poll."""

COLUMNS = [
    Column("reference", "rrkit's reference client", "codex", ("http", "ws"), ReferenceClient, STREAMING_OPT_IN),
    Column(
        f"codex-{CODEX_VERSION}", f"Codex CLI {CODEX_VERSION}", "codex", ("http", "ws"), lambda: _codex(CODEX_VERSION)
    ),
    Column(f"codex-{NEWEST_CODEX}", f"Codex CLI {NEWEST_CODEX}", "codex", ("http", "ws"), lambda: _codex(NEWEST_CODEX)),
    Column(
        "openai-python",
        f"openai {importlib.metadata.version('openai')} (Python)",
        "openai-sdk",
        ("http", "ws"),
        lambda: CommandClient([sys.executable, str(TESTS / "sdk_client.py")]),
        OPT_IN,
    ),
    Column(
        "openai-node",
        f"openai {_npm_version()} (npm)",
        "openai-sdk",
        ("http", "ws"),
        _node_sdk,
    ),
]

FRAMEWORKS_DIR = TESTS / "frameworks"


def _framework(venv: str, client: str) -> ClientUnderTest | None:
    python = ROOT / ".ci" / venv / "bin" / "python"
    if not python.exists():
        return None
    return CommandClient([str(python), str(FRAMEWORKS_DIR / client)])


def _framework_version(venv: str, package: str) -> str:
    python = ROOT / ".ci" / venv / "bin" / "python"
    if not python.exists():
        return "?"
    shown = subprocess.run(
        [str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return shown.stdout.strip() or "?"


FRAMEWORKS = [
    Column(
        "langchain",
        f"LangChain `ChatOpenAI` (langchain-openai {_framework_version('frameworks', 'langchain-openai')})",
        None,
        ("http",),
        lambda: _framework("frameworks", "langchain_client.py"),
    ),
    Column(
        "pydantic-ai",
        f"Pydantic AI `OpenAIResponsesModel` ({_framework_version('frameworks', 'pydantic-ai-slim')})",
        None,
        ("http",),
        lambda: _framework("frameworks", "pydantic_ai_client.py"),
    ),
    Column(
        "agents",
        f"OpenAI Agents SDK ({_framework_version('frameworks', 'openai-agents')})",
        None,
        ("http",),
        lambda: _framework("frameworks", "agents_client.py"),
    ),
    Column(
        "litellm",
        f"LiteLLM `responses()` ({_framework_version('frameworks', 'litellm')})",
        None,
        ("http",),
        lambda: _framework("frameworks", "litellm_client.py"),
    ),
    Column(
        "llamaindex",
        f"LlamaIndex `OpenAIResponses` ({_framework_version('frameworks-llamaindex', 'llama-index-llms-openai')})",
        None,
        ("http",),
        lambda: _framework("frameworks-llamaindex", "llamaindex_client.py"),
    ),
]
"""Agent frameworks on the Responses API, each driven the ordinary documented way, over HTTP, on the musts only."""

PERMANENT = ("context-length", "cyber-policy", "insufficient-quota", "invalid-prompt", "usage-not-included")
TRANSIENT = ("rate-limit", "server-overloaded", "slow-down", "unknown-code")

FINDINGS: list[tuple[str, list[tuple[str, str, str]]]] = [
    (
        "`responses.stream(...).finalResponse()` resolves with the last snapshot however the body ended "
        "(`_endRequest` in `lib/responses/ResponseStream.js`): a stream that ends cleanly without "
        '`response.completed` comes back as a response with `status: "in_progress"`, and the twenty-line client '
        "(`tests/conform/sdk_client.cjs`), which does not check `status`, takes it as the answer and exits 0 (the "
        "`openai-sdk` profile expects the caller to see an error, as the Python SDK's `get_final_response()` raises "
        "one). The must is the protocol's (PROTOCOL.md section 1: only `response.completed` proves the response "
        'whole); a Node client must check `final.status === "completed"` itself. Over its WebSocket, where the '
        "client reads the events itself, the same scenario holds.",
        [
            ("openai-node", "ends-before-terminal", "answered"),
            ("openai-node", "ends-before-terminal", "outcome is failed"),
        ],
    ),
    (
        '`finalResponse()` resolves a `response.failed` as a response (`status: "failed"`, with its `error`), '
        "whatever the code: the client, which does not check `status`, reports success for a failed response. "
        "Where the code is one a retry cannot mend the client did not retry (that must held), but the turn should "
        "still end as a failure. The Python SDK raises instead.",
        [("openai-node", f"failed-{name}", "outcome is failed") for name in PERMANENT]
        + [("openai-node", f"failed-{name}", "answered") for name in TRANSIENT],
    ),
    (
        "`responses.stream()` runs every event through its accumulator (`lib/responses/ResponseAccumulator.js`, "
        "openai 6.49.0), whose `switch` ends in `assertNever`: an event type it does not list throws "
        "(`OpenAIError: Unhandled response stream event`) and fails the stream. 6.49.0 does not list "
        "`response.compaction.compacting`, which the service sends when it compacts the context (the Python SDK "
        "3.63 types it; the npm SDK 7.60.0 lists it, and still throws on any type newer than itself). Over "
        "WebSocket the client reads the events itself and ignores what it does not know.",
        [("openai-node", "hosted-tools", "outcome is completed")],
    ),
    (
        '`finalResponse()` resolves a `response.incomplete` as a response (`status: "incomplete"`, its partial '
        "text): the client takes the cut-short text as the answer.",
        [("openai-node", "incomplete", "answered")],
    ),
    (
        "The SDK's request `timeout` (10 minutes by default) is cleared once the response's headers arrive "
        "(`fetchWithTimeout` in `client.js`), and its WebSocket (`ResponsesWS`) reads without a timeout: a stream "
        "that goes silent after its first events hangs the caller, over both transports, until `rrkit conform` stops "
        "it (`--timeout`). A Node client needs its own idle timer on the events (an `AbortController` for HTTP, a "
        "timer that closes the socket for WebSocket).",
        [("openai-node", "stall", "ends on its own")],
    ),
    (
        "Over HTTP the client's `timeout=5.0` (httpx's read timeout) ends the stalled stream. The SDK's WebSocket "
        "connection (`responses.connect()`) has no read timeout of its own (`recv()` waits on the `websockets` "
        "connection without one, and no connection option sets one), so a silent socket hangs the caller until "
        "`rrkit conform` stops it. A Python client needs its own idle timer (closing the connection from another "
        "thread, or the async client under `asyncio.timeout`).",
        [("openai-python", "stall", "ends on its own")],
    ),
]


def _failures_as_answers(key: str) -> list[tuple[str, str, str]]:
    """A client that takes every `response.failed` for an answer: a failure a retry cannot mend should end the
    turn as failed, one it can should not be reported as answered."""
    return [(key, f"failed-{name}", "outcome is failed") for name in PERMANENT] + [
        (key, f"failed-{name}", "answered") for name in TRANSIENT
    ]


FINDINGS += [
    (
        "`ChatOpenAI._stream_responses` (`langchain_openai/chat_models/base.py`) reads the SDK's raw event stream "
        "(`responses.create(stream=True)`, which ends quietly when the body does) and never checks that "
        "`response.completed` came: the text streamed before a cut is returned as the answer.",
        [("langchain", "ends-before-terminal", "answered")],
    ),
    (
        "`_convert_responses_chunk_to_generation_chunk` handles `response.incomplete` in the branch of "
        "`response.completed`: the cut-short text is the answer, its status only in `response_metadata`.",
        [("langchain", "incomplete", "answered")],
    ),
    (
        "`request_timeout` defaults to `None`, which `ChatOpenAI` hands to the SDK as no timeout at all (not the "
        "SDK's own 600 s); its `stream_chunk_timeout` (120 s) applies to async streaming only, so a silent stream "
        "hangs the synchronous `.stream()` until `rrkit conform` stops it.",
        [("langchain", "stall", "ends on its own")],
    ),
    (
        "It sees a stream end before its final event (`_map_created` records `in_progress`, and "
        "`response_status_to_state` turns it into the state `incomplete`), but the agent run still returns the "
        "partial text as its output.",
        [("pydantic-ai", "ends-before-terminal", "answered")],
    ),
    (
        "`_map_incomplete` (`pydantic_ai/models/openai/_responses_streaming.py`) only records `finish_reason` "
        "`length`: the partial text is the output (it raises only when nothing came, or a tool call was cut).",
        [("pydantic-ai", "incomplete", "answered")],
    ),
    (
        "Its default HTTP client (`pydantic_ai/_http.py`) has a 600 s timeout, the only limit on a silent stream.",
        [("pydantic-ai", "stall", "ends on its own")],
    ),
    (
        "The Agents SDK turns `response.failed`, `response.incomplete`, the `error` event and a stream without a "
        "terminal event into errors (`agents/models/openai_responses.py`), but keeps the SDK's default read "
        "timeout of 600 s, and has no idle limit of its own: a silent stream holds the run for ten minutes.",
        [("agents", "stall", "ends on its own")],
    ),
    (
        "For a model its model list does not know (here `gpt-test`), `supports_native_streaming` is false and "
        "LiteLLM fakes the stream (`OpenAIResponsesAPIConfig.should_fake_stream`): it sends the request without "
        "`stream`, then replays the JSON answer as events (`build_synthetic_response_events`), always ending with "
        "`response.completed` whatever the response's `status`, so a failed or incomplete response reaches the "
        "caller as a completed one. With a model in its list it streams for real and raises on `response.failed`, "
        "but still takes `response.incomplete` as an answer.",
        [*_failures_as_answers("litellm"), ("litellm", "incomplete", "answered")],
    ),
    (
        "`responses()` waits 6000 s for a request by default (`litellm/constants.py`): a silent stream outlasts "
        "any run.",
        [("litellm", "stall", "ends on its own")],
    ),
    (
        "`OpenAIResponses.process_response_event` (`llama_index/llms/openai/responses.py`) has no branch for "
        "`response.failed`, `response.incomplete` or the `error` event, and nothing checks that a terminal event "
        "came; `FunctionAgent` returns the last event's content as the answer (nothing for a failed response, the "
        "text so far for a cut one). The SDK under it (openai 2.54.0) is not the cause: the plain SDK client on "
        "that version keeps these musts.",
        [
            *_failures_as_answers("llamaindex"),
            ("llamaindex", "ends-before-terminal", "answered"),
            ("llamaindex", "incomplete", "answered"),
            ("llamaindex", "sse-error-event", "answered"),
        ],
    ),
    (
        f"Its default timeout is 60 s, longer than the {RUN_TIMEOUT:g} s this page gives a run; given 100 s it ended "
        "on its own with a read timeout, not retried.",
        [("llamaindex", "stall", "ends on its own")],
    ),
]
EXPLAINED = {key: text for text, keys in FINDINGS for key in keys}


def cell(report: ConformReport | None, scenario: str, transport: str) -> str:
    if report is None:
        return "not installed"
    result = next((r for r in report.results if (r.run.scenario, r.run.transport) == (scenario, transport)), None)
    if result is None:
        return "-"
    if result.not_applicable:
        return "n/a"
    broken = [verdict.expectation for verdict in result.verdicts if not verdict.held]
    return "ok" if not broken else "**FAILED**: " + "; ".join(broken)


def _servers() -> dict[str, ServerReport | None]:
    """`rrkit conform --server` on each server, by its column's title (None: not installed here)."""
    reports: dict[str, ServerReport | None] = {}
    with FakeServer() as served:
        reports["`rrkit serve`"] = run_server(Target(served.http_url))
    title = f"`@copilotkit/aimock` {AIMOCK_VERSION}"
    if missing() is None:
        with aimock_server() as url:
            reports[title] = run_server(Target(url))
    else:
        reports[title] = None
    return reports


def server_lines(reports: dict[str, ServerReport | None]) -> list[str]:
    lines = [
        "",
        "## Servers",
        "",
        "`rrkit conform --server URL` run on each server below, with every probe of its battery",
        "(`rrkit conform --server URL --list`) over both transports. A cell counts the `must` findings (they break",
        "real clients) and the `should` ones (departures from the real service); every finding is listed below,",
        "the field check's (`fields`: every body and event held to the OpenAPI description, field by field, each",
        "field path once per probe run; `must` where a client with a strict schema breaks) in a table of its own.",
        "",
        "| probe | over | " + " | ".join(reports) + " |",
        "|---|---|" + "---|" * len(reports),
    ]
    for probe in probe_catalogue():
        for transport in probe.transports:
            cells = []
            for report in reports.values():
                result = (
                    next((r for r in report.results if (r.probe, r.transport) == (probe.name, transport)), None)
                    if report is not None
                    else None
                )
                cells.append("not installed" if report is None else "-" if result is None else _counts(result.findings))
            lines.append(f"| {probe.name} | {transport} | " + " | ".join(cells) + " |")
    for title, report in reports.items():
        if report is None:
            lines += ["", f"{title}: not installed where this page was made."]
            continue
        lines += ["", f"### {title}", ""]
        if not report.findings:
            lines.append("No finding.")
            continue
        others = [finding for finding in report.findings if finding.rule != FIELDS]
        lines += [f"- {finding}" for finding in others] or ["No finding but the field check's (below)."]
        lines += field_lines([finding for finding in report.findings if finding.rule == FIELDS])
    return lines


def field_lines(findings: Sequence[Finding]) -> list[str]:
    """The field check's findings (`fields`: every body and event held to the OpenAPI description), one row per
    field and problem, with how many probe runs met it and the first place it was met."""
    rows: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        rows.setdefault((finding.severity.value, finding.evidence), []).append(finding)
    lines = [
        "",
        f"The field check (every body and event held to the OpenAPI description): {len(rows)} field problem(s), "
        f"{len(findings)} finding(s) over the probe runs.",
        "",
        "| field | severity | probe runs | first met at |",
        "|---|---|---|---|",
    ]
    for (severity, evidence), found in sorted(rows.items(), key=lambda row: (row[0][0] != "must", row[0][1])):
        place = found[0].place
        at = place.label + (f" event {place.event} ({place.event_type})" if place.event is not None else "")
        lines.append(f"| `{evidence}` | {severity} | {len(found)} | {at} |")
    return lines


def servers_only() -> int:
    """Rewrite only the page's Servers section (`--servers`): the servers' runs need none of the clients."""
    page = ROOT / "docs" / "conformance.md"
    text = page.read_text(encoding="utf-8")
    head = text.split("\n## Servers\n", 1)[0]
    page.write_text(head + "\n".join(server_lines(_servers())) + "\n", encoding="utf-8")
    print("wrote the Servers section of docs/conformance.md", file=sys.stderr)
    return 0


def _counts(findings: Sequence[Finding]) -> str:
    listed = list(findings)
    must = sum(finding.severity is Severity.MUST for finding in listed)
    should = len(listed) - must
    return "ok" if not listed else f"**{must} must**, {should} should" if must else f"{should} should"


def _reports(everything: Sequence[Scenario]) -> dict[str, ConformReport | None]:
    """Each column's run (None: its client is not installed here)."""
    reports: dict[str, ConformReport | None] = {}
    for column in [*COLUMNS, *FRAMEWORKS]:
        client = column.client()
        if client is None:
            print(f"{column.title}: not installed here, left out", file=sys.stderr)
            reports[column.key] = None
            continue
        asked = [scenario for scenario in everything if not scenario.opt_in or scenario.name in column.opt_in]
        report = run(client, transports=column.transports, scenarios=asked, profile=column.profile, timeout=RUN_TIMEOUT)
        reports[column.key] = report
        print(f"{column.title}: {len(report.failures)} failed verdict(s)", file=sys.stderr)
    return reports


def _explained(failed: dict[tuple[str, str, str], list[Verdict]], reports: dict[str, ConformReport | None]) -> bool:
    """Whether each failed verdict has its explanation and each explanation (of a column that ran) its failed
    verdict; what does not is printed."""
    unexplained = sorted(set(failed) - set(EXPLAINED))
    ran = {key for key, report in reports.items() if report is not None}
    stale = sorted(key for key in set(EXPLAINED) - set(failed) if key[0] in ran)
    for key in unexplained:
        print(f"unexplained failure: {key}: {failed[key][0].seen}", file=sys.stderr)
    for key in stale:
        print(f"explanation no verdict needs: {key}", file=sys.stderr)
    return not unexplained and not stale


def main() -> int:
    everything = catalogue(opt_in=True)
    reports = _reports(everything)
    failed: dict[tuple[str, str, str], list[Verdict]] = {}
    for key, report in reports.items():
        for verdict in report.failures if report is not None else []:
            failed.setdefault((key, verdict.scenario, verdict.expectation), []).append(verdict)
    if not _explained(failed, reports):
        return 1
    lines = [
        "# Conformance matrix",
        "",
        "Generated by `.venv/bin/python docs/make_conformance.py` (do not edit by hand): `rrkit conform` run on each",
        "client below, on every scenario of the catalogue (`rrkit conform --list`) over the transports the client",
        "speaks, judged on the musts and on the profile named in the column. A cell says `ok` when every must and",
        "rule held, else the ones that failed; each failure is explained below the table. The opt-in scenarios",
        "(background responses, cancel, compaction, conversations) run for the clients that can do what they ask",
        "(`-` for the others). `n/a`: the scenario has the client run a call of a tool it did not declare (a",
        "computer, a local shell, an MCP server, ...) and it answered none: a client without that tool cannot.",
        "",
        "| scenario | over | " + " | ".join(f"{c.title} (`--profile {c.profile}`)" for c in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for scenario in everything:
        for transport in scenario.transports:
            cells = [
                cell(reports[c.key], scenario.name, transport)
                if transport in c.transports and (not scenario.opt_in or scenario.name in c.opt_in)
                else "-"
                for c in COLUMNS
            ]
            name = f"{scenario.name} (opt-in)" if scenario.opt_in else scenario.name
            lines.append(f"| {name} | {transport} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Agent frameworks",
        "",
        "The frameworks people build agents with on the Responses API, each driven the ordinary documented way",
        "(`tests/conform/frameworks/`: one turn, one tool, streamed, nothing set beyond the model class), over HTTP,",
        "on the musts alone. The official Python SDK's column above is the baseline under most of them.",
        "",
        "| scenario | " + " | ".join(column.title for column in FRAMEWORKS) + " |",
        "|---|" + "---|" * len(FRAMEWORKS),
    ]
    for scenario in everything:
        if not scenario.opt_in and "http" in scenario.transports:
            cells = [cell(reports[column.key], scenario.name, "http") for column in FRAMEWORKS]
            lines.append(f"| {scenario.name} | " + " | ".join(cells) + " |")
    lines += ["", "## What the failures mean", ""]
    titles = {column.key: column.title for column in [*COLUMNS, *FRAMEWORKS]}
    for text, keys in FINDINGS:
        seen = [(key, verdict) for key in keys for verdict in failed.get(key, [])]
        if seen:
            lines += [f"- **{titles[seen[0][0][0]]}**: {text}"] + [
                f"  - {scenario} over {verdict.transport}, {expectation}: saw {verdict.seen}"
                for (_, scenario, expectation), verdict in seen
            ]
    if not failed:
        lines.append("None: every client kept every must and its profile's rules.")
    missing = [column.title for column in [*COLUMNS, *FRAMEWORKS] if reports[column.key] is None]
    if missing:
        lines += ["", "Left out, not installed where this page was made: " + ", ".join(missing) + "."]
    lines += server_lines(_servers())
    (ROOT / "docs" / "conformance.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("wrote docs/conformance.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(servers_only() if sys.argv[1:] == ["--servers"] else main())

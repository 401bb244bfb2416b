"""`rrkit demo`: the reference client against the fake server, through every fixture, over SSE and WebSocket.

With `record` (`rrkit demo --record cassettes/`), each run's recording, made from the fake server's capture,
is written as `<fixture>.<transport>.json`: the golden cassettes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from .cassette.format import Cassette
from .cassette.normalize import stabilize_cassette
from .cassette.record import cassette_from_capture
from .cassette.store import save_cassette
from .client import ClientOptions, Conversation, ModelClient, ModelClientError, Prompt, TraceEntry
from .client.check import view_mismatches
from .protocol.calls import CallResult, stand_in
from .protocol.ids import IdGenerator
from .protocol.outcome import Outcome, OutcomeKind
from .protocol.request import Item
from .protocol.vocabulary import TRANSPORTS
from .script.loader import load_script
from .script.models import Script
from .script.select import ReplySource
from .script.shipped import script_files
from .server.logs import quiet_server_logs
from .server.runner import FakeServer

DEMO_USER_INPUT = "What is the weather in Paris?"
DEMO_SESSION_ID = "rrkit-demo"
"""Fixed, so that every run sends the same session id and prompt cache key (and recordings repeat)."""
DEMO_TOOL_OUTPUT = "sunny, 24 degrees"
DEMO_PROMPT = Prompt(
    model="gpt-rrkit",
    instructions="You are the rrkit demo client. Use the tools when they help.",
    tools=(
        {
            "type": "function",
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
        {"type": "custom", "name": "apply_patch", "description": "Apply a patch to the workspace."},
    ),
)


@dataclass(frozen=True, slots=True)
class Seen:
    """An outcome as the demo compares it: kind, plus the code, status and reason when known."""

    kind: str
    code: str | None = None
    status: int | None = None
    reason: str | None = None

    @classmethod
    def of(cls, outcome: Outcome | None) -> Seen:
        if outcome is None:
            return cls("none")
        return cls(outcome.kind.value, outcome.code, outcome.status, outcome.reason)

    def __str__(self) -> str:
        details = [str(value) for value in (self.status, self.code, self.reason) if value is not None]
        return f"{self.kind} ({', '.join(details)})" if details else self.kind


@dataclass
class DemoRow:
    script: str
    transport: str
    full: int = 0
    incremental: int = 0
    warmup: int = 0
    retries: int = 0
    fallbacks: int = 0
    first: Seen | None = None
    final: Seen = field(default_factory=lambda: Seen("none"))
    expected: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _first_attempt(entries: Sequence[TraceEntry]) -> TraceEntry | None:
    """The first attempt that met the script: a warmup the server answered by itself is skipped."""
    for entry in entries:
        completed = entry.outcome is not None and entry.outcome.kind is OutcomeKind.COMPLETED
        if not (entry.warmup and completed):
            return entry
    return None


def expectation(expect: dict[str, Any], transport: str) -> dict[str, Any]:
    """What this transport should see; a WebSocket-only fault leaves HTTP with just the final outcome."""
    if expect.get("transport") not in (None, transport):
        return {"outcome": expect.get("outcome", "completed")}
    return dict(expect)


def check(expect: dict[str, Any], first: Seen | None, final: Seen) -> list[str]:
    """How the client's outcomes differ from the script's `expect` (empty: as expected)."""
    problems: list[str] = []
    wanted = expect.get("outcome", "completed")
    if final.kind != wanted:
        problems.append(f"ended {final}, expected {wanted}")
    first_wanted = expect.get("first_attempt", wanted)
    if first is None or first.kind != first_wanted:
        problems.append(f"first attempt {first}, expected {first_wanted}")
    # code/status/reason belong to the attempt that does not complete: the first, or the final one
    failing = first if first_wanted != "completed" else final if wanted != "completed" else None
    for name in ("code", "status", "reason"):
        if name in expect and failing is not None and getattr(failing, name) != expect[name]:
            problems.append(f"{name} {getattr(failing, name)!r}, expected {expect[name]!r}")
    return problems


def _describe_expectation(expect: dict[str, Any]) -> str:
    final = str(expect.get("outcome", "completed"))
    first = expect.get("first_attempt")
    return f"{first} -> {final}" if first and first != final else final


async def _tool(call: Item) -> CallResult:
    return stand_in(call, DEMO_TOOL_OUTPUT)


async def run_one(
    server: FakeServer,
    script: Script,
    transport: str,
    *,
    warmup: bool = True,
    source: ReplySource | None = None,
    strict_streams: bool = False,
) -> DemoRow:
    """One fresh client session, one user turn (with its tool loop) against `script`; `strict_streams`: the
    reference client stricter than Codex (`ClientOptions.strict_streams`).

    With `source` (e.g. a `CassetteSource` replaying the script's golden cassette) the server answers from it
    instead; the script still says what the client should see.
    """
    server.reset(source or script)
    row = DemoRow(script.name, transport)
    expect = expectation(script.expect.model_dump(mode="json", exclude_none=True), transport)
    row.expected = _describe_expectation(expect)
    options = replace(ClientOptions.quick(), strict_streams=strict_streams)
    async with ModelClient(
        server.http_url, supports_websockets=transport == "ws", session_id=DEMO_SESSION_ID, options=options
    ) as client:
        conversation = Conversation(client, DEMO_PROMPT)
        if warmup:
            await conversation.warmup()
        try:
            await conversation.run_turn(DEMO_USER_INPUT, _tool)
            row.final = Seen(OutcomeKind.COMPLETED.value)
        except ModelClientError as error:
            row.final = Seen.of(error.outcome())
        except Exception as error:  # not a protocol outcome: report it in the row, go on with the others
            row.final = Seen("crashed")
            row.problems.append(f"the client raised {error!r}")
    trace = client.trace
    row.full, row.incremental, row.warmup = trace.count("full"), trace.count("incremental"), trace.count("warmup")
    row.retries, row.fallbacks = trace.retries, len(trace.fallbacks)
    first = _first_attempt(trace.entries)
    row.first = Seen.of(first.outcome) if first is not None else None
    row.problems += check(expect, row.first, row.final)
    row.problems += view_mismatches(trace, server.exchanges)
    return row


def golden_name(fixture: Path, transport: str) -> str:
    """The golden cassette of a fixture over a transport: `text.yaml` over WebSocket is `text.ws.json`."""
    return f"{fixture.stem}.{transport}.json"


def golden_cassette(server: FakeServer, name: str) -> Cassette:
    """The run's recording from the server's capture, redacted and stabilized (see `stabilize_cassette`)."""
    cassette = cassette_from_capture(server.exchanges, server.connections, name=name)
    return stabilize_cassette(cassette)


async def run_demo(
    directory: Path,
    *,
    transports: Sequence[str] = TRANSPORTS,
    warmup: bool = True,
    record: Path | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    strict_streams: bool = False,
) -> list[DemoRow]:
    """Every fixture over every transport, each run on a fresh server with counting ids (`resp_1`, ...).

    With `record`, each run's golden cassette is written there (and stale ones of these transports removed).
    `progress(done, total, what)` is called before each run.
    """
    fixtures = [(path, load_script(path)) for path in script_files(directory)]
    rows: list[DemoRow] = []
    written: set[Path] = set()
    total = len(fixtures) * len(transports)
    with quiet_server_logs():
        for path, script in fixtures:
            for transport in transports:
                if progress is not None:
                    progress(len(rows), total, f"{script.name} over {transport}")
                async with FakeServer(script, log_level="critical", ids=IdGenerator.counting()) as server:
                    row = await run_one(server, script, transport, warmup=warmup, strict_streams=strict_streams)
                    if record is not None:
                        try:
                            await server.settle_async()
                        except TimeoutError as error:
                            row.problems.append(f"not recorded: {error}")
                        else:
                            name = golden_name(path, transport)
                            written.add(
                                save_cassette(golden_cassette(server, name.removesuffix(".json")), record / name)
                            )
                rows.append(row)
    if record is not None:
        for transport in transports:
            for stale in set(record.glob(f"*.{transport}.json")) - written:
                stale.unlink()
    return rows


def _outcome(row: DemoRow) -> str:
    """`completed`, or `dropped -> completed` when the first attempt ended otherwise than the turn."""
    first, final = str(row.first) if row.first is not None else "-", str(row.final)
    return final if first == final else f"{first} -> {final}"


def demo_table(rows: Sequence[DemoRow]) -> Table:
    """The runs as a table whose wide cells fold to fit the terminal."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1))
    table.add_column("script", overflow="fold", ratio=4, min_width=14)
    table.add_column("via", no_wrap=True)
    table.add_column("f/i/w", no_wrap=True, justify="right")
    table.add_column("retry", no_wrap=True, justify="right")
    table.add_column("fb", no_wrap=True, justify="right")
    table.add_column("outcome", overflow="fold", ratio=4)
    table.add_column("as expected", overflow="fold", ratio=2)
    for row in rows:
        verdict = "yes" if row.ok else "NO: " + "; ".join(row.problems)
        table.add_row(
            row.script,
            row.transport,
            f"{row.full}/{row.incremental}/{row.warmup}",
            str(row.retries),
            str(row.fallbacks),
            _outcome(row),
            verdict,
        )
    table.caption = "f/i/w: full, incremental and warmup requests; fb: fallbacks to HTTP"
    return table


def format_table(rows: Sequence[DemoRow], width: int = 80) -> str:
    """The table as plain text, `width` columns at most."""
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False, markup=False)
    console.print(demo_table(rows))
    return "\n".join(line.rstrip() for line in console.file.getvalue().splitlines())  # type: ignore[attr-defined]


def rows_json(rows: Sequence[DemoRow]) -> list[dict[str, Any]]:
    """The runs for machines: every count, both outcomes, what was expected and what went wrong."""
    return [
        {
            "script": row.script,
            "transport": row.transport,
            "requests": {"full": row.full, "incremental": row.incremental, "warmup": row.warmup},
            "retries": row.retries,
            "fallbacks": row.fallbacks,
            "first_attempt": str(row.first) if row.first is not None else None,
            "outcome": str(row.final),
            "expected": row.expected,
            "ok": row.ok,
            "problems": list(row.problems),
        }
        for row in rows
    ]


def summary(rows: Sequence[DemoRow]) -> str:
    failed = sum(1 for row in rows if not row.ok)
    if failed:
        return f"{failed} of {len(rows)} runs did not end as their script expects."
    return f"All {len(rows)} runs ended as their scripts expect."

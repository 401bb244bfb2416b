"""`rrkit replay`: a cassette as a check of a client. The cassette is served, the client runs against it, and
what the client did (as the server captured it) is diffed against the recording."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from ..cassette.format import Cassette
from ..cassette.match import MatchConfig
from ..cassette.record import cassette_from_capture
from ..cassette.replay import CassetteSource
from ..client import ClientOptions, ModelClient, ModelClientError, Prompt
from ..client.conversation import Conversation
from ..drive import Assignment, ClientEnd, ClientUnderTest, ReferenceClient, ServerURLs, as_client
from ..protocol.calls import ANSWERS, CallResult, answered_key, call_key
from ..protocol.exceptions import CassetteError
from ..protocol.headers import is_prewarm
from ..protocol.request import Item, input_items, is_warmup
from ..protocol.vocabulary import Transport
from ..report import Report
from ..report.text import quoted
from ..server.runner import FakeServer
from .against import IDLE_TIMEOUT, TEXT_PATHS, answers_of
from .diff import DiffReport, View, diff_cassettes
from .diff_render import render_report

REPLAY_IDLE_TIMEOUT = 3.0
"""Seconds the reference client waits on a silent replayed stream: a recorded stall ends there, while a busy
machine's pause between two replayed events (well under a second) does not look like one."""
COMMAND_TIMEOUT = 120.0
"""Seconds a client command may run before it is stopped (and the replay counts as failed)."""
_TURN_ROLES = ("user", "developer", "system")


@dataclass(frozen=True)
class SessionPlan:
    """What the cassette's logical requests say the client did: the transport, a warmup, the prompt, the input
    that opened each turn and the output it gave each tool call."""

    transport: Transport
    warmup: bool
    prompt: Prompt
    turns: tuple[tuple[Item, ...], ...]
    tool_outputs: Mapping[str, Item]
    """The answer the client gave each call, by the call's id (protocol.calls)."""
    session_id: str | None = None

    def tool_output(self, call: Item) -> CallResult:
        """The recorded answer's own fields (its type and link are the call's), or empty text where none was."""
        answer = self.tool_outputs.get(call_key(call) or "")
        if answer is None:
            return ""
        link = ANSWERS[str(answer.get("type"))].link
        return {name: value for name, value in answer.items() if name not in ("type", link)}


def _is_turn_input(item: Item) -> bool:
    return item.get("type", "message") == "message" and item.get("role") in _TURN_ROLES


def session_plan(cassette: Cassette) -> SessionPlan:
    """Pure: the session a client would replay from this cassette (its longest logical request holds the whole
    conversation up to the last sampling: turns begin where input follows the model's output)."""
    sampled = [
        e.logical_request for e in cassette.exchanges if e.logical_request and not is_warmup(e.wire_request or {})
    ]
    if not sampled:
        raise CassetteError(f"cassette {cassette.name!r} has no request to replay (only warmups, or none at all)")
    first = sampled[0] or {}
    longest = max((request or {} for request in sampled), key=lambda request: len(input_items(dict(request))))
    items = input_items(dict(longest))
    session_id = first.get("prompt_cache_key")
    return SessionPlan(
        transport=_transport(cassette),
        warmup=_warms_up(cassette),
        prompt=_prompt(first),
        turns=_turns(items),
        tool_outputs=_tool_outputs(items),
        session_id=session_id if isinstance(session_id, str) else None,
    )


def _turns(items: Sequence[Item]) -> tuple[tuple[Item, ...], ...]:
    """The user input of each turn: a turn begins where input follows the model's output (or tool outputs)."""
    turns: list[list[Item]] = []
    opening = True
    for item in items:
        if _is_turn_input(item):
            if not opening or not turns:
                turns.append([])
            turns[-1].append(item)
        opening = _is_turn_input(item)
    return tuple(tuple(turn) for turn in turns)


def _tool_outputs(items: Sequence[Item]) -> dict[str, Item]:
    """The id of each call answered -> the item that answered it."""
    return {key: item for item in items if (key := answered_key(item)) is not None}


def _transport(cassette: Cassette) -> Transport:
    websocket = bool(cassette.connections) or any(e.transport == "ws" for e in cassette.exchanges)
    return "ws" if websocket else "http"


def _warms_up(cassette: Cassette) -> bool:
    """A warmup recorded, or a prewarm handshake (e.g. a refused one)."""
    return any(e.transport == "ws" and is_warmup(e.wire_request or {}) for e in cassette.exchanges) or any(
        is_prewarm(c.handshake.request_headers) for c in cassette.connections
    )


def _prompt(request: Mapping[str, object]) -> Prompt:
    """The prompt settings of a logical request: what the reference client models, the rest verbatim."""
    modelled = ("model", "instructions", "input", "tools", "parallel_tool_calls", "prompt_cache_key", "stream")
    tools = request.get("tools")
    return Prompt(
        model=str(request.get("model", "")),
        instructions=str(request.get("instructions") or ""),
        tools=tuple(tool for tool in tools if isinstance(tool, dict)) if isinstance(tools, list) else (),
        parallel_tool_calls=bool(request.get("parallel_tool_calls", False)),
        overrides={name: value for name, value in request.items() if name not in modelled},
    )


def session_assignment(urls: ServerURLs, plan: SessionPlan, name: str = "cassette") -> Assignment:
    """One replay of a cassette: a command is told the server's URLs; the reference client replays the session
    the cassette's requests show (its warmup, each turn, each tool output)."""

    async def session(reference: ReferenceClient) -> ClientEnd:
        model_client = reference.model_client or ModelClient
        async with model_client(
            urls.http_url,
            supports_websockets=plan.transport == "ws",
            session_id=plan.session_id,
            options=replace(
                ClientOptions.quick(), idle_timeout=REPLAY_IDLE_TIMEOUT, strict_streams=reference.strict_streams
            ),
        ) as client:
            conversation = Conversation(client, plan.prompt)
            try:
                if plan.warmup and reference.warmup:
                    await conversation.warmup()
                for turn in plan.turns:
                    await conversation.run_turn(list(turn), plan.tool_output)
            except ModelClientError as error:
                return ClientEnd("failed", f"the turn failed: {error}")
        return ClientEnd("completed")

    return Assignment(urls, {}, session, name=name)


@dataclass
class ReplayResult:
    """One cassette replayed: the diff of what the client did against the recording, and how the client ended."""

    name: str
    path: Path | None
    report: DiffReport
    client: ClientEnd
    unplayed: list[str] = field(default_factory=list)
    matching: str = ""  # how requests were matched: `preset codex (stored in the cassette)`, "" for the defaults

    @property
    def ok(self) -> bool:
        """The client behaved as recorded: same exchanges, same requests, same outcomes."""
        return self.report.equal

    def to_dict(self) -> dict[str, object]:
        """The shape of `rrkit replay --json`: one object per cassette, its diff as `rrkit diff --json` has it."""
        return {
            "cassette": str(self.path) if self.path is not None else self.name,
            "ok": self.ok,
            "client": {"ok": self.client.ok, "detail": self.client.detail},
            "unplayed": self.unplayed,
            "matching": self.matching or None,
            "report": self.report.to_dict(),
        }


async def replay_cassette(
    cassette: Cassette,
    client: ClientUnderTest,
    *,
    match: MatchConfig | None = None,
    view: View = "both",
    strict: bool = False,
    ignore: Sequence[str] = (),
    path: Path | None = None,
    settle_timeout: float = 5.0,
    timeout: float = COMMAND_TIMEOUT,
) -> ReplayResult:
    """Serve `cassette`, run `client` against it, and diff what the server captured against the recording."""
    plan = session_plan(cassette)
    source = CassetteSource(cassette, match or MatchConfig())
    async with FakeServer(source=source, log_level="critical") as server:
        urls = ServerURLs(server.http_url, server.ws_url)
        run = await client.run(session_assignment(urls, plan, cassette.name or "cassette"), timeout)
        try:
            await server.settle_async(settle_timeout)
        except TimeoutError as error:
            run = ClientEnd("failed", f"{run.detail}; {error}".strip("; "))
        observed = cassette_from_capture(server.exchanges, server.connections, name=f"{cassette.name} (replayed)")
    presets = source.match.presets
    names = ("recorded", "replay")
    report = diff_cassettes(cassette, observed, strict=strict, ignore=ignore, view=view, names=names, presets=presets)
    name = cassette.name or (path.stem if path else "")
    return ReplayResult(name, path, report, run, source.unplayed(), matching=source.matching)


async def replay_against(
    base_url: str,
    cassette: Cassette,
    *,
    strict: bool = False,
    ignore: Sequence[str] = (),
    path: Path | None = None,
    idle_timeout: float = IDLE_TIMEOUT,
) -> ReplayResult:
    """Send the cassette's recorded requests to the server at `base_url` and diff its answers against the
    recorded ones (event types and order, items, outcomes; texts, ids and times are not compared)."""
    observed = await answers_of(base_url, cassette, idle_timeout=idle_timeout)
    report = diff_cassettes(
        cassette, observed, strict=strict, ignore=(*TEXT_PATHS, *ignore), view="both", names=("recorded", base_url)
    )
    return ReplayResult(cassette.name or (path.stem if path else ""), path, report, ClientEnd("completed", base_url))


def first_difference(result: ReplayResult) -> str:
    """The first place the run left the recording: kind, exchange, field (empty when it did not)."""
    if result.ok:
        return ""
    first = result.report.differences[0]
    where = first.a if first.a.exchange is not None else first.b
    exchange = f"exchange {where.exchange}" if where.exchange is not None else "connections"
    event = f", event {where.event}" if where.event is not None else ""
    return f"{first.kind.value} at {exchange}{event}: {first.path}"


async def run_replays(
    cassettes: Sequence[tuple[Path, Cassette]],
    *,
    command: Sequence[str] | None = None,
    against: str | None = None,
    match: MatchConfig | None = None,
    view: View = "both",
    strict: bool = False,
    ignore: Sequence[str] = (),
    timeout: float = COMMAND_TIMEOUT,
    strict_streams: bool = False,
) -> list[ReplayResult]:
    """`rrkit replay`: each cassette in turn, with a progress display on stderr; `strict_streams`: the reference
    client stricter than Codex (`ClientOptions.strict_streams`)."""
    progress_console = Console(stderr=True, highlight=False)
    client = as_client(list(command) if command else ReferenceClient(strict_streams=strict_streams))
    results: list[ReplayResult] = []
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=progress_console, transient=True
    ) as progress:
        task = progress.add_task("replaying", total=len(cassettes))
        for path, cassette in cassettes:
            progress.update(task, description=f"replaying {path.name}")
            if against is not None:
                result = await replay_against(against, cassette, strict=strict, ignore=ignore, path=path)
            else:
                result = await replay_cassette(
                    cassette, client, match=match, view=view, strict=strict, ignore=ignore, path=path, timeout=timeout
                )
            results.append(result)
            progress.advance(task)
    return results


def replay_report(results: Sequence[ReplayResult], who: str) -> Report:
    """`rrkit replay`'s report: a case per cassette, a finding per difference from the recording; `detail` has each
    replay as `ReplayResult.to_dict` gives it."""
    cases = []
    for result in results:
        name = str(result.path) if result.path is not None else result.name
        case = result.report.to_case(name, file=str(result.path) if result.path is not None else None)
        client = f"the client: {'ok' if result.client.ok else 'failed'}" + (
            f" ({result.client.detail})" if result.client.detail else ""
        )
        cases.append(case.model_copy(update={"group": "rrkit.replay", "output": f"{case.output}; {client}"}))
    same = sum(1 for result in results if result.ok)
    summary = f"{same} of {len(results)} behaved as recorded"
    detail = {"replays": [result.to_dict() for result in results]}
    return Report(tool="replay", subject=who, summary=summary, cases=tuple(cases), detail=detail)


def show_replays(results: Sequence[ReplayResult], who: str, console: Console) -> None:
    """Each replay that left the recording as its difference report, then a summary table."""
    for result in results:
        if not result.ok:
            console.rule(f"{result.path or result.name}")
            render_report(result.report, console)
    console.print(summary_table(results, who))


def summary_table(results: Sequence[ReplayResult], who: str) -> Table:
    table = Table(title=f"rrkit replay: {who}", title_justify="left", expand=False)
    for column in ("cassette", "exchanges", "result", "first difference"):
        table.add_column(column, overflow="fold")
    for result in results:
        verdict = "[green]as recorded[/]" if result.ok else f"[red]{len(result.report.differences)} differences[/]"
        if not result.client.ok:
            verdict += f"\n[yellow]{escape(quoted(result.client.detail))}[/]"  # its output: a few KiB of each end
        name = escape(str(result.path) if result.path is not None else result.name)
        name += f"\n[dim]matching with {escape(result.matching)}[/]" if result.matching else ""
        table.add_row(name, str(result.report.a.exchanges), verdict, escape(quoted(first_difference(result))))
    same = sum(1 for result in results if result.ok)
    table.caption = f"{same} of {len(results)} behaved as recorded"
    return table

"""`rrkit explore`: a client run on mutated streams, each distinct failure shrunk to a minimal script."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from ..explore.budget import CASE_TIMEOUT, MAX_CASES
from ..explore.budget import SECONDS as BUDGET_SECONDS
from ..protocol.vocabulary import TRANSPORTS
from .cassettes import ThenCommand, client_command
from .common import SECONDS, strict_streams_option, strict_streams_usage
from .group import main
from .reporting import ReportOutputs, conclude_report, report_options


@main.command(cls=ThenCommand)
@click.option(
    "--from",
    "from_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Explore from this script's first reply or this cassette's first create, instead of rrkit's own streams.",
)
@click.option(
    "--transport",
    type=click.Choice(["http", "ws", "both"]),
    default="both",
    show_default=True,
    help="Serve the mutated streams over HTTP SSE, over WebSocket, or both.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The same seed generates the same cases.")
@click.option(
    "--max-cases",
    type=click.IntRange(min=1),
    default=MAX_CASES,
    show_default=True,
    help="Cases generated at most (each distinct one run once); shrinking what is found runs more.",
)
@click.option(
    "--seconds",
    type=SECONDS,
    default=BUDGET_SECONDS,
    show_default=True,
    help="Seconds the whole search may take, shrinking included: no run starts after them (one in progress may "
    "take its --case-timeout); a finding not shrunk by then is reported as found, not minimal.",
)
@click.option(
    "--case-timeout",
    type=SECONDS,
    default=CASE_TIMEOUT,
    show_default=True,
    help="Seconds the client may run on one case, then stopped (a client that hangs breaks a must).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Where each finding's minimal script is written (explore-NN-REASON-BEHAVIOUR.yaml).",
)
@report_options
@strict_streams_option
@click.pass_context
def explore(
    ctx: click.Context,
    from_path: Path | None,
    transport: str,
    seed: int,
    max_cases: int,
    seconds: float,
    case_timeout: float,
    out_dir: Path,
    outputs: ReportOutputs,
    strict_streams: bool,
) -> None:
    """Find a client's bugs no scenario scripted: serve it streams mutated from well-formed ones and judge each
    run. The operators: an event dropped, repeated, swapped or reordered, sequence_number renumbered, restarted or
    left out, the response id switched, an event type or a field no client knows, a terminal event early or
    failed, an HTTP error status; the bytes in pieces of 1 to 7 (inside a UTF-8 character, inside CRLF), lines
    ending CRLF or CR, pauses, a cut, data that is not JSON, a stall. The order rules say what each stream is:

    \b
    - a whole, valid stream is the turn's answer: the client completes the turn with it (and, when it writes
      its answer's text to the file $RRKIT_ANSWER names, with the response's text);
    - a stream cut, ended early, broken (an event lost, repeated or out of place, another response's events,
      output unfinished at response.completed) or failed, or an error status, is no answer: the client fails
      the turn on its own.

    Hypothesis generates the cases (seeded: the same seed, the same cases) and shrinks each distinct failure (the
    must, why the stream is what it is, what the client did) to its fewest operators; its stream is then cut to
    its fewest events and written as a script into --out, with the must, the seed and the command in its header:
    `rrkit serve --script FILE` serves it again and `rrkit conform --scenario FILE -- COMMAND` judges a client on it.

    The client is rrkit's reference client, or the command after `--`, run as `rrkit conform` runs it (with
    OPENAI_BASE_URL, RRKIT_HTTP_URL, RRKIT_WS_URL, RRKIT_TRANSPORT and RRKIT_ANSWER in its environment; exit
    status 0 says the turn completed). The reference client answers the broken streams Codex answers; with
    --strict-streams it refuses them, and explore finds nothing in it.

    Exit status: 0 nothing found, 1 a finding, 2 a usage or file error.

    \b
    Examples:
      rrkit explore --transport http --seed 7 -- python my_client.py
      rrkit explore --from cassettes/text.http.json --max-cases 500 --junit explore.xml -- node client.mjs
      rrkit conform --scenario explore-01-sequence-answered.yaml -- python my_client.py
    """
    from ..drive import ReferenceClient
    from ..explore import run
    from ..explore.budget import Budget
    from ..explore.seeds import seeds_from

    command = client_command(ctx)
    strict_streams_usage(strict_streams, command)
    transports = tuple(name for name in TRANSPORTS if transport in (name, "both"))
    seeds = seeds_from(from_path) if from_path is not None else None
    judged = shlex.join(command) if command else "rrkit's reference client" + (" (strict)" if strict_streams else "")
    click.echo(
        f"rrkit explore: judging {judged} over {' and '.join(transports)}, seed {seed}: at most {max_cases} cases "
        f"and {seconds:g} s (--max-cases, --seconds)",
        err=True,
    )
    said = ["rrkit explore", f"--seed {seed}", f"--transport {transport}"]
    said += [f"--from {shlex.quote(str(from_path))}"] if from_path is not None else []
    said += ["--", shlex.join(command)] if command else ["--strict-streams"] if strict_streams else []
    _, report = run(
        command or ReferenceClient(strict_streams=strict_streams),
        seeds=seeds,
        transports=transports,
        seed=seed,
        budget=Budget(max_cases, seconds, case_timeout),
        out=out_dir,
        command=" ".join(said),
    )
    conclude_report(report, outputs)

"""`rrkit demo` (the reference client against every shipped script), `rrkit fixtures` and `rrkit schema`."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..protocol.vocabulary import TRANSPORTS
from ..schema import SCHEMAS, schema_text, shipped_path
from .common import FileError, fixtures_directory, fixtures_option, strict_streams_option
from .group import failed, main


@main.command()
@fixtures_option
@click.option(
    "--transport", "transports", type=click.Choice(["http", "ws"]), multiple=True, help="Only this transport."
)
@click.option("--warmup/--no-warmup", default=True, show_default=True, help="Warm up each WebSocket session.")
@click.option(
    "--record",
    "record_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write each run's recording to DIR/<fixture>.<transport>.json (the golden cassettes: cassettes/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON (for machines) instead of a table.")
@strict_streams_option
def demo(
    fixtures_dir: Path | None,
    transports: tuple[str, ...],
    warmup: bool,
    record_dir: Path | None,
    as_json: bool,
    strict_streams: bool,
) -> None:
    """Run the reference client through every fixture over SSE and WebSocket; exit 0 if all end as expected.

    Exit status: 0 every run ended as its script expects, 1 one did not, 2 a usage or file error.

    \b
    Examples:
      rrkit demo
      rrkit demo --transport ws --record /tmp/recordings
      rrkit demo --json | jq '.[] | select(.ok | not)'
    """
    import asyncio

    from rich.console import Console
    from rich.progress import Progress

    directory = fixtures_directory(fixtures_dir)
    out = Console(highlight=False, markup=False)
    if not as_json:
        out.print(f"rrkit demo: the reference client against the fake server, scripts from {directory}")
    from ..demo import demo_table, rows_json, run_demo, summary

    errors = Console(stderr=True)
    with Progress(console=errors, transient=True, disable=not errors.is_terminal) as progress:
        task = progress.add_task("starting", total=None)

        def step(done: int, total: int, what: str) -> None:
            progress.update(task, completed=done, total=total, description=what)

        rows = asyncio.run(
            run_demo(
                directory,
                transports=transports or TRANSPORTS,
                warmup=warmup,
                record=record_dir,
                progress=step,
                strict_streams=strict_streams,
            )
        )
    if not rows:
        raise FileError(f"no scripts (*.yaml, *.yml, *.json) in {directory}: give another --fixtures DIR")
    if as_json:
        click.echo(json.dumps(rows_json(rows), indent=2))
    else:
        out.print(demo_table(rows))
        out.print(summary(rows))
    if record_dir is not None and not as_json:
        click.echo(f"Wrote {len(rows)} cassettes to {record_dir}")
    if not all(row.ok for row in rows):
        failed()


@main.command()
def fixtures() -> None:
    """List the scripts shipped with rrkit, one line each: use one as `--script fixture:NAME`.

    Exit status: 0 listed, 2 a usage error.

    \b
    Examples:
      rrkit fixtures
      rrkit serve --script fixture:ws-refuse-426
    """
    from rich.console import Console
    from rich.table import Table

    from ..files.documents import read_document
    from ..protocol.exceptions import ScriptError
    from ..script.shipped import shipped_fixtures

    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column("name", no_wrap=True, style="bold")
    table.add_column("what it does", overflow="fold")
    for name, path in shipped_fixtures().items():
        data, _ = read_document(path, "script", ScriptError)  # its description only: no script model is built
        description = str(data.get("description", "")) if isinstance(data, dict) else ""
        table.add_row(name, " ".join(description.split()).split(". ")[0].rstrip(".") + ".")
    Console(highlight=False, markup=False).print(table)


@main.command()
@click.argument("name", type=click.Choice(list(SCHEMAS)))
@click.option("--path", "as_path", is_flag=True, help="Print where the schema's file is installed instead.")
def schema(name: str, as_path: bool) -> None:
    """Print the JSON Schema of a kind of file: script, cassette, scenario, profile or probe.

    Editors check and complete YAML with it: put `# yaml-language-server: $schema=PATH` (PATH from `--path`) on
    a script's first line, or map the schema to your files in the editor's settings.

    Exit status: 0 printed, 2 a usage error (an unknown NAME).

    \b
    Examples:
      rrkit schema script > script.schema.json
      rrkit schema scenario --path
    """
    if as_path:
        click.echo(str(shipped_path(name)))
        return
    shipped = shipped_path(name)  # the model's schema as made at release (a test holds them equal): no model loads
    click.echo(shipped.read_text(encoding="utf-8") if shipped.is_file() else schema_text(name), nl=False)

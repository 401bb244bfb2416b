"""The `rrkit` command line: a thin front end, each option mapped to a call into the package."""

from __future__ import annotations

from pathlib import Path

import click

from .script.loader import ScriptError, default_script, load_script
from .server.runner import FakeServer


@click.group()
@click.version_option(package_name="rrkit")
def main() -> None:
    """rrkit: record/replay protocol testing for the OpenAI Responses streaming protocol."""


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=0, show_default=True, help="Port to bind; 0 picks a free one.")
@click.option(
    "--script",
    "script_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A YAML or JSON script (see fixtures/); without it every request gets a short text reply.",
)
@click.option("--log-level", default="warning", show_default=True, help="uvicorn log level.")
def serve(host: str, port: int, script_path: Path | None, log_level: str) -> None:
    """Run the fake Responses server until Ctrl-C."""
    try:
        script = load_script(script_path) if script_path else default_script()
    except ScriptError as error:
        raise click.ClickException(str(error)) from None

    def ready(server: FakeServer) -> None:
        click.echo(f"rrkit: serving script {script.name!r} ({len(script.responses)} steps)")
        click.echo(f"  HTTP base URL:      {server.http_url}")
        click.echo(f"  WebSocket base URL: {server.ws_url}   (endpoint {server.responses_ws_url})")
        click.echo("  Press Ctrl-C to stop.")

    try:
        FakeServer(script, host=host, port=port, log_level=log_level).serve_forever(on_ready=ready)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    except KeyboardInterrupt:
        pass
    click.echo("rrkit: stopped")

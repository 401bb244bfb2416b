"""The option bundles commands share (observing, the admin API, limits, the upstream, matching, diffs) and the
server settings `serve` and `record` build from them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..protocol.exceptions import LimitError, SettingError
from ..protocol.limits import UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_TIMEOUT, configured, given_limits

# The cassette modules (and the cassette models, filelock) load in the commands that use a cassette: a plain
# `rrkit serve` starts without them.
if TYPE_CHECKING:
    from ..cassette.match import MatchConfig
from .common import NOT_NEGATIVE, SECONDS

Decorator = Callable[[Callable[..., None]], Callable[..., None]]


def bundle(*options: Decorator) -> Decorator:
    """The options as one decorator, shown in `--help` in the order given."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


observe_options = bundle(
    click.option("--quiet", "-q", is_flag=True, help="Print no line per exchange (only start and stop)."),
    click.option(
        "--journal",
        "journal_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Append each exchange, as it ends, to FILE.jsonl as one JSON object (its fields: docs/guide/serve.md).",
    ),
    click.option(
        "--ready-file",
        "ready_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help='Once listening, write {"port", "http_url", "ws_url", "admin_url", "pid"} as JSON to this file '
        '(atomically; with "admin_token" and mode 0600 when admin calls need one); removed at exit. For --port 0 '
        "in harnesses.",
    ),
)
"""What a running server tells its user and its harness: a line per exchange, a journal, a ready file."""


admin_options = bundle(
    click.option(
        "--admin-token",
        envvar="RRKIT_ADMIN_TOKEN",
        help="Require `Authorization: Bearer TOKEN` on every admin call (env RRKIT_ADMIN_TOKEN); without it only "
        "loopback callers may, and a server bound to another address makes one up and prints it.",
    ),
    click.option(
        "--admin-host",
        "admin_hosts",
        multiple=True,
        help="A host name the admin API answers for, besides IP addresses and localhost (repeatable).",
    ),
)
"""Who may call the admin API of a server the command runs (docs/guide/serve.md: Admin API)."""


def limit_option(command: Callable[..., None]) -> Callable[..., None]:
    """The sizes a server the command runs accepts (rrkit.protocol.limits)."""
    return click.option(
        "--limit",
        "limits",
        multiple=True,
        metavar="NAME=SIZE",
        help="A size limit on what the server reads (repeatable): body (a request body as sent, default 32MiB), "
        "decoded-body (once decoded, 64MiB), ws-message (one WebSocket message, 32MiB): over it, a 413 or a 1009 "
        "close; memory (what is kept of past exchanges, 512MiB): the oldest evicted; upstream-message (an SSE message, "
        "a whole answer or a WebSocket frame from an upstream, 16MiB): the stream cut or a 502; script-file (64MiB) "
        "and cassette-file (1GiB). RRKIT_LIMITS gives the same settings (blank-separated) to every command.",
    )(command)


upstream_options = bundle(
    click.option(
        "--upstream-connect-timeout",
        type=SECONDS,
        default=UPSTREAM_CONNECT_TIMEOUT,
        show_default=True,
        help="Seconds reaching the upstream may take (TCP connect, TLS, the WebSocket handshake); then a 502.",
    ),
    click.option(
        "--upstream-timeout",
        type=NOT_NEGATIVE,
        default=UPSTREAM_TIMEOUT,
        show_default=True,
        help="Seconds the upstream may stay silent (before answering, or mid-stream) before the stream counts as "
        "cut; 0 waits for ever.",
    ),
    click.option(
        "--upstream-redirects",
        type=click.Choice(["none", "same-origin"]),
        default="none",
        show_default=True,
        help="none: an upstream redirect goes to the client as it came; same-origin: a 307 or 308 to the "
        "upstream's own scheme, host and port is followed (the key never goes to another host).",
    ),
)
"""How a relay treats its upstream (docs/guide/record.md)."""


def server_settings(
    host: str,
    port: int,
    log_level: str,
    lenient: bool,
    admin_token: str | None,
    admin_hosts: tuple[str, ...],
    limits: tuple[str, ...],
) -> dict[str, Any]:
    """The FakeServer settings `serve` and `record` share, from their options."""
    try:
        parsed = configured(os.environ).with_settings(limits)
    except LimitError as error:
        raise click.BadParameter(str(error), param_hint="--limit") from None
    click.get_current_context().with_resource(given_limits(parsed))  # for what reads files: scripts, cassettes
    return {
        "host": host,
        "port": port,
        "log_level": log_level,
        "lenient": lenient,
        "admin_token": admin_token,
        "admin_hosts": admin_hosts,
        "limits": parsed,
    }


match_options = bundle(
    click.option(
        "--match-preset",
        "match_presets",
        multiple=True,
        help="Built-in matching preset: codex, openai-sdk (repeatable; docs/guide/matching.md); none for no preset, "
        "not even the one a cassette stores (a recording stores the one of the client it saw).",
    ),
    click.option(
        "--match-ignore",
        "match_ignore",
        multiple=True,
        help="A JSON path left out of matching, wildcards allowed: input[*].output (repeatable).",
    ),
    click.option(
        "--match-normalize",
        "match_normalize",
        multiple=True,
        help="PATH=REGEX: what the regex matches in strings at PATH is not compared (repeatable).",
    ),
    click.option("--allow-repeats", is_flag=True, help="A recorded exchange may answer more than once."),
)
"""The matching options, the same on every command that replays (docs/guide/matching.md)."""


def match_config(
    presets: tuple[str, ...], ignore: tuple[str, ...], normalize: tuple[str, ...], repeats: bool
) -> MatchConfig:
    from ..cassette.match import match_config_from_cli

    try:
        return match_config_from_cli(ignore, normalize, presets, repeats)
    except SettingError as error:
        raise click.UsageError(str(error)) from None


diff_options = bundle(
    click.option(
        "--strict",
        is_flag=True,
        help="Compare ids, timestamps, token counts, per-run headers and timings as recorded.",
    ),
    click.option(
        "--ignore",
        "ignore",
        multiple=True,
        metavar="PATH",
        help="A JSON path left out, as in matching: input[*].output; or rooted as reported: events[*].delta, "
        "outcome.message, response_headers.retry-after (repeatable).",
    ),
    click.option(
        "--view",
        type=click.Choice(["logical", "wire", "both"]),
        default="both",
        show_default=True,
        help="Compare the logical requests, the wire requests, or both (a full request where a delta was "
        "recorded is an incrementality difference).",
    ),
)
"""How cassettes are compared, the same for `rrkit diff` and `rrkit replay` (docs/guide/cassette-checks.md)."""


def timeout_option(default: float, per: str, then: str = "") -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        "--timeout",
        type=SECONDS,
        default=default,
        show_default=True,
        help=f"Seconds (more than 0) the client may run, per {per}{then}.",
    )

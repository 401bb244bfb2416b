"""The options `serve` and `record` share: the cassette and its record mode, and what runs the server (address,
`--lenient`, the upstream's, matching, observing, the admin API, limits, log level, chaos) given to each as one
`ServerOptions`; `folded`, which makes a bundle one parameter."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..server.sessions import IDLE_SECONDS, MAX_SESSIONS
from ..server.timeouts import KEEP_ALIVE_SECONDS
from .common import PORT, RECORD_MODES, SECONDS, log_level_option
from .options import (
    Decorator,
    admin_options,
    bundle,
    limit_option,
    match_config,
    match_options,
    observe_options,
    server_settings,
    upstream_options,
)
from .running import Observe, upstream_source

if TYPE_CHECKING:
    from ..cassette.match import MatchConfig
    from ..relay import UpstreamSource


def folded(into: str, build: Callable[..., object], *options: Decorator) -> Decorator:
    """`options` given to the command as one parameter, `into`: what `build` makes of their values (called with
    them by name, when the command runs)."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(command)
        def run(**values: Any) -> None:
            own = {name: values.pop(name) for name in names}
            command(**values, **{into: build(**own)})

        before = list(getattr(command, "__click_params__", []))
        run.__dict__["__click_params__"] = list(before)  # its own list: the bundle's options go on it
        decorated = bundle(*options)(run)
        names = [param.name for param in decorated.__dict__["__click_params__"][len(before) :]]
        return decorated

    return decorate


@dataclass(frozen=True)
class ServerOptions:
    """What `server_options` gave: where to listen, how to serve (`settings`, for FakeServer), how to relay,
    match and observe."""

    host: str
    port: int
    lenient: bool
    upstream_connect_timeout: float
    upstream_timeout: float
    upstream_redirects: str
    match_presets: tuple[str, ...]
    match_ignore: tuple[str, ...]
    match_normalize: tuple[str, ...]
    allow_repeats: bool
    quiet: bool
    journal_path: Path | None
    ready_path: Path | None
    admin_token: str | None
    admin_hosts: tuple[str, ...]
    limits: tuple[str, ...]
    log_level: str
    chaos: str | None
    require_key: str | None
    session_idle: float
    max_sessions: int
    keep_alive: float
    settings: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # once per command: it parses --limit (a usage error) and puts the limits in force for what reads files
        settings = server_settings(
            self.host, self.port, self.log_level, self.lenient, self.admin_token, self.admin_hosts, self.limits
        )
        if self.chaos is not None:
            from ..protocol.exceptions import SettingError
            from ..protocol.plan import Chaos

            try:
                settings["chaos"] = Chaos.parse(self.chaos)
            except SettingError as error:
                raise click.BadParameter(str(error), param_hint="--chaos") from None
        if self.require_key is not None:
            from ..protocol.headers import is_header_value

            if not self.require_key.strip() or not is_header_value(self.require_key.strip()):
                raise click.BadParameter(
                    "the key is empty or holds what no header can carry (a line break, a non-ASCII character)",
                    param_hint="--require-key",
                )
            settings["require_key"] = self.require_key.strip()
        settings["session_idle"], settings["max_sessions"] = self.session_idle, self.max_sessions
        settings["keep_alive"] = self.keep_alive
        object.__setattr__(self, "settings", settings)

    @property
    def matching_given(self) -> bool:
        return bool(self.match_presets or self.match_ignore or self.match_normalize or self.allow_repeats)

    def match(self) -> MatchConfig:
        """The matching options as a MatchConfig (a usage error naming a bad one); loads the cassette modules."""
        return match_config(self.match_presets, self.match_ignore, self.match_normalize, self.allow_repeats)

    def upstream(self, url: str) -> UpstreamSource:
        """The relay to `url`, as the upstream options say."""
        relay = (self.upstream_connect_timeout, self.upstream_timeout, self.upstream_redirects)
        return upstream_source(url, self.settings["limits"], *relay)

    @property
    def observe(self) -> Observe:
        return Observe(self.quiet, self.journal_path, self.ready_path)


server_options = folded(
    "server",
    ServerOptions,
    click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)."),
    click.option("--port", type=PORT, default=0, show_default=True, help="Port to bind, 0-65535; 0 picks a free one."),
    click.option(
        "--lenient",
        is_flag=True,
        help='Accept request fields of coercible types (stream: "yes", temperature: "0.5") instead of a 400.',
    ),
    upstream_options,
    match_options,
    observe_options,
    admin_options,
    limit_option,
    log_level_option,
    click.option(
        "--require-key",
        metavar="KEY",
        envvar="RRKIT_REQUIRE_KEY",
        help="Answer every request without this API key (Authorization: Bearer KEY, or api-key: KEY) with the "
        "service's 401, over HTTP and on the WebSocket upgrade; each session may set its own (PUT /__rrkit/key). "
        "Also read from $RRKIT_REQUIRE_KEY, which keeps it out of the process list.",
    ),
    click.option(
        "--session-idle",
        type=SECONDS,
        default=IDLE_SECONDS,
        show_default=True,
        metavar="SECONDS",
        help="A session (a request's x-rrkit-session header) ends after this many seconds without a request, its "
        "exchanges and stored responses forgotten.",
    ),
    click.option(
        "--max-sessions",
        type=click.IntRange(min=1),
        default=MAX_SESSIONS,
        show_default=True,
        help="Sessions live at once (and the metrics' session series): beyond it, the least recently used idle "
        "session ends to make room; when every one is busy, a new one is refused with 503.",
    ),
    click.option(
        "--keep-alive",
        type=SECONDS,
        default=KEEP_ALIVE_SECONDS,
        show_default=True,
        metavar="SECONDS",
        help="An idle HTTP connection stays open this long for its next request (nginx's default): longer than a "
        "pooled client keeps one, so that a client busy reading never sends on a connection the server just closed.",
    ),
    click.option(
        "--chaos",
        metavar="drop=P,stall=P,rate_limit=P,retry_after=S,seed=N",
        help="Seeded random faults on every stream without a cut of its own: before each event a drop with "
        "probability P, else a stall; and with rate_limit=P, each request refused first with a 429 "
        "rate_limit_exceeded naming retry_after=S seconds (default 1; from 0.001 to 3600), no scripted reply used "
        "by it. The same seed cuts the same exchanges at the same events, and refuses the same requests, on every "
        "run.",
    ),
)
"""The options of a command that runs a server in the foreground, as its parameter `server` (a ServerOptions)."""


def cassette_options(cassette: str, mode: str, modes: str, *, required: bool = False) -> Decorator:
    """`--cassette` (`cassette_path`, said by `cassette`) and `--record-mode` (`mode` by default, said by `modes`)."""
    return bundle(
        click.option(
            "--cassette",
            "cassette_path",
            required=required,
            type=click.Path(path_type=Path, dir_okay=False),
            help=cassette,
        ),
        click.option("--record-mode", type=click.Choice(RECORD_MODES), default=mode, show_default=True, help=modes),
    )

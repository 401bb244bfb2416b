"""The recording proxy: the fake server answering from an upstream Responses endpoint, recording everything.

It is a `FakeServer` whose reply source is an `UpstreamSource`: the same app validates requests, rebuilds
logical requests for WebSocket deltas, relays the upstream's events through the one streaming engine (each
event as it arrives) and captures every exchange, so that the capture can be written as a cassette.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..protocol.ids import IdGenerator
from ..protocol.limits import UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_TIMEOUT, Limits
from ..relay.source import UpstreamSource
from ..server.runner import FakeServer
from .format import Cassette
from .record import cassette_from_capture
from .redact import Redactor
from .store import save_cassette


class RecordingProxy(FakeServer):
    """`with RecordingProxy("https://api.openai.com/v1") as proxy:` forwards clients pointed at `proxy.http_url`
    (SSE) or `proxy.ws_url` (WebSocket) to the upstream; `proxy.save(path)` writes what went through.

    `redactor` (default: the standard secret headers) applies to every cassette this proxy makes.
    """

    def __init__(
        self,
        upstream_url: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ids: IdGenerator | None = None,
        log_level: str = "warning",
        timeout: float | None = UPSTREAM_TIMEOUT,
        connect_timeout: float = UPSTREAM_CONNECT_TIMEOUT,
        redactor: Redactor | None = None,
        max_message: int = Limits().upstream_message,
        redirects: str = "none",
    ) -> None:
        self.upstream = UpstreamSource(
            upstream_url,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_message=max_message,
            redirects=redirects,
        )
        super().__init__(source=self.upstream, host=host, port=port, ids=ids, log_level=log_level)
        self.redactor = redactor

    # -- the recording --------------------------------------------------------------------------
    def _cassette(self, name: str, redactor: Redactor | None) -> Cassette:
        policy = (redactor or self.redactor or Redactor()).knowing(self.upstream.secrets)
        return cassette_from_capture(self.exchanges, self.connections, name=name, source="proxy", redactor=policy)

    def cassette(self, name: str = "", *, redactor: Redactor | None = None, settle_timeout: float = 5.0) -> Cassette:
        """The redacted cassette of everything forwarded so far, once running streams have ended.

        Call it from another thread than the proxy's loop (use `cassette_async` on that loop). A stream
        still running after `settle_timeout` (or cut short by stopping the proxy) is written without outcome.
        """
        if self.running:
            self.state.capture.wait_settled(settle_timeout)
        return self._cassette(name, redactor)

    async def cassette_async(
        self, name: str = "", *, redactor: Redactor | None = None, settle_timeout: float = 5.0
    ) -> Cassette:
        """`cassette` for a proxy running on the current event loop."""
        with contextlib.suppress(TimeoutError):
            await self.settle_async(settle_timeout)
        return self._cassette(name, redactor)

    def save(self, path: Path | str, *, name: str | None = None, redactor: Redactor | None = None) -> Cassette:
        """Write the cassette atomically (named after the file unless `name` is given) and return it."""
        path = Path(path)
        cassette = self.cassette(path.stem if name is None else name, redactor=redactor)
        save_cassette(cassette, path)
        return cassette

    @property
    def running(self) -> bool:
        return self._server is not None

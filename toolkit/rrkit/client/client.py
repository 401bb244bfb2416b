"""The session-level ModelClient: provider, auth, prompt cache key, HTTP fallback state, cached socket."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any

import httpx
from websockets.protocol import State

from ..protocol.headers import identity_headers
from ..protocol.outcome import Outcome, OutcomeKind
from .errors import UpgradeRequired
from .prompt import Encoding, Prompt, compile_prompt
from .retry import ClientOptions
from .trace import Fallback, Trace
from .turn import TurnSession
from .ws_transport import WebSocketSession, websocket_url

_CLOSE_TIMEOUT = 1.0  # seconds a polite WebSocket close may take before the socket is simply dropped
log = logging.getLogger("rrkit.client")


class ModelClient:
    """One per session. WebSocket is preferred while the provider supports it and the session has
    not fallen back; `websockets_disabled` then holds for every later turn."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = "sk-rrkit",
        supports_websockets: bool = True,
        prompt_cache_key: str | None = None,
        session_id: str | None = None,
        thread_id: str | None = None,
        encoding: Encoding = "standard",
        options: ClientOptions | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.responses_url = self.base_url + "/responses"
        self.ws_url = websocket_url(self.base_url)
        self.api_key = api_key
        self.supports_websockets = supports_websockets
        self.session_id = session_id or str(uuid.uuid4())
        self.thread_id = thread_id or self.session_id
        self.prompt_cache_key = prompt_cache_key or self.session_id
        self.encoding: Encoding = encoding
        self.options = options or ClientOptions()
        self.extra_headers = dict(headers or {})
        self.websockets_disabled = False
        self.trace = Trace()
        self.usage: list[dict[str, Any]] = []
        timeout = httpx.Timeout(self.options.connect_timeout, read=None)
        self.http = httpx.AsyncClient(timeout=timeout, trust_env=False)
        self._cached: WebSocketSession | None = None
        self._connections = 0
        self._turns = 0

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        cached, self._cached = self._cached, None
        if cached is not None:
            await self.discard(cached)
        await self.http.aclose()

    # -- what a request carries -----------------------------------------------------------------
    @property
    def use_websockets(self) -> bool:
        return self.supports_websockets and not self.websockets_disabled

    def compile(self, prompt: Prompt) -> dict[str, Any]:
        """The logical request: the prompt compiled, with the session's cache key unless the prompt sets one."""
        if prompt.prompt_cache_key is None:
            prompt = replace(prompt, prompt_cache_key=self.prompt_cache_key)
        return compile_prompt(prompt, self.encoding)

    def headers(self) -> dict[str, str]:
        headers = {"originator": "rrkit", **identity_headers(self.session_id, self.thread_id), **self.extra_headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    # -- turns ------------------------------------------------------------------------------------
    def new_turn_id(self, turn: int) -> str:
        if self.options.new_id is not None:
            return self.options.new_id()
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"rrkit:{self.thread_id}:turn:{turn}"))

    def turn(self) -> TurnSession:
        """A new turn (use as `async with client.turn() as turn:`): its turn-state token starts empty."""
        self._turns += 1
        return TurnSession(self, self._turns)

    async def warmup(self, prompt: Prompt, *, timeout: float | None = None) -> str | None:
        """Best effort `generate: false` over a socket; its id becomes the first real request's baseline.

        Returns the warmup response id, or None if there was no warmup or it failed (never raises for that).
        There is none over HTTP, nor when the session's socket already holds a last request to continue from.
        """
        if not self.use_websockets:
            return None
        if self._cached is not None and self._cached.last_request is not None:
            return None
        turn = TurnSession(self, 0, warmup=True)
        try:
            return await turn.warm(prompt, self.options.warmup_timeout if timeout is None else timeout)
        except UpgradeRequired as error:
            await self.fall_back(0, f"WebSocket upgrade refused during warmup: {error}")
        except TimeoutError:
            entry = self.trace.entries[-1] if self.trace.entries else None
            if entry is not None and entry.warmup:
                entry.error, entry.outcome = "warmup timed out", Outcome(OutcomeKind.STALLED, entry.events_received)
        except Exception:  # best effort: whatever went wrong, the user's turn starts afresh
            pass
        finally:
            await turn.finish()
        return None

    # -- fallback and the socket cache ----------------------------------------------------------
    async def fall_back(self, turn: int, reason: str) -> None:
        """Disable WebSockets for the whole session and drop the socket with its baseline."""
        if self.websockets_disabled:
            return
        self.websockets_disabled = True
        self.trace.fallbacks.append(Fallback(turn, reason))
        log.warning("falling back to HTTP for the rest of the session: %s", reason)
        cached, self._cached = self._cached, None
        if cached is not None:
            await self.discard(cached)

    @property
    def websocket_serial(self) -> int:
        """The serial number of the last WebSocket connection opened or attempted (0: none yet)."""
        return self._connections

    async def open_websocket(self, headers: Mapping[str, str]) -> WebSocketSession:
        self._connections += 1
        return await WebSocketSession.open(
            self.ws_url, headers, serial=self._connections, timeout=self.options.websocket_connect_timeout
        )

    def take_cached(self) -> WebSocketSession | None:
        cached, self._cached = self._cached, None
        if cached is not None and cached.connection.state is not State.OPEN:
            return None
        return cached

    async def give_back(self, ws: WebSocketSession) -> None:
        """A turn ended with this socket healthy: keep it for the next turn (with its baseline)."""
        if self.use_websockets and self._cached is None and ws.connection.state is State.OPEN:
            self._cached = ws
        else:
            await self.discard(ws)

    async def discard(self, ws: WebSocketSession) -> None:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_CLOSE_TIMEOUT):
                await ws.aclose()

"""The session-level ModelClient: provider, auth, prompt cache key; it builds each turn from its collaborators."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ..protocol.headers import identity_headers
from ..protocol.outcome import Outcome, OutcomeKind
from .connections import Connections
from .errors import InvalidRequest, UpgradeRequired
from .prompt import Encoding, Prompt, RequestDefaults
from .retry import ClientOptions
from .session_state import SessionState
from .trace import Trace
from .turn import Turn


class ModelClient(contextlib.AbstractAsyncContextManager["ModelClient"]):
    """One per session. WebSocket is preferred while the provider supports it and the session has
    not fallen back; `websockets_disabled` then holds for every later turn.

    It owns the session's connections and state and hands them, with its request defaults and options, to
    each turn it starts."""

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
        self.api_key = api_key
        self.session_id = session_id or str(uuid.uuid4())
        self.thread_id = thread_id or self.session_id
        self.prompt_cache_key = prompt_cache_key or self.session_id
        self.encoding: Encoding = encoding
        self.options = options or ClientOptions()
        self.extra_headers = dict(headers or {})
        self._state = SessionState(supports_websockets)
        self._connections = Connections(
            self.base_url,
            connect_timeout=self.options.connect_timeout,
            websocket_connect_timeout=self.options.websocket_connect_timeout,
        )
        self._turns = 0

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._connections.aclose()

    # -- what the session has seen ----------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        return self._state.trace

    @property
    def usage(self) -> list[dict[str, Any]]:
        """The usage of every completed response of the session, in order."""
        return self._state.usage

    @property
    def supports_websockets(self) -> bool:
        return self._state.supports_websockets

    @property
    def websockets_disabled(self) -> bool:
        """The session fell back to HTTP (`trace.fallbacks` says when and why)."""
        return self._state.fallback is not None

    @property
    def use_websockets(self) -> bool:
        return self._state.use_websockets

    # -- what a request carries -----------------------------------------------------------------
    def compile(self, prompt: Prompt) -> dict[str, Any]:
        """The logical request: the prompt compiled, with the session's cache key unless the prompt sets one."""
        return self._defaults().compile(prompt)

    def _defaults(self) -> RequestDefaults:
        return RequestDefaults(self.headers(), self.prompt_cache_key, self.encoding)

    def headers(self) -> dict[str, str]:
        headers = {"originator": "rrkit", **identity_headers(self.session_id, self.thread_id), **self.extra_headers}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    # -- the resource beside the stream -------------------------------------------------------------
    async def cancel(self, response_id: str) -> dict[str, Any]:
        """Cancel a background response (`POST /responses/{id}/cancel`): the response object as the server then
        states it (`cancelled`); a response that has ended, or a foreground one, is refused (InvalidRequest)."""
        path = f"/responses/{quote(response_id, safe='')}/cancel"
        return await self._connections.call("POST", path, {}, self.headers())

    async def create_conversation(self, items: Sequence[Mapping[str, Any]] = ()) -> str:
        """A conversation kept on the server (`POST /conversations`), holding `items` to begin with: its id."""
        answer = await self._connections.call("POST", "/conversations", {"items": list(items)}, self.headers())
        conversation_id = answer.get("id")
        if not isinstance(conversation_id, str):
            raise InvalidRequest("POST /conversations: the answer names no conversation id", outcome=OutcomeKind.FAILED)
        return conversation_id

    # -- turns ------------------------------------------------------------------------------------
    def new_turn_id(self, turn: int) -> str:
        if self.options.new_id is not None:
            return self.options.new_id()
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"rrkit:{self.thread_id}:turn:{turn}"))

    def turn(self) -> Turn:
        """A new turn (use as `async with client.turn() as turn:`): its turn-state token starts empty."""
        self._turns += 1
        return self._turn(self._turns, self.new_turn_id(self._turns))

    def _turn(self, index: int, turn_id: str, *, warmup: bool = False) -> Turn:
        return Turn(
            index,
            turn_id,
            defaults=self._defaults(),
            options=self.options,
            connections=self._connections,
            state=self._state,
            warmup=warmup,
        )

    async def warmup(self, prompt: Prompt, *, timeout: float | None = None) -> str | None:
        """Best effort `generate: false` over a socket; its id becomes the first real request's baseline.

        Returns the warmup response id, or None if there was no warmup or it failed (never raises for that).
        There is none over HTTP, nor when the session's socket already holds a last request to continue from.
        """
        if not self.use_websockets:
            return None
        if self._connections.has_baseline:
            return None
        turn = self._turn(0, "", warmup=True)
        try:
            return await turn.warm(prompt, self.options.warmup_timeout if timeout is None else timeout)
        except UpgradeRequired as error:
            if self._state.fall_back(0, f"WebSocket upgrade refused during warmup: {error}"):
                await self._connections.drop_cached()
        except TimeoutError:
            entry = self.trace.entries[-1] if self.trace.entries else None
            if entry is not None and entry.warmup:
                entry.error, entry.outcome = "warmup timed out", Outcome(OutcomeKind.STALLED, entry.events_received)
        except Exception:  # best effort: whatever went wrong, the user's turn starts afresh
            pass
        finally:
            await turn.finish()
        return None

"""The turn-level session: this turn's streams, its turn-state token, and the sampling loop with retries."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..protocol.events import ERROR
from ..protocol.headers import (
    OPENAI_BETA_HEADER,
    PREWARM_KIND,
    RESPONSES_WEBSOCKETS_BETA,
    TURN_KIND,
    TURN_METADATA_HEADER,
    TURN_STATE_HEADER,
    turn_metadata,
)
from ..protocol.incremental import Decision, decide, response_create
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.request import Item
from ..protocol.vocabulary import Transport
from .errors import ConnectFailed, HandshakeRefused, ModelClientError, UpgradeRequired, dropped, idle_timeout
from .events import Completed, Created, Delta, OutputItemDone, map_event
from .prompt import Prompt
from .retry import RetryBudget, Step
from .sse_transport import SSEStream, open_sse
from .trace import TraceEntry
from .ws_transport import WebSocketSession

if TYPE_CHECKING:
    from .client import ModelClient

DeltaCallback = Callable[[Delta], None]
TOOL_CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
"""Done items the caller must execute and answer with an output item."""


@dataclass
class SampleResult:
    """One successful sampling: the response id, usage, `end_turn`, and the done items it delivered."""

    response_id: str
    usage: dict[str, Any] | None
    end_turn: bool | None
    items: list[Item] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[Item]:
        return [item for item in self.items if item.get("type") in TOOL_CALL_TYPES]


class TurnSession:
    """One turn: its id, a fresh (empty) turn-state token, the socket it borrowed, and its samplings."""

    def __init__(self, client: ModelClient, index: int, *, warmup: bool = False) -> None:
        self.client = client
        self.index = index
        self.warmup = warmup
        self.turn_id = "" if warmup else client.new_turn_id(index)
        """The same on every request and retry of the turn; empty on the prewarm."""
        self.turn_state: str | None = None
        """`x-codex-turn-state` of an HTTP response: empty at the start of every turn, captured once, sent
        back within it. A token on a 101 is not captured: Codex 0.169 never sends it back."""
        self.usage: list[dict[str, Any]] = []
        self.samples = 0
        self._ws: WebSocketSession | None = None

    async def __aenter__(self) -> TurnSession:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.finish()

    async def finish(self) -> None:
        """End of turn: a healthy socket goes back to the client's cache; the turn state is forgotten."""
        ws, self._ws = self._ws, None
        if ws is not None:
            await self.client.give_back(ws)

    # -- headers --------------------------------------------------------------------------------
    @property
    def metadata(self) -> str:
        """`x-codex-turn-metadata`, also copied into the body's `client_metadata`."""
        return turn_metadata(self.turn_id, PREWARM_KIND if self.warmup else TURN_KIND)

    def request_headers(self) -> dict[str, str]:
        headers = {**self.client.headers(), TURN_METADATA_HEADER: self.metadata}
        if self.turn_state:
            headers[TURN_STATE_HEADER] = self.turn_state
        return headers

    def _capture_turn_state(self, headers: Mapping[str, str]) -> None:
        token = headers.get(TURN_STATE_HEADER)
        if token and self.turn_state is None:
            self.turn_state = token

    # -- the sampling loop ------------------------------------------------------------------------
    async def sample(
        self, prompt: Prompt, *, history: list[Item] | None = None, on_delta: DeltaCallback | None = None
    ) -> SampleResult:
        """Stream one response to success, retrying per the policy; done items are appended to `history`.

        Every retry rebuilds the prompt from the latest `history` (done items recorded before a failure
        stay; deltas never enter it). `RetryBudget` (retry.py) decides each retry, its wait and a fallback
        to HTTP, which holds for the rest of the session. Cancellation is never retried.
        """
        history = list(prompt.history) if history is None else history
        self.samples += 1
        options = self.client.options
        budget = RetryBudget(options.retry, options.rng)
        attempt = 0
        current = prompt
        while True:
            transport: Transport = "ws" if self.client.use_websockets else "http"
            entry = self._new_entry(current, transport, attempt)
            try:
                return await self._attempt(entry, history, on_delta)
            except ModelClientError as error:
                step = budget.after(error, transport, can_fall_back=self.client.use_websockets)
                if step.step is Step.FAIL:
                    raise
                if step.step is Step.FALL_BACK:
                    why = (
                        f"WebSocket upgrade refused: {error}"
                        if isinstance(error, UpgradeRequired)
                        else f"WebSocket retry budget of {options.retry.max_retries} spent; last error: {error}"
                    )
                    await self.client.fall_back(self.index, why)
                else:
                    entry.retry_delay, entry.retry_level = step.delay, step.level
                    await options.sleep(step.delay)
            attempt += 1
            current = prompt.with_history(history)

    async def warm(self, prompt: Prompt, timeout: float) -> str:
        """One `generate: false` request over a socket; returns the id that becomes the next baseline. The
        upgrade is bounded by the WebSocket connect timeout, as any upgrade (Codex 0.169.0 waits that long on
        the prewarm's); `timeout` bounds the warmup's answer."""
        entry = self._new_entry(prompt, "ws", 0, warmup=True)
        result = await self._attempt(entry, [], None, answer_timeout=timeout)
        return result.response_id

    # -- one attempt ------------------------------------------------------------------------------
    def _new_entry(self, prompt: Prompt, transport: Transport, attempt: int, *, warmup: bool = False) -> TraceEntry:
        trace = self.client.trace
        metadata = {**(prompt.client_metadata or {}), TURN_METADATA_HEADER: self.metadata}
        return trace.add(
            TraceEntry(
                index=trace.next_index(),
                turn=self.index,
                sample=self.samples,
                attempt=attempt,
                transport=transport,
                warmup=warmup,
                logical=self.client.compile(replace(prompt, client_metadata=metadata)),
                started_at=self.client.options.clock(),
            )
        )

    async def _attempt(
        self,
        entry: TraceEntry,
        history: list[Item],
        on_delta: DeltaCallback | None,
        *,
        answer_timeout: float | None = None,
    ) -> SampleResult:
        """Send `entry.logical` once over `entry.transport` and read its stream; the trace records how it ended.
        `answer_timeout` (WebSocket) bounds what follows the upgrade."""
        try:
            if entry.transport == "ws":
                result = await self._attempt_ws(entry, history, on_delta, answer_timeout)
            else:
                result = await self._attempt_http(entry, history, on_delta)
        except ModelClientError as error:
            entry.outcome = error.outcome(entry.events_received)
            entry.error, entry.error_type = str(error), type(error).__name__
            await self._drop_websocket()
            raise
        except asyncio.CancelledError:  # the user (or a timeout around the turn) gave up: never retried
            entry.outcome = Outcome(OutcomeKind.DISCONNECTED, entry.events_received)
            entry.error_type = "cancelled"
            await self._drop_websocket()
            raise
        except Exception as error:  # a bug or an unforeseen failure: not a protocol outcome, not retried
            entry.error, entry.error_type = repr(error), type(error).__name__
            await self._drop_websocket()
            raise
        finally:
            entry.ended_at = self.client.options.clock()
        entry.outcome = Outcome(OutcomeKind.COMPLETED, entry.events_received)
        if result.usage is not None:
            self.usage.append(result.usage)
            self.client.usage.append(result.usage)
        return result

    async def _websocket(self, entry: TraceEntry) -> WebSocketSession:
        if self._ws is None:
            self._ws = self.client.take_cached()
        if self._ws is None:
            headers = {**self.request_headers(), OPENAI_BETA_HEADER: RESPONSES_WEBSOCKETS_BETA}
            entry.headers = headers
            try:
                self._ws = await self.client.open_websocket(headers)
            except (HandshakeRefused, UpgradeRequired) as error:
                entry.connection, entry.handshake_status = self.client.websocket_serial, error.status
                raise
            entry.handshake_status, entry.response_headers = 101, dict(self._ws.response_headers)
        entry.connection = self._ws.serial
        return self._ws

    async def _attempt_ws(
        self, entry: TraceEntry, history: list[Item], on_delta: DeltaCallback | None, answer_timeout: float | None
    ) -> SampleResult:
        ws = await self._websocket(entry)  # bounded by the WebSocket connect timeout, not by `answer_timeout`
        async with asyncio.timeout(answer_timeout):
            return await self._exchange_ws(ws, entry, history, on_delta)

    async def _exchange_ws(
        self, ws: WebSocketSession, entry: TraceEntry, history: list[Item], on_delta: DeltaCallback | None
    ) -> SampleResult:
        logical = entry.logical
        if entry.warmup:
            decision = Decision(None, "warmup")
            wire = response_create(logical, None, generate=False)
        else:
            decision = decide(logical, ws.last_request, ws.last_response)
            wire = response_create(logical, decision.incremental)
        entry.wire, entry.incremental, entry.decision = wire, decision.incremental is not None, decision.reason
        ws.remember_request(logical)
        entry.sent_at = self.client.options.clock()
        await ws.send(wire)
        result = await self._consume(ws, entry, history, on_delta)
        ws.remember_completed(result.response_id, result.items)
        return result

    async def _attempt_http(
        self, entry: TraceEntry, history: list[Item], on_delta: DeltaCallback | None
    ) -> SampleResult:
        headers = self.request_headers()
        entry.headers, entry.wire, entry.decision = headers, dict(entry.logical), "HTTP always sends the full request"
        entry.sent_at = self.client.options.clock()
        try:
            stream = await open_sse(self.client.http, self.client.responses_url, entry.logical, headers)
        except ConnectFailed:
            entry.wire = entry.sent_at = None  # never reached the server
            raise
        entry.response_headers = stream.headers
        try:
            self._capture_turn_state(stream.headers)
            return await self._consume(stream, entry, history, on_delta)
        finally:
            await stream.aclose()

    async def _consume(
        self,
        stream: SSEStream | WebSocketSession,
        entry: TraceEntry,
        history: list[Item],
        on_delta: DeltaCallback | None,
    ) -> SampleResult:
        """Read to `response.completed`: deltas to the display, done items to history; anything else fails."""
        idle = self.client.options.idle_timeout
        items: list[Item] = []
        ignored: dict[str, Any] | None = None  # the last `error` event without status, which map_event ignores
        while True:
            try:
                async with asyncio.timeout(idle):
                    raw = await stream.next_event()
            except TimeoutError:
                raise idle_timeout(idle, after=ignored) from None
            if raw is None:
                raise dropped("the stream ended before response.completed", after=ignored)
            entry.receive(raw, self.client.options.clock())
            event = map_event(raw)
            if event is None and raw.get("type") == ERROR:
                ignored = raw
            elif isinstance(event, Created):
                entry.response_id = event.response_id or entry.response_id
            elif isinstance(event, Delta):
                if on_delta is not None:
                    on_delta(event)
            elif isinstance(event, OutputItemDone):
                items.append(event.item)
                if not entry.warmup:
                    history.append(event.item)
            elif isinstance(event, Completed):
                # the baseline id is the completed response's only: never the one `response.created` named
                entry.response_id = event.response_id or entry.response_id
                return SampleResult(event.response_id, event.usage, event.end_turn, items)

    async def _drop_websocket(self) -> None:
        """After any stream error the socket, and with it the incremental baseline, is dropped."""
        ws, self._ws = self._ws, None
        if ws is not None:
            await self.client.discard(ws)

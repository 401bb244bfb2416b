"""One turn of a client session: its streams, its turn-state token, and the sampling loop with retries."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..protocol.calls import client_call
from ..protocol.events import COMPLETED, ERROR, INCOMPLETE
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
from ..protocol.lite import LITE_HEADER, LITE_METADATA
from ..protocol.order import answer_breaks
from ..protocol.outcome import Outcome, OutcomeKind
from ..protocol.request import Item
from ..protocol.steer import (
    STEER,
    STEER_ACCEPTED,
    STEER_ANSWERS,
    STEER_FAILED,
    STEER_PENDING,
    STEERED,
    steer_items,
)
from ..protocol.vocabulary import Transport
from .connections import Connections
from .errors import (
    ConnectFailed,
    HandshakeRefused,
    IdleTimeout,
    ModelClientError,
    SteerNotPossible,
    StreamDropped,
    UpgradeRequired,
    dropped,
    idle_timeout,
)
from .events import Completed, Created, Delta, Metadata, OutputItemDone, ResponseEvent, map_event
from .prompt import Prompt, RequestDefaults
from .retry import ClientOptions, RetryBudget, RetryStep
from .session_state import SessionState
from .sse_transport import SSEStream
from .stream import EventStream
from .trace import TraceEntry
from .ws_transport import ResponsesSocket

DeltaCallback = Callable[[Delta], None]


@dataclass
class SampleResult:
    """One successful sampling: the response id, usage, `end_turn`, and the done items it delivered."""

    response_id: str
    usage: dict[str, Any] | None
    end_turn: bool | None
    items: list[Item] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[Item]:
        """The done items the client must run and answer (protocol.calls)."""
        return [item for item in self.items if client_call(item) is not None]


class Turn(contextlib.AbstractAsyncContextManager["Turn"]):
    """One turn: its id, a fresh (empty) turn-state token, the socket it borrowed, and its samplings.

    It gets from its ModelClient what it needs and nothing more: the request defaults and options, the session's
    connections (where the socket is borrowed from and given back) and state (fallback, trace, usage).
    """

    def __init__(
        self,
        index: int,
        turn_id: str,
        *,
        defaults: RequestDefaults,
        options: ClientOptions,
        connections: Connections,
        state: SessionState,
        warmup: bool = False,
    ) -> None:
        self.index = index
        self.turn_id = turn_id
        """The same on every request and retry of the turn; empty on the prewarm."""
        self.warmup = warmup
        self.turn_state: str | None = None
        """`x-codex-turn-state` of an HTTP response: empty at the start of every turn, captured once, sent
        back within it. A token on a 101 is not captured: Codex 0.169 never sends it back."""
        self.frame_turn_state: str | None = None
        """The turn state of a `response.metadata` frame over WebSocket: captured once, sent back in the
        `client_metadata` of the turn's later requests (Codex 0.169.0 and 0.171.0, observed)."""
        self.usage: list[dict[str, Any]] = []
        self.samples = 0
        self._defaults = defaults
        self._options = options
        self._connections = connections
        self._state = state
        self._socket: ResponsesSocket | None = None
        self._reading: TraceEntry | None = None  # the WebSocket attempt whose stream is being read
        self._steering: list[list[Item]] = []  # steer input sent, not answered yet
        self._accepted: list[Item] = []  # steer input accepted, not committed yet (the successor commits it)
        self._completed: dict[str, Any] | None = None  # a completion read while accepted input awaits its successor
        self.steer_failures: list[dict[str, Any]] = []
        """The `response.steer.failed` events this turn got: each hands its input back."""
        self.steer_pending: list[dict[str, Any]] = []
        """The `response.steer.pending` events this turn got: the input waits on the server for the tool results
        its `required_input` names, in the next request (the reference client does not fill them in)."""

    async def __aexit__(self, *exc_info: object) -> None:
        await self.finish()

    async def finish(self) -> None:
        """End of turn: a healthy socket goes back to the cache (unless the session fell back to HTTP); the turn
        state is forgotten."""
        socket, self._socket = self._socket, None
        if socket is None:
            return
        if self._state.use_websockets:
            await self._connections.give_back(socket)
        else:
            await self._connections.discard(socket)

    # -- headers --------------------------------------------------------------------------------
    @property
    def metadata(self) -> str:
        """`x-codex-turn-metadata`, also copied into the body's `client_metadata`."""
        return turn_metadata(self.turn_id, PREWARM_KIND if self.warmup else TURN_KIND)

    def request_headers(self) -> dict[str, str]:
        headers = {**self._defaults.headers, TURN_METADATA_HEADER: self.metadata}
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
        options = self._options
        budget = RetryBudget(options.retry, options.rng)
        attempt = 0
        current = prompt
        while True:
            transport: Transport = "ws" if self._state.use_websockets else "http"
            entry = self._new_entry(current, transport, attempt)
            try:
                return await self._attempt(entry, history, on_delta)
            except ModelClientError as error:
                step = budget.after(error, transport, can_fall_back=self._state.use_websockets)
                if step.step is RetryStep.FAIL:
                    raise
                if step.step is RetryStep.FALL_BACK:
                    why = (
                        f"WebSocket upgrade refused: {error}"
                        if isinstance(error, UpgradeRequired)
                        else f"WebSocket retry budget of {options.retry.max_retries} spent; last error: {error}"
                    )
                    if self._state.fall_back(self.index, why):
                        await self._connections.drop_cached()
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
        trace = self._state.trace
        metadata = {**(prompt.client_metadata or {}), TURN_METADATA_HEADER: self.metadata}
        if self.frame_turn_state and transport == "ws":
            metadata[TURN_STATE_HEADER] = self.frame_turn_state
        if self._defaults.encoding == "lite" and transport == "ws":
            metadata[LITE_METADATA] = "true"
        return trace.add(
            TraceEntry(
                index=trace.next_index(),
                turn=self.index,
                sample=self.samples,
                attempt=attempt,
                transport=transport,
                warmup=warmup,
                logical=self._defaults.compile(replace(prompt, client_metadata=metadata)),
                started_at=self._options.clock(),
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
            result = await self._exchange(entry, history, on_delta, answer_timeout)
        except ModelClientError as error:
            entry.outcome = error.outcome(entry.events_received)
            entry.error, entry.error_type = str(error), type(error).__name__
            await self._drop_socket()
            raise
        except asyncio.CancelledError:  # the user (or a timeout around the turn) gave up: never retried
            entry.outcome = Outcome(OutcomeKind.DISCONNECTED, entry.events_received)
            entry.error_type = "cancelled"
            await self._drop_socket()
            raise
        except Exception as error:  # a bug or an unforeseen failure: not a protocol outcome, not retried
            entry.error, entry.error_type = repr(error), type(error).__name__
            await self._drop_socket()
            raise
        finally:
            entry.ended_at = self._options.clock()
        entry.outcome = Outcome(OutcomeKind.COMPLETED, entry.events_received)
        if result.usage is not None:
            self.usage.append(result.usage)
            self._state.usage.append(result.usage)
        return result

    async def _exchange(
        self, entry: TraceEntry, history: list[Item], on_delta: DeltaCallback | None, answer_timeout: float | None
    ) -> SampleResult:
        """Send, then read the response's stream: an HTTP one is closed after, a socket outlives it."""
        if entry.transport == "http":
            return await self._over_http(entry, history, on_delta)
        socket = await self._borrow_socket(entry)  # bounded by the WebSocket connect timeout, not `answer_timeout`
        async with asyncio.timeout(answer_timeout):
            await self._send(socket, entry)
            self._reading = entry
            try:
                result = await self._consume(socket, entry, history, on_delta)
            finally:
                self._reading, self._steering, self._accepted, self._completed = None, [], [], None
            socket.remember_completed(result.response_id, result.items)
            return result

    async def steer(self, user_input: str | Sequence[Item]) -> None:
        """Send more user input for the response under way (`response.steer`, WebSocket only). Accepted, the
        response stops at an item boundary (`incomplete`, `steered`) or completes, and the successor the server
        creates commits the input: it enters the history there, and the sampling goes on with the successor's
        stream. A failure (`response.steer.failed`, in `steer_failures`) hands the input back and stops nothing.
        SteerNotPossible when no response is streaming over a socket."""
        entry, socket = self._reading, self._socket
        if entry is None or socket is None or not entry.response_id:
            raise SteerNotPossible(
                "steering needs a response under way over a WebSocket (its response.created read); none is",
                outcome=OutcomeKind.COMPLETED,
            )
        given = user_input if isinstance(user_input, str) else [dict(item) for item in user_input]
        self._steering.append(steer_items(given))
        await socket.send({"type": STEER, "previous_response_id": entry.response_id, "input": given})

    async def _over_http(self, entry: TraceEntry, history: list[Item], on_delta: DeltaCallback | None) -> SampleResult:
        """POST, then read the stream; a background response's stream that breaks is resumed from the last
        sequence number received (`GET /responses/{id}?stream=true&starting_after=N`: never posted again, each
        event received once), within the retry policy; a resume that fails gives up with the break."""
        stream = await self._post(entry)
        budget = RetryBudget(self._options.retry, self._options.rng)
        while True:
            try:
                return await self._consume(stream, entry, history, on_delta)
            except (StreamDropped, IdleTimeout) as error:
                after = _resume_point(entry)
                step = budget.after(error, "http", can_fall_back=False)
                if after is None or entry.response_id is None or step.step is RetryStep.FAIL:
                    raise
                await self._options.sleep(step.delay)
                entry.resumed_after.append(after)
                try:
                    resumed = await self._connections.resume(entry.response_id, after, self.request_headers())
                except ModelClientError:
                    raise error from None
            finally:
                await stream.aclose()
            stream = resumed

    async def _post(self, entry: TraceEntry) -> SSEStream:
        headers = self.request_headers()
        if self._defaults.encoding == "lite":  # over WebSocket, `client_metadata` says it (`_new_entry`)
            headers[LITE_HEADER] = "true"
        entry.headers, entry.wire, entry.decision = headers, dict(entry.logical), "HTTP always sends the full request"
        entry.sent_at = self._options.clock()
        try:
            stream = await self._connections.post(entry.logical, headers)
        except ConnectFailed:
            entry.wire = entry.sent_at = None  # never reached the server
            raise
        entry.response_headers = stream.headers
        self._capture_turn_state(stream.headers)
        return stream

    async def _borrow_socket(self, entry: TraceEntry) -> ResponsesSocket:
        """The turn's socket: the one it holds, else the session's cached one, else a new connection."""
        if self._socket is None:
            self._socket = self._connections.take_cached()
        if self._socket is None:
            headers = {**self.request_headers(), OPENAI_BETA_HEADER: RESPONSES_WEBSOCKETS_BETA}
            entry.headers = headers
            try:
                self._socket = await self._connections.open_socket(headers)
            except (HandshakeRefused, UpgradeRequired) as error:
                entry.connection, entry.handshake_status = self._connections.serial, error.status
                raise
            entry.handshake_status, entry.response_headers = 101, dict(self._socket.response_headers)
        entry.connection = self._socket.serial
        return self._socket

    async def _send(self, socket: ResponsesSocket, entry: TraceEntry) -> None:
        """`response.create`: the full request or an incremental delta on the socket's baseline."""
        logical = entry.logical
        if entry.warmup:
            decision = Decision(None, "warmup")
            wire = response_create(logical, None, generate=False)
        else:
            decision = decide(logical, socket.last_request, socket.last_response)
            wire = response_create(logical, decision.incremental)
        entry.wire, entry.incremental, entry.decision = wire, decision.incremental is not None, decision.reason
        socket.remember_request(logical)
        entry.sent_at = self._options.clock()
        await socket.send(wire)

    async def _consume(
        self, stream: EventStream, entry: TraceEntry, history: list[Item], on_delta: DeltaCallback | None
    ) -> SampleResult:
        """Read to `response.completed`: deltas to the display, done items to history; anything else fails."""
        idle = self._options.idle_timeout
        items: list[Item] = []
        ignored: dict[str, Any] | None = None  # the last `error` event without status, which map_event ignores
        answer: list[dict[str, Any]] = []  # the response's events, held to the answer rules (strict_streams)
        while True:
            try:
                async with asyncio.timeout(idle):
                    raw = await stream.next_event()
            except TimeoutError:
                raise idle_timeout(idle, after=ignored) from None
            if raw is None:
                raise dropped("the stream ended before response.completed", after=ignored)
            entry.receive(raw, self._options.clock())
            if self._steered(raw, entry):
                if self._completed is None or self._accepted:
                    continue
                raw, self._completed = self._completed, None  # pending: no successor comes, the completion ends it
            event = map_event(raw)
            if isinstance(event, Created) and self._accepted and answer:
                answer = []  # a steered response's successor: a response of its own
            if event is None and raw.get("type") == ERROR:
                ignored = raw
                continue
            answer.append(raw)
            if isinstance(event, Completed):
                resumed = entry.resumed_after[-1] if entry.resumed_after else None
                strict = self._options.strict_streams
                if strict and (untrusted := answer_breaks(answer, starting_after=resumed)) is not None:
                    raise dropped(f"the stream is no answer: {untrusted}", after=ignored)
                # the baseline id is the completed response's only: never the one `response.created` named
                entry.response_id = event.response_id or entry.response_id
                return SampleResult(event.response_id, event.usage, event.end_turn, items)
            elif event is not None:
                self._take(event, entry, items, history, on_delta)

    def _steered(self, raw: dict[str, Any], entry: TraceEntry) -> bool:
        """An event of steering the client reads and goes on: an answer to its steer frame, or the end of a
        response its accepted input stopped (or that completed before), which a successor follows."""
        kind = raw.get("type")
        if kind == STEER_PENDING:  # follows the acceptance of the same input: it stays queued on the server
            self.steer_pending.append(raw)
            self._accepted = []
            return True
        if kind in STEER_ANSWERS:
            sent = self._steering.pop(0) if self._steering else []
            if kind == STEER_ACCEPTED:
                self._accepted += sent
            elif kind == STEER_FAILED:
                self.steer_failures.append(raw)
            return True
        if not self._accepted or entry.transport != "ws":
            return False
        if kind == INCOMPLETE:
            details = (raw.get("response") or {}).get("incomplete_details") or {}
            return bool(details.get("reason") == STEERED)
        if kind == COMPLETED:
            self._completed = raw
            return True
        return False

    def _take(
        self,
        event: ResponseEvent,
        entry: TraceEntry,
        items: list[Item],
        history: list[Item],
        on_delta: DeltaCallback | None,
    ) -> None:
        """One event before the end: an id, a frame's turn state, a delta to show, a done item to keep."""
        if isinstance(event, Created):
            if self._accepted and entry.response_id and event.response_id != entry.response_id:
                items += self._accepted  # the successor's creation commits the steering input
                history += self._accepted
                self._accepted, self._completed = [], None
            entry.response_id = event.response_id or entry.response_id
        elif isinstance(event, Metadata):
            if entry.transport == "ws" and self.frame_turn_state is None:
                self.frame_turn_state = event.headers.get(TURN_STATE_HEADER)
        elif isinstance(event, Delta):
            if on_delta is not None:
                on_delta(event)
        elif isinstance(event, OutputItemDone):
            items.append(event.item)
            if not entry.warmup:
                history.append(event.item)

    async def _drop_socket(self) -> None:
        """After any stream error the socket, and with it the incremental baseline, is dropped."""
        socket, self._socket = self._socket, None
        if socket is not None:
            await self._connections.discard(socket)


def _resume_point(entry: TraceEntry) -> int | None:
    """The sequence number to resume a background response's broken stream after: the last one received; None
    when the request was not a streamed background one, or no numbered event came."""
    if entry.logical.get("background") is not True or entry.logical.get("stream") is not True:
        return None
    for received in reversed(entry.events):
        number = received.event.get("sequence_number")
        if isinstance(number, int) and not isinstance(number, bool):
            return number
    return None

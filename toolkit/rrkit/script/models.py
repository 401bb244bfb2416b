"""What the fake server does for each request and each WebSocket handshake: the script's data model.

The same models are the file format in `fixtures/` and what the Python builder API produces.
"""

# No `from __future__ import annotations` here: pydantic would evaluate every field's annotation string at import.
import re
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from ..protocol.events import SIDE_FRAMES
from ..protocol.headers import is_header_value
from ..protocol.names import unknown_name
from ..protocol.outcome import OutcomeKind
from ..protocol.pace import Pace
from ..protocol.plan import MAX_RETRY_AFTER, MIN_RETRY_AFTER, Chaos, Lifecycle
from ..protocol.routes import ROUTE_NAMES
from ..protocol.steer import NOT_SUPPORTED, WAITING_FOR_REQUIRED_INPUT
from ..protocol.vocabulary import CloseKind, LineEnding, Transport
from .outputs import Output
from .strict import Strict as _Strict

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _sendable(headers: dict[str, str]) -> dict[str, str]:
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"{name!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)")
        if not is_header_value(value):
            raise ValueError(
                f"the value of {name!r} cannot be sent as a header: printable ASCII only, no CR, LF or NUL, no space "
                f"at either end (got {value!r})"
            )
    return headers


ResponseHeaders = Annotated[dict[str, str], AfterValidator(_sendable)]
"""Headers the server sends: each name an HTTP token, each value one a header can carry."""


class UsageSpec(_Strict):
    """Token figures; a figure left out is estimated from the request and the output."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


class Failure(_Strict):
    """`response.failed` with `response.error = {code, message}`; the message defaults from the catalogue. `param`
    and `type` (the request parameter at fault, the error's original type) are sent when given."""

    code: str | None
    message: str | None = None
    param: str | None = None
    type: str | None = None


class ErrorEvent(_Strict):
    """The flat SSE `error` event: `{type: "error", message, code?, param?}`."""

    message: str
    code: str | None = None
    param: str | None = None


Status = Annotated[int, Field(ge=400, le=599)]
Seconds = Annotated[float, Field(ge=0)]


def with_retry_headers(
    headers: dict[str, str], retry_after: float | None, retry_after_ms: int | None
) -> dict[str, str]:
    """`headers` plus `retry-after` (seconds) and `retry-after-ms` when given (they win over `headers`)."""
    extra = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    if retry_after_ms is not None:
        extra["retry-after-ms"] = str(retry_after_ms)
    return {**headers, **extra}


class _RetryHeaders(_Strict):
    retry_after: Seconds | None = Field(None, description="a `retry-after` header (seconds)")
    retry_after_ms: Annotated[int, Field(ge=0)] | None = Field(None, description="a `retry-after-ms` header")
    headers: ResponseHeaders = {}

    @property
    def all_headers(self) -> dict[str, str]:
        return with_retry_headers(self.headers, self.retry_after, self.retry_after_ms)


class Reject(_RetryHeaders):
    """An error before the stream: an HTTP error status with an OpenAI-shaped JSON body, or over a
    WebSocket an `error` frame with that status."""

    status: Status
    code: str | None = None
    message: str | None = None
    type: str | None = None
    param: str | None = None
    body: dict[str, Any] | None = Field(None, description="a raw JSON body instead of the OpenAI-shaped one")


class ErrorFrame(_RetryHeaders):
    """A WebSocket `error` frame sent as an event of the stream (after any output items):
    `{type: "error", status?, error: {type, code, message, param}, headers?}`. Without `status` it is the
    frame Codex ignores (bar two codes); over HTTP the same JSON goes out as an SSE `error` event."""

    status: Status | None = None
    code: str | None = None
    message: str | None = None
    type: str | None = None
    param: str | None = None
    error_fields: dict[str, Any] = Field(
        {},
        description="more fields of the error object, as the service sends them (a usage_limit_reached error's "
        "plan_type and resets_at)",
    )


class ChaosSpec(_Strict):
    """Seeded probabilistic faults: before each event a drop with probability `drop`, else a stall with
    probability `stall`; the same seed cuts the same exchanges at the same events on every run. With `rate_limit`,
    a request this reply would answer is first refused with the service's 429 (`retry_after` seconds) with that
    probability, drawn apart from the cuts: the reply is not used up by it, and answers the retry."""

    drop: Annotated[float, Field(ge=0, le=1)] = 0.0
    stall: Annotated[float, Field(ge=0, le=1)] = 0.0
    seed: int = 0
    rate_limit: Annotated[float, Field(ge=0, le=1)] = Field(
        0.0,
        description="the probability that a request this reply would answer is refused first with a 429 "
        "rate_limit_exceeded (retry-after, retry-after-ms), the reply kept for the retry",
    )
    retry_after: Annotated[float, Field(ge=MIN_RETRY_AFTER, le=MAX_RETRY_AFTER)] = Field(
        1.0, description="the delay (seconds) a rate_limit refusal names, in its headers and its message"
    )

    @model_validator(mode="after")
    def _chaos(self) -> Self:
        self.chaos()  # its rules, once (a ValueError names what is wrong)
        return self

    def chaos(self) -> Chaos:
        return Chaos(self.drop, self.stall, self.seed, self.rate_limit, self.retry_after)


class PaceSpec(_Strict):
    """Streaming physics (`protocol.pace.Pace`): `ttft` seconds to the first delta, then `tokens_per_second`, each
    delay off by up to `jitter` of itself, drawn from `seed` (the same seed, the same timing on every run)."""

    ttft: Annotated[float, Field(ge=0)] = 0.0
    tokens_per_second: Annotated[float, Field(gt=0)] | None = None
    jitter: Annotated[float, Field(ge=0, le=1)] = 0.0
    seed: int = 0

    def pace(self) -> Pace:
        return Pace(self.ttft, self.tokens_per_second, self.jitter, self.seed)


class Fault(_Strict):
    """Transport faults around the planned events."""

    drop_after: Annotated[int, Field(ge=0)] | None = Field(None, description="cut the connection after N events")
    close: CloseKind = Field(
        "tcp",
        description="how the cut looks: tcp (no final chunk / no close frame), frame (WebSocket: a close frame "
        "with close_code), end (as if whole: HTTP's final chunk, WebSocket's close frame 1000)",
    )
    close_code: Annotated[int, Field(ge=1000, le=4999)] = 1011
    close_reason: str = ""
    stall_after: Annotated[int, Field(ge=0)] | None = Field(None, description="send N events, then nothing")
    delay_first: Annotated[float, Field(ge=0)] = 0.0
    delay_each: Annotated[float, Field(ge=0)] = 0.0
    chunk_bytes: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="HTTP SSE: the body in pieces of N bytes, each its own chunk, split wherever they fall (inside "
        "a UTF-8 character, inside CRLF); a WebSocket message arrives whole",
    )
    chunk_delay: Annotated[float, Field(ge=0)] = Field(0.0, description="seconds between two pieces of chunk_bytes")
    line_ending: LineEnding = Field("lf", description="HTTP SSE: how lines end: lf, crlf or cr (all are SSE)")
    cut_inside: bool = Field(
        False,
        description="the cut at drop_after falls inside that event: the first half of its bytes (SSE), or a frame "
        "of its JSON cut short (WebSocket), goes out, then the connection closes bare",
    )
    cut_bytes: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="with cut_inside: the cut falls after this many bytes of that event's SSE frame, or characters "
        "of its JSON over WebSocket (all but the last at most); unset: half its frame (SSE), its type and "
        "sequence_number (WebSocket)",
    )
    not_json_at: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description="event N goes out as data that is not JSON (its JSON cut short after its type and "
        "sequence_number: an SSE data line, a WebSocket frame); the events after it follow as usual",
    )
    chaos: ChaosSpec | None = Field(
        None, description="seeded random drops and stalls (a scripted cut wins), and rate-limit refusals"
    )
    pace: PaceSpec | None = Field(
        None, description="streaming physics: ttft, tokens_per_second, jitter, seed (added to delay_first/each)"
    )

    @model_validator(mode="after")
    def _one_cut(self) -> Self:
        if self.drop_after is not None and self.stall_after is not None:
            raise ValueError("use either drop_after or stall_after, not both")
        if self.cut_inside and self.drop_after is None:
            raise ValueError("cut_inside says where the drop_after cut falls: give drop_after too")
        if self.cut_bytes is not None and not self.cut_inside:
            raise ValueError("cut_bytes says where inside the event the cut falls: give cut_inside: true too")
        return self


class TimedEvent(_Strict):
    """A verbatim event, sent `at` seconds after the stream starts (used when replaying recordings)."""

    at: Annotated[float, Field(ge=0)] = 0.0
    event: dict[str, Any]


class SideFrame(BaseModel):
    """A frame that travels with a response's events but is none of them (`protocol.events.SIDE_FRAMES`:
    `response.metadata`, `codex.response.metadata`, `codex.rate_limits`), with its own fields as given; sent
    over either transport before the response event numbered `before` (0: first; past the last: after it)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: str
    before: Annotated[int, Field(ge=0)] = 0

    @field_validator("type")
    @classmethod
    def _side_channel(cls, value: str) -> str:
        if value not in SIDE_FRAMES:
            raise ValueError(unknown_name("side-channel frame type", value, SIDE_FRAMES, list_valid=True))
        return value

    @property
    def frame(self) -> dict[str, Any]:
        """The frame as sent: its type, then its fields."""
        return {"type": self.type, **(self.model_extra or {})}


_ENDINGS = ("fail", "incomplete", "error_event", "error_frame", "reject")


class BackgroundSpec(_Strict):
    """How a reply's response moves when it was created with `background: true` (`protocol.plan.Lifecycle`):
    `queued` for its first `queued_polls` polls and `queued_seconds`, then `in_progress` for at least
    `in_progress_polls` polls while its events are made."""

    queued_polls: Annotated[int, Field(ge=0)] = 0
    queued_seconds: Annotated[float, Field(ge=0)] = 0.0
    in_progress_polls: Annotated[int, Field(ge=0)] = 0

    def lifecycle(self) -> Lifecycle:
        return Lifecycle(self.queued_polls, self.queued_seconds, self.in_progress_polls)


class Reply(_Strict):
    """The server's answer to one request: output items, then a terminal outcome, with optional faults."""

    output: list[Output] = []
    usage: UsageSpec | None = None
    end_turn: bool | None = None
    model: str | None = None
    fail: Failure | None = None
    incomplete: str | None = Field(None, description="response.incomplete with this reason")
    error_event: ErrorEvent | None = None
    error_frame: ErrorFrame | None = None
    reject: Reject | None = None
    fault: Fault = Fault.model_construct()  # no validator built at import
    headers: ResponseHeaders = Field({}, description="extra HTTP response headers")
    turn_state: str | None = Field(None, description="x-codex-turn-state on the HTTP response")
    metadata_turn_state: str | None = Field(
        None, description="WebSocket: a `response.metadata` frame with this x-codex-turn-state, sent first"
    )
    frames: list[SideFrame] = Field([], description="side-channel frames sent with the events (both transports)")
    queued: bool = Field(False, description="a response.queued event before response.created")
    events: list[TimedEvent] | None = Field(None, description="verbatim events instead of generated ones")
    background: BackgroundSpec | None = Field(
        None, description="how the response's status moves when the request asks for `background: true`"
    )

    @model_validator(mode="after")
    def _one_ending(self) -> Self:
        endings = [name for name in _ENDINGS if getattr(self, name) is not None]
        if len(endings) > 1:
            raise ValueError(f"a reply ends one way, but sets {' and '.join(endings)}")
        if self.events is not None and (self.output or self.queued or endings[:1] not in ([], ["reject"])):
            raise ValueError("verbatim `events` hold the output and the ending already: leave out output, queued...")
        return self

    # -- builder methods: each returns a changed copy ----------------------------------------
    def drop_after(self, events: int, *, close: CloseKind = "tcp", code: int = 1011) -> "Reply":
        return self._with_fault(drop_after=events, close=close, close_code=code)

    def stall_after(self, events: int) -> "Reply":
        return self._with_fault(stall_after=events)

    def delayed(self, *, first: float = 0.0, each: float = 0.0) -> "Reply":
        return self._with_fault(delay_first=first, delay_each=each)

    def paced(
        self, *, ttft: float = 0.0, tokens_per_second: float | None = None, jitter: float = 0.0, seed: int = 0
    ) -> "Reply":
        """Streamed like a model: `ttft` seconds to the first delta, then `tokens_per_second`, with `jitter`."""
        return self._with_fault(pace=PaceSpec(ttft=ttft, tokens_per_second=tokens_per_second, jitter=jitter, seed=seed))

    def in_background(
        self, *, queued_polls: int = 0, queued_seconds: float = 0.0, in_progress_polls: int = 0
    ) -> "Reply":
        """Created with `background: true`, the response stays `queued` for `queued_polls` polls and
        `queued_seconds`, then shows `in_progress` for at least `in_progress_polls` polls."""
        spec = BackgroundSpec(
            queued_polls=queued_polls, queued_seconds=queued_seconds, in_progress_polls=in_progress_polls
        )
        return self.model_copy(update={"background": spec})

    def with_turn_state(self, token: str) -> "Reply":
        return self.model_copy(update={"turn_state": token})

    def with_metadata_turn_state(self, token: str) -> "Reply":
        """Over WebSocket, send `token` in a `response.metadata` frame before the response's events (where
        Codex reads it)."""
        return self.model_copy(update={"metadata_turn_state": token})

    def _with_fault(self, **changes: Any) -> "Reply":
        return self.model_copy(update={"fault": Fault.model_validate({**self.fault.model_dump(), **changes})})


class Match(_Strict):
    """A rule on the incoming request; every field given must hold."""

    transport: Transport | None = None
    model: str | None = None
    generate: bool | None = Field(None, description="false: a warmup (`generate: false`); true: any other request")
    incremental: bool | None = Field(None, description="the wire request carries previous_response_id")
    last_input_type: str | None = Field(None, description="of the last logical input item (`message` if it has none)")
    last_input_role: str | None = None
    input_text: str | None = Field(None, description="a substring of the last input item's text")
    headers: dict[str, str] = Field({}, description='header values; "*" means present with any value')
    route: str | None = Field(
        None,
        description="the route (`responses.retrieve`, `responses.compact`, ...: docs/protocol.md, 'Every route'); a "
        "step without one answers the create",
    )

    @field_validator("route")
    @classmethod
    def _known_route(cls, route: str | None) -> str | None:
        if route is not None and route not in ROUTE_NAMES:
            raise ValueError(unknown_name("route", route, ROUTE_NAMES, list_valid=True))
        return route


class _Once(_Strict):
    when: Match | None = None
    times: Annotated[int, Field(ge=1)] = 1
    repeat: bool = Field(False, description="never used up")


class Step(Reply, _Once):
    """A reply in the script's list, with the rule that picks it and how often it may be used."""


class Handshake(_Once):
    """What the server does with a WebSocket upgrade."""

    refuse: Annotated[int, Field(ge=300, le=599)] | None = Field(None, description="answer with this status")
    refuse_headers: ResponseHeaders = {}
    retry_after: Seconds | None = Field(None, description="a refusal's `retry-after` header (seconds)")
    retry_after_ms: Annotated[int, Field(ge=0)] | None = Field(None, description="a refusal's `retry-after-ms`")
    refuse_body: dict[str, Any] | None = None
    delay: Annotated[float, Field(ge=0)] = 0.0
    turn_state: str | None = Field(None, description="x-codex-turn-state on the 101 response")
    headers: ResponseHeaders = {}
    close_after: Annotated[int, Field(ge=1)] | None = Field(None, description="close after N requests")
    close: CloseKind = "frame"
    close_code: Annotated[int, Field(ge=1000, le=4999)] = 1000

    @property
    def all_refuse_headers(self) -> dict[str, str]:
        return with_retry_headers(self.refuse_headers, self.retry_after, self.retry_after_ms)


class SteerStep(_Strict):
    """How the server answers a WebSocket `response.steer` frame: `accepted`; `pending` (accepted, then
    `response.steer.pending` waiting for `required_input`); or `failed` with `code` (the frame's input returned)."""

    answer: Literal["accepted", "pending", "failed"] = "accepted"
    code: str = Field(NOT_SUPPORTED, description="failed: the steering error code")
    message: str | None = Field(None, description="failed: the message (default: the code's own)")
    reason: str = Field(WAITING_FOR_REQUIRED_INPUT, description="pending: why the input is still queued")
    required_input: list[dict[str, Any]] = Field(
        [], description="pending: stubs of the tool results it waits for ({type: function_call_output, call_id, name})"
    )
    times: Annotated[int, Field(ge=1)] = 1
    repeat: bool = Field(False, description="never used up")


class Expect(_Strict):
    """How a client's run of the script should end (`rrkit demo` checks it): the turn's outcome, the first
    attempt's when it differs (a fault the client retries past), and the code, status or reason of the attempt
    that does not complete."""

    outcome: OutcomeKind = OutcomeKind.COMPLETED
    first_attempt: OutcomeKind | None = Field(None, description="the first attempt's outcome (default: `outcome`)")
    code: str | None = None
    status: int | None = None
    reason: str | None = None
    transport: Transport | None = Field(None, description="a fault of this transport only: the other just completes")
    answer: bool | None = Field(
        None,
        description="whether a correct client takes what it gets as the turn's answer (`rrkit explore` writes it; "
        "`rrkit conform --scenario` judges it); unset: as `outcome` says (completed: yes)",
    )
    text: str | None = Field(
        None, description="the answer's text, as a client that writes it to $RRKIT_ANSWER gives it"
    )


class Script(_Strict):
    """The whole script: replies picked in order by their rules, handshake answers, and a fallback."""

    version: Literal[1] = 1
    name: str = ""
    description: str = ""
    responses: list[Step] = []
    handshakes: list[Handshake] = []
    default: Reply | None = Field(None, description="answer when no step matches (else an error)")
    steer: list[SteerStep] = Field(
        [],
        description=f"answers to WebSocket response.steer frames, in order (none left: failed, {NOT_SUPPORTED})",
    )
    expect: Expect = Field(default_factory=Expect, description="how a client's run should end; read by `rrkit demo`")

    def add(self, reply: Reply, *, when: Match | None = None, times: int = 1, repeat: bool = False) -> "Script":
        """Append a reply (a queue entry when `when` is None); returns the script for chaining."""
        fields = {name: getattr(reply, name) for name in Reply.model_fields}
        self.responses.append(Step.model_validate({**fields, "when": when, "times": times, "repeat": repeat}))
        return self

    def queue(self, *replies: Reply) -> "Script":
        for reply in replies:
            self.add(reply)
        return self

    def add_handshake(self, handshake: Handshake) -> "Script":
        self.handshakes.append(handshake)
        return self

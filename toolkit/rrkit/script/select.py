"""Picking the step that answers a request (or a handshake), and saying why nothing matched."""

from __future__ import annotations

import abc
import asyncio
import json
import threading
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..protocol.events import Event
from ..protocol.ids import IdGenerator
from ..protocol.plan import Rejection, ResponsePlan
from ..protocol.request import input_items, is_warmup
from ..protocol.response_object import echoed_request
from ..protocol.routes import CREATE, Route
from ..protocol.vocabulary import Transport
from .default_reply import default_plan
from .steering import answer_steer

if TYPE_CHECKING:  # loaded with the first script (a plain `rrkit serve` plays the default one without them)
    from .models import Handshake, Match, Reply, Script, Step


_CREATE_ROUTE = Route(CREATE)
"""The route of every create's view, one for all: a Route is frozen."""


@dataclass(frozen=True)
class RequestView:
    """What a rule can look at: transport, headers (lower-case names), the wire and the logical request; and
    what a relay forwards as it came: the query string and the body's bytes as sent (encoded, if they were);
    and the server's id generator, which names the responses a source makes; and the number of the exchange
    carrying it, which seeded chaos draws with (`Chaos.rate_limited`)."""

    transport: Transport
    headers: Mapping[str, str]
    wire: Mapping[str, Any]
    logical: Mapping[str, Any]
    connection_id: int | None = None
    query: str = ""
    body: bytes | None = None
    ids: IdGenerator = field(default_factory=IdGenerator, compare=False, repr=False)
    method: str = "POST"
    path: str = "/responses"  # under the API base (protocol.routes.api_path)
    route: Route = _CREATE_ROUTE
    exchange_id: int = 0

    @property
    def echoed(self) -> dict[str, Any]:
        """The request a response to this one echoes (`protocol.response_object.echoed_request`)."""
        return echoed_request(self.wire, self.logical)

    def describe(self) -> str:
        if self.route.name != CREATE:
            return f"{self.method} {self.path}{'?' + self.query if self.query else ''} ({self.route.name})"
        items = input_items(dict(self.logical))
        last = items[-1] if items else {}
        return (
            f"{self.transport} request: model={self.wire.get('model')!r}, generate={self.wire.get('generate')!r}, "
            f"previous_response_id={self.wire.get('previous_response_id')!r}, {len(items)} logical input items, "
            f"last input type={last.get('type', 'message' if last else None)!r}"
        )


def _item_text(item: Mapping[str, Any]) -> str:
    for key in ("content", "output", "input", "arguments", "text"):
        value = item.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            return " ".join(str(part.get("text", "")) for part in value if isinstance(part, Mapping))
    return json.dumps(item)


_Seen = Callable[[RequestView, Mapping[str, Any]], object]
_EQUALS: dict[str, tuple[str, _Seen]] = {
    "transport": ("transport == {!r}", lambda request, last: request.transport),
    "model": ("model == {!r}", lambda request, last: request.wire.get("model")),
    "generate": ("generate == {!r}", lambda request, last: not is_warmup(request.wire)),
    "incremental": ("incremental == {!r}", lambda request, last: bool(request.wire.get("previous_response_id"))),
    "last_input_type": ("last input type == {!r}", lambda request, last: last.get("type", "message") if last else None),
    "last_input_role": ("last input role == {!r}", lambda request, last: last.get("role")),
    "route": ("route == {!r}", lambda request, last: request.route.name),
}
"""The `Match` fields that hold when the request shows their value: how each reads, and what the request (and its
last logical input item) shows for it."""


def failed_conditions(match: Match, request: RequestView) -> tuple[list[str], list[str]]:
    """(passed, failed) descriptions of every condition the rule sets."""
    items = input_items(dict(request.logical))
    last = items[-1] if items else {}
    checks = [
        (text.format(expected), seen(request, last) == expected)
        for name, (text, seen) in _EQUALS.items()
        if (expected := getattr(match, name)) is not None
    ]
    if match.input_text is not None:
        found = bool(last) and match.input_text in _item_text(last)
        checks.append((f"last input contains {match.input_text!r}", found))
    checks += [
        (f"header {name.lower()} == {expected!r}", _header_holds(request.headers.get(name.lower()), expected))
        for name, expected in match.headers.items()
    ]
    return [text for text, ok in checks if ok], [text for text, ok in checks if not ok]


def _header_holds(actual: str | None, expected: str) -> bool:
    return actual is not None if expected == "*" else actual == expected


@dataclass
class NoMatch:
    """Why no step answered: the request and the closest rules with what failed. A source whose report takes a
    while to make (ranking a cassette's exchanges) gives `NoMatch.deferred(make)`: the report is made only when it is
    reported (`reported`), as a request it misses may yet be answered by another source (an upstream)."""

    request: str
    closest: list[str] = field(default_factory=list)
    what: str = "scripted reply"
    hint: str = "Add a reply (or a `default`) to the script."
    make: Callable[[], NoMatch] | None = field(default=None, kw_only=True, repr=False, compare=False)

    @classmethod
    def deferred(cls, make: Callable[[], NoMatch]) -> NoMatch:
        """A miss whose report `make` makes when it is reported (in a worker thread, off the event loop)."""
        return cls("", make=make)

    def made(self) -> NoMatch:
        """The report itself: this one, or the one a deferred miss makes now."""
        return self if self.make is None else self.make()

    async def reported(self) -> NoMatch:
        """`made`, off the event loop when the report has yet to be made."""
        return self if self.make is None else await asyncio.to_thread(self.make)

    def message(self) -> str:
        if self.make is not None:
            return self.made().message()
        lines = [f"rrkit: no {self.what} matches this {self.request}."]
        if self.closest:
            lines.append("Closest:")
            lines += [f"  - {line}" for line in self.closest]
        else:
            lines.append("Nothing is left to answer it.")
        lines.append(self.hint)
        return "\n".join(lines)


def _steps_report(index: int, step: Step | Handshake, used: int, failed: Sequence[str]) -> str:
    uses = "unlimited" if step.repeat else f"used {used} of {step.times}"
    reason = "; ".join(f"failed: {text}" for text in failed) if failed else "all conditions hold"
    return f"step {index} ({uses}): {reason}"


class ReplySource(abc.ABC):
    """Where the server's answers come from: a script being played, a cassette being replayed, an upstream
    being relayed. Each answers a request with its own plan, or says why it has none.

    Subclass it and write `select`; every other capability is declared here with its default (a source that holds
    nothing per connection, relays nothing, has nothing to close), as httpx's `AsyncBaseTransport` declares its
    no-op `aclose`. The server calls each of them directly, never probing for one."""

    relays_unknown_ids: bool = False
    """Whether a `previous_response_id` this server never issued is the source's to answer (an upstream may know
    it) rather than a `previous_response_not_found`."""
    relays_frames: bool = False
    """Whether client frames other than `response.create` go to `relay_frame` (an upstream), not an error frame."""
    answers_every_route: bool = False
    """Whether the answer on every route is the source's own (`select_route`: an upstream relayed, a cassette
    replayed), so that the server keeps no response store, background run or conversation of its own for it."""

    @abc.abstractmethod
    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        """The plan that answers `request`, or why none does."""

    async def select_route(self, request: RequestView) -> ResponsePlan | NoMatch | None:
        """The plan that answers a request on any route but `responses.create` (`request.route`: a retrieve, a
        cancel, a conversation, a path outside the table); None: the server's own response store answers it."""
        return None

    async def steer(
        self, frame: Mapping[str, Any], *, connection_id: int | None, ids: IdGenerator
    ) -> list[Event] | None:
        """The events that answer a WebSocket `response.steer` frame of the client connection `connection_id`
        (unless `relays_frames`); None: this source has none (the server answers failed, `steering_not_supported`)."""
        return None

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        """The answer to a WebSocket upgrade (None: accept) of the client connection `connection_id`, whose
        upgrade request came with `query`."""
        return None

    async def connection_closed(self, connection_id: int) -> None:
        """The client connection `connection_id` ended (a source holding an upstream socket closes it)."""
        return None

    def relay_frame(self, connection_id: int | None, text: str) -> AsyncGenerator[str, None]:
        """What answers a client frame that is no request, as raw frames (only when `relays_frames`)."""
        raise NotImplementedError(f"{type(self).__name__} relays no frames (its relays_frames is False)")

    def unused(self) -> list[str]:
        """Descriptions of answers never requested (for teardown checks)."""
        return []

    def unplayed(self) -> list[str]:
        """Descriptions of recorded answers no request played (a replay's stale recordings)."""
        return []

    def reset(self) -> None:
        """Start over: every answer available again."""
        return None

    def for_session(self) -> ReplySource | None:
        """A source of the same answers for a new isolated session (`server.state.Sessions`), every answer available;
        None: this source cannot be split (sessions are refused)."""
        return None

    async def aclose(self) -> None:
        """Release what the source holds (upstream connections); called once the server has stopped."""
        return None


class ScriptState(ReplySource):
    """A script being played: counts the uses of each step. Thread-safe, so tests can add steps live. Without a
    script it plays the default one (`loader.default_script`), which it builds only when asked for it."""

    def __init__(self, script: Script | None = None) -> None:
        self._script = script
        self._uses: dict[int, int] = {}
        self._handshake_uses: dict[int, int] = {}
        self._steer_uses: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def script(self) -> Script:
        if self._script is None:
            from .loader import default_script

            self._script = default_script()
        return self._script

    def reset(self, script: Script | None = None) -> None:
        with self._lock:
            if script is not None:
                self._script = script
            self._uses.clear()
            self._handshake_uses.clear()
            self._steer_uses.clear()

    def for_session(self) -> ScriptState:
        return ScriptState(self._script)

    async def select(self, request: RequestView) -> ResponsePlan | NoMatch:
        """Warmups are answered by the server itself unless a step asks for `generate: false` explicitly."""
        if self._script is None:
            return default_plan(
                request.echoed, transport=request.transport, ids=request.ids, warmup_only=is_warmup(request.wire)
            )
        if is_warmup(request.wire) and not any(
            step.when is not None and step.when.generate is False for step in self.script.responses
        ):
            return self._plan(None, request)
        chosen = self._choose(request)
        if isinstance(chosen, Rejection):
            return ResponsePlan(rejection=chosen)
        return chosen if isinstance(chosen, NoMatch) else self._plan(chosen, request)

    def _plan(self, reply: Reply | None, request: RequestView) -> ResponsePlan:
        """The plan of `reply` (None: the server's own warmup reply); steerable when the script answers steers."""
        from .reply_plan import WARMUP_REPLY, plan_reply

        return plan_reply(
            WARMUP_REPLY if reply is None else reply,
            request.echoed,
            transport=request.transport,
            ids=request.ids,
            warmup=reply is None,
            steerable=self._script is not None and bool(self.script.steer),
        )

    def _choose(self, request: RequestView) -> Reply | Rejection | NoMatch:
        """The reply that answers `request`, its use counted; or the refusal its chaos draws for the request (a rate
        limit), which leaves the reply to answer the retry."""
        with self._lock:
            scored: list[tuple[int, int, str]] = []
            for index, step in enumerate(self.script.responses):
                used = self._uses.get(index, 0)
                passed, failed = failed_conditions(step.when, request) if step.when else ([], [])
                available = step.repeat or used < step.times
                if available and not failed:
                    refusal = _chaos_refusal(step, request)
                    if refusal is not None:
                        return refusal
                    self._uses[index] = used + 1
                    return step
                score = len(passed) - len(failed) - (0 if available else 1)
                note = _steps_report(index, step, used, failed if available else [*failed, "used up"])
                scored.append((score, -index, note))
            if self.script.default is not None:
                return _chaos_refusal(self.script.default, request) or self.script.default
            scored.sort(reverse=True)
            return NoMatch(request.describe(), [note for _, _, note in scored[:3]])

    async def select_route(self, request: RequestView) -> ResponsePlan | NoMatch | None:
        """A step whose rule names this route (`when: {route: ...}`) answers it (`reply_plan.plan_route_reply`); none:
        the server's store does."""
        if self._script is None:
            return None
        with self._lock:
            chosen = None
            for index, step in enumerate(self.script.responses):
                used = self._uses.get(index, 0)
                if step.when is None or step.when.route != request.route.name or not (step.repeat or used < step.times):
                    continue
                if not failed_conditions(step.when, request)[1]:
                    self._uses[index], chosen = used + 1, step
                    break
        if chosen is None:
            return None
        from .reply_plan import plan_route_reply

        return plan_route_reply(chosen, request.route.name, request.logical, ids=request.ids)

    async def steer(
        self, frame: Mapping[str, Any], *, connection_id: int | None, ids: IdGenerator
    ) -> list[Event] | None:
        if self._script is None:
            return answer_steer(frame, None, ids)
        with self._lock:
            step = _use_first(self.script.steer, self._steer_uses)
        return answer_steer(frame, step, ids)

    async def select_handshake(
        self, headers: Mapping[str, str], *, connection_id: int | None = None, query: str = ""
    ) -> Handshake | None:
        if self._script is None:
            return None
        view = RequestView("ws", headers, {}, {}, connection_id)

        def fits(handshake: Handshake) -> bool:
            return handshake.when is None or not failed_conditions(handshake.when, view)[1]

        with self._lock:
            return _use_first(self.script.handshakes, self._handshake_uses, fits)

    def unused(self) -> list[str]:
        if self._script is None:
            return []
        with self._lock:
            return [
                f"step {index} (used {self._uses.get(index, 0)} of {step.times})"
                for index, step in enumerate(self.script.responses)
                if not step.repeat and self._uses.get(index, 0) < step.times
            ] + [
                f"steer answer {index} ({step.answer}, used {self._steer_uses.get(index, 0)} of {step.times})"
                for index, step in enumerate(self.script.steer)
                if not step.repeat and self._steer_uses.get(index, 0) < step.times
            ]


def _chaos_refusal(reply: Reply, request: RequestView) -> Rejection | None:
    """The 429 a reply's own chaos refuses `request` with (drawn with the exchange's number), if it does."""
    spec = reply.fault.chaos
    if spec is None or not spec.rate_limit:
        return None
    chaos = spec.chaos()
    return chaos.refusal() if chaos.rate_limited(request.exchange_id) else None


class _Counted(Protocol):
    times: int
    repeat: bool


C = TypeVar("C", bound=_Counted)


def _use_first(steps: Sequence[C], uses: dict[int, int], fits: Callable[[C], bool] = lambda _: True) -> C | None:
    """(Under the lock.) The first of `steps` not used up that `fits`, its use counted in `uses`."""
    for index, step in enumerate(steps):
        used = uses.get(index, 0)
        if (step.repeat or used < step.times) and fits(step):
            uses[index] = used + 1
            return step
    return None

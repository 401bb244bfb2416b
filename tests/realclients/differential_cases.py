"""The observation table: for each rule of Codex CLI 0.169.0 (issue 10, "Observed behaviour"), a script and
what the fake server sees when Codex runs it. Checking a new Codex version: change the pin in
`rrkit.differential.codex`, run `pytest -m codex tests/realclients/test_codex_differential.py`, update the rows
that changed."""

from __future__ import annotations

from dataclasses import dataclass, field

from rrkit.differential import Observation
from rrkit.differential.settings import DEFAULT_BUDGETS, Budgets
from rrkit.script import (
    Handshake,
    Match,
    Reply,
    Script,
    error_event,
    error_frame,
    failed,
    function_call,
    incomplete,
    refuse_upgrade,
    reject,
    reply,
)

OK = reply("Hi from the differential test.")
SHORT = Budgets(request_max_retries=1, stream_max_retries=2, idle_timeout=1.0)
"""For the cases that spend a budget: two stream retries, one request-level retry."""
DEFAULTS = Budgets(request_max_retries=None, stream_max_retries=None, idle_timeout=1.0)
"""Neither budget set: each client's default."""
WARM = "ws warmup -> completed"
"""Codex prewarms every WebSocket session with `generate: false`; the server answers it by itself."""


@dataclass(frozen=True)
class Case:
    rule: str
    script: Script
    websockets: bool
    flow: tuple[str, ...]
    outcome: str
    budgets: Budgets = DEFAULT_BUDGETS
    show: tuple[str, ...] = ()
    """Extra columns: "ts" (turn state sent), "turn" (request kind / turn id), "headers", "metadata", "tid" (the
    turn: T1, T2, ..., "-" for the prewarm), "chain" (the socket S1, S2, ... and the row an incremental request
    continues from: "after #2")."""
    turns: int = 1
    """Turns of one session: over 1, Codex runs them through `codex app-server` (one thread) and the reference
    client through `Conversation.run_turn` on one ModelClient; the outcome is each turn's, joined by " / ", and
    the first attempt of each later turn waits "<turn>" (the pause between turns is the driver's)."""
    slow: bool = False
    """Marked `slow` (deselected by default: `pytest -m slow` runs it): a default that takes long to observe."""
    connect_timeout: float | None = None
    """Observe upgrades the server never answered ("unanswered") and name a wait of this many seconds after one
    "connect timeout" (plus the wait after it: "connect timeout + backoff")."""
    reference_xfail: str | None = field(default=None, compare=False)
    """Why the reference client does not agree yet (the rule it breaks); None: it agrees."""


def then_ok(*first: Reply, when_ws: bool = False) -> Script:
    """These replies once each, in order, then OK for every later request."""
    script = Script(default=OK)
    for answer in first:
        script.add(answer, when=Match(transport="ws") if when_ws else None)
    return script


def dropped(answer: Reply = OK, after: int = 2) -> Reply:
    return answer.drop_after(after)


def always(answer: Reply, *, transport: str | None = None) -> Script:
    when = Match.model_validate({"transport": transport}) if transport else None
    return Script(default=OK).add(answer, when=when, repeat=True)


def render(observation: Observation, show: tuple[str, ...]) -> tuple[str, ...]:
    """The observation as table rows: one per attempt, with the extra columns a case asks for."""
    turn_ids: dict[str, str] = {}
    sockets: dict[int, str] = {}
    rows_of = {a.response_id: n for n, a in enumerate(observation.attempts, start=1) if a.response_id}
    rows = []
    for attempt in observation.attempts:
        row = str(attempt)
        if "tid" in show:
            turn = attempt.turn_id or ""
            row += f" | {'-' if not turn else turn_ids.setdefault(turn, f'T{len(turn_ids) + 1}')}"
        if "chain" in show:
            socket = (
                "-" if attempt.connection is None else sockets.setdefault(attempt.connection, f"S{len(sockets) + 1}")
            )
            previous = attempt.previous_response_id
            after = "" if previous is None else f" after #{rows_of.get(previous, '?')}"
            row += f" | {socket}{after}"
        if "ts" in show:
            row += f" | ts={attempt.turn_state or '-'}"
        if "turn" in show:
            turn = attempt.turn_id or ""
            label = "-" if not turn else turn_ids.setdefault(turn, f"T{len(turn_ids) + 1}")
            echoed = "echoed" if "x-codex-turn-metadata" in attempt.client_metadata else "not echoed"
            row += f" | {attempt.request_kind or '-'} {label} {echoed}"
        if "headers" in show:
            row += f" | {' '.join(sorted(attempt.headers))}"
        if "metadata" in show:
            row += f" | client_metadata ts={'yes' if 'x-codex-turn-state' in attempt.client_metadata else 'no'}"
        rows.append(row)
    return tuple(rows)


IDENTITY = "session-id thread-id x-client-request-id x-codex-turn-metadata x-codex-window-id"
RATE_LIMITED = "Rate limit reached for requests."

CASES: dict[str, Case] = {
    # -- errors before or instead of the stream ------------------------------------------------
    "http-429-without-retry-after-is-fatal": Case(
        "HTTP 429 without Retry-After: not retried",
        then_ok(reject(429, "rate_limit_exceeded", RATE_LIMITED)),
        False,
        ("http full -> refused 429",),
        "failed",
    ),
    "ws-429-frame-without-headers-is-fatal": Case(
        "WS error frame status 429, no headers: not retried",
        then_ok(reject(429, "rate_limit_exceeded", RATE_LIMITED)),
        True,
        (WARM, "<none> ws incremental -> refused 429"),
        "failed",
    ),
    "http-429-retry-after-waits-n-seconds": Case(
        "HTTP 429 with Retry-After: N: retried after N s",
        then_ok(reject(429, "rate_limit_exceeded", RATE_LIMITED, retry_after=1)),
        False,
        ("http full -> refused 429", "<named> http full -> completed"),
        "completed",
    ),
    "http-503-retry-after-waits-n-seconds": Case(
        "HTTP 503 with Retry-After: N: retried after N s",
        then_ok(reject(503, "server_error", "Busy.", retry_after=1)),
        False,
        ("http full -> refused 503", "<named> http full -> completed"),
        "completed",
    ),
    "ws-429-frame-retry-after-header-waits-n-seconds": Case(
        "WS error frame 429 with retry-after in its headers: retried after N s",
        then_ok(reject(429, "rate_limit_exceeded", RATE_LIMITED, retry_after=1)),
        True,
        (WARM, "<none> ws incremental -> refused 429", "<named> ws full -> completed"),
        "completed",
    ),
    "ws-503-upgrade-retry-after-waits-n-seconds": Case(
        "503 upgrade refusal with Retry-After: N: retried after N s (a refused prewarm is not retried: the turn "
        "opens its own socket at once)",
        Script(default=OK).add_handshake(refuse_upgrade(503, retry_after=1, times=2)),
        True,
        ("ws upgrade -> refused 503", "<none> ws upgrade -> refused 503", "<named> ws full -> completed"),
        "completed",
    ),
    "http-429-retry-after-ms-is-ignored": Case(
        "429 with only retry-after-ms: a plain 429 (not retried)",
        then_ok(reject(429, "rate_limit_exceeded", RATE_LIMITED, retry_after_ms=1000)),
        False,
        ("http full -> refused 429",),
        "failed",
    ),
    "http-503-retry-after-ms-gets-backoff": Case(
        "503 with only retry-after-ms: ordinary backoff",
        then_ok(reject(503, "server_error", "Busy.", retry_after_ms=1000)),
        False,
        ("http full -> refused 503", "<backoff> http full -> completed"),
        "completed",
    ),
    **{
        f"http-{status}-is-retried-with-backoff": Case(
            f"HTTP {status}: retried with backoff",
            then_ok(reject(status, None, f"Scripted {status}.")),
            False,
            (f"http full -> refused {status}", "<backoff> http full -> completed"),
            "completed",
        )
        for status in (401, 403, 404, 405, 408, 409, 413, 422)
    },
    **{
        f"http-{status}-retry-after-waits-n-seconds": Case(
            f"HTTP {status} with Retry-After: N: retried after N s",
            then_ok(reject(status, None, f"Scripted {status}.", retry_after=1)),
            False,
            (f"http full -> refused {status}", "<named> http full -> completed"),
            "completed",
        )
        for status in (401, 404, 409, 422, 500, 502, 504)
    },
    "http-400-with-retry-after-is-fatal": Case(
        "HTTP 400 with Retry-After: not retried",
        then_ok(reject(400, None, "Bad request.", retry_after=1)),
        False,
        ("http full -> refused 400",),
        "failed",
    ),
    **{
        f"ws-{status}-frame-retry-after-header-waits-n-seconds": Case(
            f"WS error frame {status} with retry-after in its headers: retried after N s",
            then_ok(reject(status, None, f"Scripted {status}.", retry_after=1)),
            True,
            (WARM, f"<none> ws incremental -> refused {status}", "<named> ws full -> completed"),
            "completed",
        )
        for status in (409, 500)
    },
    "http-5xx-retried-at-request-then-stream-level": Case(
        "HTTP 5xx: request_max_retries at the request level, then the stream budget",
        always(reject(500, "server_error", "Oops.")),
        False,
        (
            "http full -> refused 500",
            "<backoff> http full -> refused 500",
            "<backoff> http full -> refused 500",
            "<backoff> http full -> refused 500",
            "<backoff> http full -> refused 500",
            "<backoff> http full -> refused 500",
        ),
        "failed",
        SHORT,
    ),
    "http-400-is-fatal": Case(
        "HTTP 400: not retried",
        then_ok(reject(400, None, "Bad request.")),
        False,
        ("http full -> refused 400",),
        "failed",
    ),
    "failed-server-is-overloaded-is-fatal": Case(
        "response.failed server_is_overloaded: not retried",
        then_ok(failed("server_is_overloaded")),
        False,
        ("http full -> failed",),
        "failed",
    ),
    "http-503-server-is-overloaded-is-fatal": Case(
        "HTTP 503 server_is_overloaded: fatal at the stream level, after the request-level retries of any 5xx",
        always(reject(503, "server_is_overloaded", "Overloaded.")),
        False,
        ("http full -> refused 503", "<backoff> http full -> refused 503"),
        "failed",
        SHORT,
    ),
    "ws-frame-server-is-overloaded-is-fatal": Case(
        "WS error frame server_is_overloaded: not retried",
        then_ok(reject(503, "server_is_overloaded", "Overloaded.")),
        True,
        (WARM, "<none> ws incremental -> refused 503"),
        "failed",
    ),
    "failed-slow-down-gets-backoff": Case(
        "response.failed slow_down: retried with backoff",
        then_ok(failed("slow_down")),
        False,
        ("http full -> failed", "<backoff> http full -> completed"),
        "completed",
    ),
    # -- events ----------------------------------------------------------------------------------
    "sse-flat-error-event-is-ignored-then-a-drop": Case(
        "flat SSE error event: ignored; the stream then ends without completed: a drop, backoff",
        then_ok(error_event("Your input exceeds the context window.", "context_length_exceeded")),
        False,
        ("http full -> errored", "<backoff> http full -> completed"),
        "completed",
    ),
    "ws-statusless-error-frame-is-ignored-then-a-drop": Case(
        "WS error frame without status: ignored, whatever its code; then a drop: backoff",
        then_ok(error_frame("context_length_exceeded").drop_after(1)),
        True,
        (WARM, "<none> ws incremental -> dropped", "<backoff> ws full -> completed"),
        "completed",
    ),
    "ws-statusless-error-frame-is-ignored-then-idle": Case(
        "WS error frame without status and nothing after it: ignored; the idle timeout ends the attempt",
        then_ok(error_frame("server_error", "Ignored.")),
        True,
        (WARM, "<none> ws incremental -> errored", "<idle> ws full -> completed"),
        "completed",
    ),
    "ws-statusless-connection-limit-opens-a-new-socket": Case(
        "status-less websocket_connection_limit_reached: new socket, full request, after backoff",
        then_ok(error_frame("websocket_connection_limit_reached", "Connection limit reached.")),
        True,
        (WARM, "<none> ws incremental -> errored", "<backoff> ws full -> completed"),
        "completed",
    ),
    "ws-statusless-previous-response-not-found-opens-a-new-socket": Case(
        "status-less previous_response_not_found: new socket, full request, after backoff",
        then_ok(error_frame("previous_response_not_found", "Previous response not found.")),
        True,
        (WARM, "<none> ws incremental -> errored", "<backoff> ws full -> completed"),
        "completed",
    ),
    **{
        f"failed-rate-limit-waits-the-named-delay-{name}": Case(
            f'response.failed rate_limit_exceeded "try again in {delay}": waits the named delay',
            then_ok(failed("rate_limit_exceeded", f"{RATE_LIMITED} Please try again in {delay}.")),
            False,
            ("http full -> failed", "<named> http full -> completed"),
            "completed",
        )
        for name, delay in (("s", "1s"), ("ms", "1000ms"), ("seconds", "1 seconds"))
    },
    "failed-rate-limit-in-minutes-gets-backoff": Case(
        'response.failed rate_limit_exceeded "try again in 2 minutes": backoff (only s, ms, seconds)',
        then_ok(failed("rate_limit_exceeded", f"{RATE_LIMITED} Please try again in 2 minutes.")),
        False,
        ("http full -> failed", "<backoff> http full -> completed"),
        "completed",
    ),
    "failed-other-code-ignores-the-named-delay": Case(
        "the named delay is read only for rate_limit_exceeded: other codes get backoff",
        then_ok(failed("server_error", "Something broke. Please try again in 1s.")),
        False,
        ("http full -> failed", "<backoff> http full -> completed"),
        "completed",
    ),
    "incomplete-is-fatal": Case(
        "response.incomplete: not retried",
        then_ok(incomplete("max_output_tokens")),
        False,
        ("http full -> incomplete",),
        "failed",
    ),
    "ws-previous-response-not-found-400-opens-a-new-socket-after-backoff": Case(
        "previous_response_not_found (error frame, status 400): new socket, full request, after backoff",
        then_ok(reject(400, "previous_response_not_found", "Previous response not found.")),
        True,
        (WARM, "<none> ws incremental -> refused 400", "<backoff> ws full -> completed"),
        "completed",
    ),
    **{
        f"failed-{code}-is-fatal": Case(
            f"response.failed {code}: not retried",
            then_ok(failed(code)),
            False,
            ("http full -> failed",),
            "failed",
        )
        for code in (
            "context_length_exceeded",
            "insufficient_quota",
            "usage_not_included",
            "invalid_prompt",
            "cyber_policy",
            "bio_policy",
            "misalignment_policy_violation",
        )
    },
    **{
        f"failed-{code}-gets-backoff": Case(
            f"response.failed {code}: a code without a rule of its own, retried with backoff",
            then_ok(failed(code)),
            False,
            ("http full -> failed", "<backoff> http full -> completed"),
            "completed",
        )
        # the SDK's codes Codex has no rule for (an image's, a policy's by its name alone), and one made up
        for code in ("data_residency_mismatch", "vector_store_timeout", "image_content_policy_violation", "some_policy")
    },
    # -- budgets and fallback ----------------------------------------------------------------
    "stream-budget-spent-fails-the-turn": Case(
        "stream_max_retries N: N + 1 attempts, backoff between them, then the turn fails",
        always(dropped()),
        False,
        ("http full -> dropped", "<backoff> http full -> dropped", "<backoff> http full -> dropped"),
        "failed",
        SHORT,
    ),
    "stream-budget-defaults-to-5": Case(
        "stream_max_retries defaults to 5: 6 attempts (backoff 0.2, 0.4, 0.8, 1.6, 3.2 s)",
        always(dropped()),
        False,
        ("http full -> dropped", *["<backoff> http full -> dropped"] * 5),
        "failed",
        DEFAULTS,
    ),
    "http-idle-timeout-is-a-retryable-drop": Case(
        "a stream that goes quiet for the idle timeout: retried with backoff",
        then_ok(OK.stall_after(2)),
        False,
        ("http full -> stalled", "<idle> http full -> completed"),
        "completed",
    ),
    "ws-idle-timeout-is-a-retryable-drop": Case(
        "a WebSocket stream that goes quiet: retried on a new socket with the full request",
        then_ok(OK.stall_after(2), when_ws=True),
        True,
        (WARM, "<none> ws incremental -> stalled", "<idle> ws full -> completed"),
        "completed",
    ),
    "ws-budget-spent-falls-back-to-http-at-once": Case(
        "WebSocket budget spent: HTTP at once (no wait), with a budget of its own",
        always(dropped(), transport="ws"),
        True,
        (
            WARM,
            "<none> ws incremental -> dropped",
            "<backoff> ws full -> dropped",
            "<backoff> ws full -> dropped",
            "<none> http full -> completed",
        ),
        "completed",
        SHORT,
    ),
    "http-leg-after-fallback-has-a-full-budget": Case(
        "after the fallback the HTTP leg has a full budget of its own (the count is reset)",
        always(dropped(), transport="ws").add(dropped(), when=Match(transport="http"), times=2),
        True,
        (
            WARM,
            "<none> ws incremental -> dropped",
            "<backoff> ws full -> dropped",
            "<backoff> ws full -> dropped",
            "<none> http full -> dropped",
            "<backoff> http full -> dropped",
            "<backoff> http full -> completed",
        ),
        "completed",
        SHORT,
    ),
    "upgrade-426-falls-back-at-once": Case(
        "426 on the upgrade (the prewarm's): HTTP at once, no budget spent",
        Script(default=OK).add_handshake(refuse_upgrade(426, repeat=True)),
        True,
        ("ws upgrade -> refused 426", "<none> http full -> completed"),
        "completed",
    ),
    "upgrade-426-after-a-drop-falls-back-at-once": Case(
        "426 on a later upgrade (after a drop): HTTP at once, no wait",
        then_ok(dropped(), when_ws=True).add_handshake(Handshake()).add_handshake(refuse_upgrade(426, repeat=True)),
        True,
        (
            WARM,
            "<none> ws incremental -> dropped",
            "<backoff> ws upgrade -> refused 426",
            "<none> http full -> completed",
        ),
        "completed",
    ),
    **{
        f"http-429-{kind.replace('_', '-')}-is-fatal": Case(
            f"HTTP 429 {kind}: not retried, even with Retry-After",
            then_ok(reject(429, kind, "Usage limit.", type=kind, retry_after=1)),
            False,
            ("http full -> refused 429",),
            "failed",
        )
        for kind in ("usage_limit_reached", "usage_not_included")
    },
    # -- warmup and the incremental rule ---------------------------------------------------------
    "ws-tool-loop-follow-up-is-incremental": Case(
        "the first request after the prewarm continues from it; the tool follow-up continues from the call",
        Script(default=OK).add(reply(function_call("exec_command", {"cmd": "true", "login": False}, call_id="c1"))),
        True,
        (WARM, "<none> ws incremental -> completed", "<none> ws incremental -> completed"),
        "completed",
    ),
    # -- headers, turn metadata, turn state ------------------------------------------------------
    "http-identity-headers-on-every-request": Case(
        "every HTTP request carries the identity headers; turn metadata request_kind turn, in client_metadata too",
        then_ok(dropped()),
        False,
        (
            f"http full -> dropped | turn T1 echoed | {IDENTITY}",
            f"<backoff> http full -> completed | turn T1 echoed | {IDENTITY}",
        ),
        "completed",
        show=("turn", "headers"),
    ),
    "ws-identity-headers-prewarm-then-turn": Case(
        "every upgrade carries them and openai-beta; prewarm has an empty turn_id, then one turn_id across retries",
        then_ok(dropped(), when_ws=True),
        True,
        (
            f"{WARM} | prewarm - echoed | openai-beta {IDENTITY}",
            f"<none> ws incremental -> dropped | turn T1 echoed | openai-beta {IDENTITY}",
            f"<backoff> ws full -> completed | turn T1 echoed | openai-beta {IDENTITY}",
        ),
        "completed",
        show=("turn", "headers"),
    ),
    "http-turn-state-is-sent-back-within-the-turn": Case(
        "the HTTP turn-state token is sent back on the turn's later requests, retries included",
        then_ok(dropped(OK.with_turn_state("ts-http-1"))),
        False,
        ("http full -> dropped | ts=-", "<backoff> http full -> completed | ts=ts-http-1"),
        "completed",
        show=("ts",),
    ),
    "ws-101-turn-state-is-not-sent-back": Case(
        "a token on a WebSocket 101 is not sent back on later upgrades (0.169.0)",
        then_ok(dropped(), when_ws=True).add_handshake(Handshake(turn_state="ts-101-1", repeat=True)),
        True,
        (
            f"{WARM} | ts=-",
            "<none> ws incremental -> dropped | ts=-",
            "<backoff> ws full -> completed | ts=-",
        ),
        "completed",
        show=("ts",),
    ),
    "ws-metadata-frame-turn-state-is-echoed-by-the-turn-s-next-request": Case(
        "a response.metadata turn state is echoed in the client_metadata of the turn's next request, the one on "
        "the prewarm's answer is not (0.169.0)",
        then_ok(dropped(OK.with_metadata_turn_state("ts-frame-1"), after=3), when_ws=True),
        True,
        (
            f"{WARM} | client_metadata ts=no",
            "<none> ws incremental -> dropped | client_metadata ts=no",
            "<backoff> ws full -> completed | client_metadata ts=yes",
        ),
        "completed",
        show=("metadata",),
    ),
    # -- several turns of one session (codex app-server) ----------------------------------------
    "ws-fallback-to-http-lasts-for-the-session": Case(
        "after the WebSocket budget is spent and the session falls back to HTTP, the next turn stays on HTTP",
        always(dropped(), transport="ws"),
        True,
        (
            f"{WARM} | -",
            "<none> ws incremental -> dropped | T1",
            "<backoff> ws full -> dropped | T1",
            "<backoff> ws full -> dropped | T1",
            "<none> http full -> completed | T1",
            "<turn> http full -> completed | T2",
        ),
        "completed / completed",
        SHORT,
        show=("tid",),
        turns=2,
    ),
    "upgrade-426-fallback-lasts-for-the-session": Case(
        "after a 426 on the (prewarm's) upgrade the session is on HTTP: the next turn tries no upgrade",
        Script(default=OK).add_handshake(refuse_upgrade(426, repeat=True)),
        True,
        ("ws upgrade -> refused 426 | -", "<none> http full -> completed | T1", "<turn> http full -> completed | T2"),
        "completed / completed",
        show=("tid",),
        turns=2,
    ),
    "http-turn-state-is-not-sent-in-the-next-turn": Case(
        "the HTTP turn-state token is sent back within its turn (retries included) but not in the next turn",
        then_ok(dropped(OK.with_turn_state("ts-http-1"))),
        False,
        (
            "http full -> dropped | T1 | ts=-",
            "<backoff> http full -> completed | T1 | ts=ts-http-1",
            "<turn> http full -> completed | T2 | ts=-",
        ),
        "completed / completed",
        show=("ts", "tid"),
        turns=2,
    ),
    "http-turn-state-of-a-completed-turn-is-not-sent-in-the-next-turn": Case(
        "a turn-state token on the response that completes a turn is not sent in the next turn",
        Script(default=OK).add(OK.with_turn_state("ts-http-1")),
        False,
        ("http full -> completed | T1 | ts=-", "<turn> http full -> completed | T2 | ts=-"),
        "completed / completed",
        show=("ts", "tid"),
        turns=2,
    ),
    "ws-next-turn-continues-on-the-open-socket-without-a-warmup": Case(
        "no warmup when the socket holds a last request: the next turn's first request continues from the turn "
        "before's last response, on the same socket",
        Script(default=OK),
        True,
        (
            f"{WARM} | - | S1",
            "<none> ws incremental -> completed | T1 | S1 after #1",
            "<turn> ws incremental -> completed | T2 | S1 after #2",
        ),
        "completed / completed",
        show=("tid", "chain"),
        turns=2,
    ),
    "ws-next-turn-after-the-server-closed-the-socket-is-full-on-a-new-socket": Case(
        "the server closed the socket after the turn's response.completed: the next turn opens a new socket at once "
        "and sends the full request, without a warmup (the server records turn 1's reply as dropped: it closed the "
        "socket after the last event)",
        then_ok(OK.drop_after(100, close="frame", code=1000), when_ws=True),
        True,
        (
            f"{WARM} | - | S1",
            "<none> ws incremental -> dropped | T1 | S1 after #1",
            "<turn> ws full -> completed | T2 | S2",
        ),
        "completed / completed",
        show=("tid", "chain"),
        turns=2,
    ),
    # -- defaults that are slow to observe (marked slow: `pytest -m slow tests/realclients`) ------------
    "http-5xx-default-budgets-make-30-attempts": Case(
        "request_max_retries defaults to 4 and stream_max_retries to 5: a 5xx every time costs 5 x 6 = 30 attempts",
        always(reject(500, "server_error", "Oops.")),
        False,
        ("http full -> refused 500", *["<backoff> http full -> refused 500"] * 29),
        "failed",
        DEFAULTS,
        slow=True,
    ),
    "ws-connect-timeout-defaults-to-15s": Case(
        "an upgrade the server does not answer is given up after 15 s (the prewarm's too); the turn's own upgrade "
        "timing out is a retryable failure: a new socket after backoff, with the full request",
        Script(default=OK).add_handshake(Handshake(delay=40, times=2)),
        True,
        (
            "ws upgrade -> unanswered",
            "<connect timeout> ws upgrade -> unanswered",
            "<connect timeout + backoff> ws full -> completed",
        ),
        "completed",
        slow=True,
        connect_timeout=15.0,
    ),
}

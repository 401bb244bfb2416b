"""What each check holds a server's answer to, as findings a person can act on: the check, the request, the
place in the answer (event index, type, field), what the protocol requires, and how much it matters."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...drive.ending import Ending
from ...protocol import events as ev
from ...protocol.errors import ending_error
from ...protocol.order import check_order
from ...protocol.routes import resumed_after
from ...protocol.steer import STEER_ACCEPTED, STEER_ANSWERS, STEER_PENDING, STEERED
from ...report import Finding, Severity
from .answer import Answer
from .found import Found
from .probe import Expect
from .retry import RETRIES, retry_delay
from .route_checks import check_ok, check_page, check_status
from .sdk import body_problems, event_problems

if TYPE_CHECKING:
    from ...drive.upgrade import Upgrade

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
"""RFC 6455 section 4.2.2: what the accept key hashes with the client's key."""


Check = Callable[[Found, Expect], None]


def _ended_whole(found: Found) -> bool:
    answer = found.answer
    if answer.ending is Ending.WHOLE:
        return True
    found.add(
        Severity.MUST,
        "an answer ends as the protocol says (a terminal event, or a whole body)",
        answer.error or answer.ending.value,
    )
    return False


def _events_readable(found: Found) -> None:
    if found.answer.not_utf8 is not None:
        found.add(Severity.MUST, "a stream is UTF-8 text (the official SDKs refuse any other)", found.answer.not_utf8)
    for place, text in found.answer.unreadable:
        found.add(Severity.MUST, "every data line (every frame) is one JSON object", f"got {text!r}", event=place)


def _sse_head(found: Found) -> bool:
    """Whether an HTTP answer to a streamed request is a stream: 200 and text/event-stream."""
    answer = found.answer
    if answer.status != 200:
        found.add(Severity.MUST, "a streamed request is answered 200", f"got status {answer.status}")
        return False
    if answer.content_type != "text/event-stream":
        seen = f"got {answer.content_type or 'no content-type'!r}"
        found.add(Severity.MUST, "a streamed answer is text/event-stream", seen)
        return False
    return True


def _stream(found: Found, expect: Expect) -> None:
    answer = found.answer
    if answer.events and answer.events[0].get("type") == ev.ERROR:
        return  # an error frame in place of a stream: a refusal, judged as one
    if answer.transport == "http" and answer.status is not None and answer.status >= 400:
        return  # refused before the stream: judged as a refusal
    if answer.transport == "http" and not _sse_head(found):
        return
    _events_readable(found)
    whole = _ended_whole(found)
    # check_order numbers the events without the side channels (metadata frames); a finding names the event's place
    positions = [index for index, event in enumerate(answer.events) if event.get("type") not in ev.SIDE_CHANNELS]
    for violation in check_order(answer.events, complete=whole):
        place = positions[violation.index] if violation.index < len(positions) else None
        found.add(Severity.MUST, violation.rule.value, violation.detail, event=place)
    for index, event in enumerate(answer.events):
        problems = event_problems(event)  # None for a side channel: no SDK type to hold it to
        if problems:
            found.add(
                Severity.SHOULD,
                "every event parses as the official SDK's type for it",
                "; ".join(problems),
                event=index,
            )


def _completed(found: Found, expect: Expect) -> None:
    answer = found.answer
    if not answer.streamed:
        status = answer.body.get("status") if isinstance(answer.body, dict) else None
        if status != "completed":
            found.add(
                Severity.MUST,
                "the request is answered with a completed response",
                f"got status {status!r}",
                field="status",
            )
        return
    terminal = ev.terminal_event(answer.events)
    if terminal is None or terminal.get("type") != ev.COMPLETED:
        seen = _failure_text(terminal) if terminal is not None else "no terminal event"
        found.add(Severity.MUST, "the request is answered: its stream ends with response.completed", seen)


def _failure_text(event: dict[str, Any]) -> str:
    error = ending_error(event)
    code, message = error.get("code"), error.get("message")
    return f"ended with {event.get('type')}" + (f" ({code}: {message})" if code or message else "")


def _response_object(found: Found, expect: Expect) -> None:
    answer = found.answer
    if answer.status != 200 or answer.content_type != "application/json":
        found.add(
            Severity.MUST,
            "a request without `stream` is answered 200 with one JSON response object",
            f"got status {answer.status}, {answer.content_type or 'no content-type'}",
        )
        return
    body = answer.body
    if not isinstance(body, dict):
        found.add(Severity.MUST, "the body is a JSON response object", f"got {(answer.body_text or '')[:80]!r}")
        return
    for key, kind, name in (("id", str, "a string"), ("output", list, "a list"), ("status", str, "a string")):
        if not isinstance(body.get(key), kind):
            found.add(Severity.MUST, f"a response object's {key} is {name}", f"got {body.get(key)!r}", field=key)
    if body.get("object") != "response":
        found.add(
            Severity.SHOULD, 'a response object says object: "response"', f"got {body.get('object')!r}", field="object"
        )
    if not isinstance(body.get("usage"), dict):
        found.add(Severity.SHOULD, "a completed response states its usage", "no usage object", field="usage")
    for problem in body_problems(body, "response") or ():
        found.add(Severity.SHOULD, "the body parses as the official SDK's Response", problem)


def _refused(found: Found, expect: Expect) -> None:
    answer = found.answer
    if not _ended_whole(found):
        return
    if answer.transport == "ws":
        _refused_frame(found, expect)
        return
    if answer.status is None or answer.status >= 500 or answer.status < 400:
        found.add(
            Severity.MUST,
            f"a request the API cannot take is answered {expect.status}, a client error: never a 5xx, never accepted",
            f"got status {answer.status}",
        )
        return
    if answer.status != expect.status:
        found.add(
            Severity.SHOULD,
            f"this request is answered {expect.status}, as the real service answers it",
            f"got status {answer.status}",
        )
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    if not isinstance(error, dict):
        found.add(
            Severity.MUST,
            'a refusal\'s body is the OpenAI error shape {"error": {"message", "type", "param", "code"}}',
            f"got {(answer.body_text or '')[:120]!r}",
        )
        return
    _error_object(found, error, expect)


def _refused_frame(found: Found, expect: Expect) -> None:
    answer = found.answer
    frame, index = (answer.events[-1], len(answer.events) - 1) if answer.events else ({}, None)

    def add(severity: Severity, requires: str, seen: str, **place: str) -> None:
        found.add(severity, requires, seen, event=index, **place)

    if frame.get("type") != ev.ERROR:
        add(
            Severity.MUST,
            "a request the API cannot take is answered with an `error` frame",
            f"got {frame.get('type')!r}",
        )
        return
    status = frame.get("status")
    if not isinstance(status, int):
        add(
            Severity.MUST,
            "an error frame carries the HTTP `status` a client classifies it by",
            f"got {status!r}",
            field="status",
        )
    elif status != expect.status:
        add(
            Severity.SHOULD,
            f"this error frame's status is {expect.status}, as the real service says",
            f"got {status}",
            field="status",
        )
    error = frame.get("error")
    if not isinstance(error, dict):
        add(Severity.MUST, "an error frame carries the error object (code, message)", f"got {error!r}", field="error")
        return
    _error_object(found, error, expect, event=index)


def _error_object(found: Found, error: dict[str, Any], expect: Expect, event: int | None = None) -> None:
    if not isinstance(error.get("message"), str):
        found.add(
            Severity.MUST,
            "an error object has a message",
            f"got {error.get('message')!r}",
            event=event,
            field="error.message",
        )
    for problem in body_problems(error, "error") or ():
        found.add(Severity.SHOULD, "the error object parses as the official SDK's ErrorObject", problem, event=event)
    if expect.code is not None and error.get("code") != expect.code:
        found.add(
            Severity.MUST,
            f"the error's code is {expect.code!r}, the one clients act on",
            f"got {error.get('code')!r}",
            event=event,
            field="error.code",
        )


def _no_output(found: Found, expect: Expect) -> None:
    answer = found.answer
    for index, event in enumerate(answer.events):
        if event.get("type") == ev.ITEM_ADDED:
            found.add(
                Severity.MUST,
                "a warmup (`generate: false`) is answered without output",
                "an output item was added",
                event=index,
            )
            return
    terminal = ev.terminal_event(answer.events)
    output = (terminal or {}).get("response", {}).get("output") if terminal else None
    if output:
        found.add(
            Severity.MUST,
            "a warmup (`generate: false`) completes with no output",
            f"{len(output)} output item(s)",
            event=len(answer.events) - 1,
            field="response.output",
        )


def check_resumed(found: Found, expect: Expect) -> None:
    answer = found.answer
    if answer.transport == "http" and not _sse_head(found):
        return
    _events_readable(found)
    if not _ended_whole(found):
        return
    after = resumed_after(answer.query)
    if after is None:
        found.add(Severity.MUST, "a resume step asks for a stream after a sequence number", "no `starting_after`")
        return
    events = [event for event in answer.events if event.get("type") not in ev.SIDE_CHANNELS]
    if not events:
        found.add(Severity.MUST, "a resumed stream sends the events after starting_after", "no event")
        return
    positions = [index for index, event in enumerate(answer.events) if event.get("type") not in ev.SIDE_CHANNELS]
    for violation in check_order(answer.events, complete=True, starting_after=after):
        found.add(Severity.MUST, violation.rule.value, violation.detail, event=positions[violation.index])
    origin = answer.origin
    if origin is not None and origin.events:
        own = {event.get("sequence_number"): event.get("type") for event in origin.events}
        for index, event in enumerate(answer.events):
            number = event.get("sequence_number")
            if number in own and own[number] != event.get("type"):
                seen = f"{event.get('type')!r} where the response's own stream had {own[number]!r}"
                found.add(Severity.MUST, "a resumed stream sends the response's own events again", seen, event=index)


def accept_key(key: str) -> str:
    """The Sec-WebSocket-Accept a server must answer `key` with (RFC 6455)."""
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def _upgrade(found: Found, expect: Expect) -> None:
    upgrade = found.answer.upgrade
    if upgrade is None:
        return
    if upgrade.status == 426:
        found.add(
            Severity.SHOULD,
            "the server offers the WebSocket transport",
            "426 Upgrade Required (clients fall back to HTTP)",
        )
        return
    if upgrade.status != 101:
        found.add(
            Severity.MUST,
            "a WebSocket upgrade to /responses is answered 101",
            upgrade.error or f"got status {upgrade.status}",
        )
        return
    headers = upgrade.headers
    if headers.get("upgrade", "").lower() != "websocket":
        found.add(
            Severity.MUST,
            "a 101 says Upgrade: websocket (RFC 6455)",
            f"got {headers.get('upgrade')!r}",
            field="upgrade",
        )
    if "upgrade" not in headers.get("connection", "").lower():
        found.add(
            Severity.MUST,
            "a 101 says Connection: Upgrade (RFC 6455)",
            f"got {headers.get('connection')!r}",
            field="connection",
        )
    expected = accept_key(upgrade.key)
    if headers.get("sec-websocket-accept") != expected:
        found.add(
            Severity.MUST,
            f"Sec-WebSocket-Accept is base64(SHA-1(key + the RFC's GUID)), here {expected}",
            f"got {headers.get('sec-websocket-accept')!r}",
            field="sec-websocket-accept",
        )


def _steered(found: Found, expect: Expect) -> None:
    """A steer frame sent while the response streamed (the step's `steer`): answered, never ignored and never the
    end of the socket; accepted input committed by a successor that completes. (The order inside a response is the
    `stream` check's, on the probes that read one response.)"""
    answer = found.answer
    events = answer.events
    broken = "" if answer.ending is Ending.WHOLE else f" ({answer.error or answer.ending.value})"
    answers = [(index, event) for index, event in enumerate(events) if event.get("type") in STEER_ANSWERS]
    refused = [index for index, event in enumerate(events) if event.get("type") == ev.ERROR]
    if not any(event.get("type") == ev.CREATED for event in events):
        found.add(Severity.SHOULD, "the probe is answered, so that it can be judged", "no response was created")
        return
    if not answers and not refused:
        seen = "no response.steer.* event and no error frame came" + broken
        ended = ev.terminal_event(events) is not None and answer.ending is Ending.CLOSED
        closed = ended and answer.closed_code in (None, 1000, 1001)
        # a socket closed, not for an error, once its response ended (a server's one-request policy: the steer may
        # have crossed the close) is no dropped steer
        found.add(Severity.SHOULD if closed else Severity.MUST, STEER_RULES["answered"], seen)
        return
    streams = _responses(events)
    accepted = any(event.get("type") in (STEER_ACCEPTED, STEER_PENDING) for _, event in answers)
    ends = [ev.terminal_event(stream) for stream in streams]
    first = ends[0] if ends else None
    if first is None:
        found.add(Severity.MUST, STEER_RULES["first_ends"], "the steered response has no terminal event" + broken)
    elif accepted and not _completed_or_steered(first):
        found.add(Severity.MUST, STEER_RULES["first_ends"], _failure_text(first))
    elif not accepted and first.get("type") != ev.COMPLETED:  # failed for its own reasons: nothing to judge
        found.add(Severity.SHOULD, "the probe is answered, so that it can be judged", _failure_text(first))
    if accepted and (len(streams) < 2 or (ends[1] or {}).get("type") != ev.COMPLETED):
        seen = "no successor response.created followed" if len(streams) < 2 else "the successor did not complete"
        found.add(Severity.MUST, STEER_RULES["successor"], seen + broken)


STEER_RULES = {
    "answered": "a steer frame is answered (response.steer.accepted, .pending or .failed, or an error frame by a "
    "server that does not steer), never ignored",
    "first_ends": "accepted steering ends the response under way: completed, or incomplete with reason steered",
    "successor": "accepted steering input is committed by a successor response on the same socket, which completes",
}


def _completed_or_steered(event: dict[str, Any]) -> bool:
    if event.get("type") == ev.COMPLETED:
        return True
    response = event.get("response")
    details = response.get("incomplete_details") if isinstance(response, dict) else None
    return event.get("type") == ev.INCOMPLETE and isinstance(details, dict) and details.get("reason") == STEERED


def _responses(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The events of each response in an answer (a steered one, then its successor); steer answers and error
    frames left out."""
    streams: list[list[dict[str, Any]]] = []
    for event in events:
        kind = event.get("type")
        if kind in STEER_ANSWERS or kind == ev.ERROR:
            continue
        if kind == ev.CREATED or not streams:
            streams.append([])
        streams[-1].append(event)
    return streams


CHECKS: dict[str, Check] = {
    "stream": _stream,
    "completed": _completed,
    "response_object": _response_object,
    "refused": _refused,
    "no_output": _no_output,
    "upgrade": _upgrade,
    "ok": check_ok,
    "status": check_status,
    "resumed": check_resumed,
    "page": check_page,
    "steered": _steered,
}
"""Each check by name: what it runs (`check_texts.CHECK_TEXTS` says, in words, what it holds an answer to)."""


def _refusal(answer: Answer) -> str | None:
    """The answer in words when it refuses or fails the request (a 4xx or 5xx, a failed, incomplete or error
    ending), else None."""
    if answer.transport == "http" and answer.status is not None and answer.status >= 400:
        return f"status {answer.status}" + (f" ({_error_text(answer.body)})" if isinstance(answer.body, dict) else "")
    terminal = ev.terminal_event(answer.events)
    if terminal is not None and terminal.get("type") != ev.COMPLETED:
        return _failure_text(terminal)
    if not answer.streamed and isinstance(answer.body, dict) and answer.body.get("status") in ("failed", "incomplete"):
        return f"a response {answer.body['status']} ({_error_text(answer.body)})"
    return None


def _error_text(body: dict[str, Any]) -> str:
    error = body.get("error")
    return str(error.get("code") or error.get("message")) if isinstance(error, dict) else "no error object"


def upgrade_broken(upgrade: Upgrade) -> bool:
    """Whether the `upgrade` check has a `must` finding for this upgrade."""
    answer = Answer("upgrade", 0, "ws", {}, upgrade=upgrade)
    found = Found("upgrade", answer)
    _upgrade(found, Expect(check="upgrade"))
    return any(finding.severity is Severity.MUST for finding in found.findings)


def _answered(found: Found, refusal_expected: bool, upgrade_reported: bool) -> bool:
    """Whether the step's other checks can judge the answer: it was sent, and answered (or refused, as
    expected). A failure a client does not retry is the server's right (a quota, a context window): the probe
    could not be judged, a `should`; one it retries, still there after the retries, is a `must`."""
    answer = found.answer
    if answer.ending is Ending.SKIPPED:
        return False  # the step it follows has its finding
    if answer.retried_after:
        tries = ", then ".join(answer.retried_after)
        found.add(Severity.SHOULD, "a request is answered the first time", f"answered after {tries}")
    if answer.ending is Ending.UNSENT:
        upgrade = answer.upgrade
        if upgrade_reported:
            pass  # the upgrade probe says what is wrong with it, once
        elif upgrade is not None and upgrade.status == 426:
            found.add(
                Severity.SHOULD,
                "the server offers the WebSocket transport",
                "426 Upgrade Required (clients fall back to HTTP)",
            )
        else:
            found.add(Severity.MUST, "a WebSocket upgrade to /responses succeeds", answer.error or "not sent")
        return False
    refusal = _refusal(answer) if answer.ending is Ending.WHOLE else None
    if refusal is None or refusal_expected:
        return True
    if answer.request:  # another route: a server may not offer it, which is no broken shape
        found.add(Severity.SHOULD, "the server offers this route of the resource, so that it can be judged", refusal)
        return False
    if retry_delay(answer) is not None:
        found.add(
            Severity.MUST,
            "the request is answered (a client retries this, and it did not pass)",
            f"{refusal} after {RETRIES} retries",
        )
    else:
        found.add(
            Severity.SHOULD,
            "the probe is answered, so that it can be judged",
            f"{refusal}, which a client does not retry (check the key, the model, the quota)",
        )
    return False


def judge_answer(answer: Answer, expectations: list[Expect], *, upgrade_reported: bool = False) -> Iterator[Finding]:
    """Every finding of every check a step states, on its answer: the stream's shape always, the rest once the
    request was answered. `upgrade_reported`: a broken upgrade is reported by the upgrade probe, not again by each
    step that could not be sent for it."""
    found = Found("answered", answer)
    refusal_expected = any(expect.check in ("refused", "steered") for expect in expectations)  # a steer may be refused
    answered = _answered(found, refusal_expected, upgrade_reported)
    yield from found.findings
    for expect in expectations:
        if not answered and expect.check not in ("stream", "upgrade"):
            continue
        if not answered and expect.check == "stream" and answer.ending in (Ending.UNSENT, Ending.SKIPPED):
            continue  # nothing was sent, so there is no stream to judge
        found = Found(expect.check, answer)
        CHECKS[expect.check](found, expect)
        yield from found.findings

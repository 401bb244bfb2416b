"""WebSocket steering: a client's `response.steer` frame (more user input for a response under way) and the
server's answers to it, accepted, pending or failed, as the SDK's beta types shape them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .events import Event
from .jsontext import parse_json

STEER = "response.steer"
STEER_ACCEPTED = "response.steer.accepted"
STEER_PENDING = "response.steer.pending"
STEER_FAILED = "response.steer.failed"
STEER_ANSWERS = frozenset({STEER_ACCEPTED, STEER_PENDING, STEER_FAILED})
"""The events that answer a steer frame: they belong to no response's stream (no rule of a stream checks them)."""

STEER_CODES = (
    "response_not_found",
    "invalid_input",
    "steering_not_supported",
    "too_many_pending_steers",
    "response_already_completed",
    "response_not_active",
    "successor_creation_failed",
)
"""The steering error codes the SDK knows (openai 3.57); it types the code as open, so others parse too."""

STEER_MESSAGES = {
    "response_not_found": "The target response is not available on this connection.",
    "invalid_input": "The steering input failed validation.",
    "steering_not_supported": "Steering is not supported for this response.",
    "too_many_pending_steers": "Too much steering input is pending for the response.",
    "response_already_completed": "The response completed and is no longer accepting steering input.",
    "response_not_active": "The response is no longer accepting steering input.",
    "successor_creation_failed": "The successor response could not be created.",
}
STEERED = "steered"
"""The incomplete reason of a response stopped for steering input: its successor follows on the same socket."""
WAITING_FOR_REQUIRED_INPUT = "waiting_for_required_input"
NOT_SUPPORTED = "steering_not_supported"  # the answer of a server with nothing scripted


def steer_items(given: object) -> list[dict[str, Any]]:
    """A steer frame's input as the items its successor commits: a string is one user message."""
    if isinstance(given, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": given}]}]
    return [dict(item) for item in given if isinstance(item, Mapping)] if isinstance(given, list) else []


@dataclass
class SteerQueue:
    """The steering input accepted for one response under way: the response stops at its next output boundary
    (`response.incomplete`, reason `steered`), and its successor, created on the same socket, commits the input
    (the SDK's `BetaResponseSteerEvent`)."""

    response_id: str
    input: list[dict[str, Any]] = field(default_factory=list)
    awaited: bool = False
    """A successor is known to follow (a replay of a recorded one): once the response ended, the server waits for
    the steering input, however early it ended."""

    @property
    def requested(self) -> bool:
        return bool(self.input)

    def accept(self, frame: Mapping[str, Any]) -> None:
        self.input += steer_items(frame.get("input"))


def successor_request(wire: Mapping[str, Any], steered_id: str, queued: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The request of a steered response's automatic successor: the steered one's settings, continuing from it
    (`previous_response_id`) with the queued input."""
    inherited = {name: value for name, value in wire.items() if name not in ("input", "previous_response_id")}
    return {**inherited, "previous_response_id": steered_id, "input": [dict(item) for item in queued]}


def unaimed(frame: Mapping[str, Any]) -> str | None:
    """Why a steer frame names no response to steer (an `error` frame answers it: a steer failure must name its
    response), or None."""
    target = frame.get("previous_response_id")
    if not isinstance(target, str) or not target:
        return "A response.steer frame needs previous_response_id, the id of the response to steer."
    return None


def steer_problem(frame: Mapping[str, Any]) -> str | None:
    """Why a steer frame aimed at a response is not one the service takes (its answer: failed, `invalid_input`),
    or None."""
    given = frame.get("input")
    if not (isinstance(given, str) and given) and not (isinstance(given, list) and given):
        return "input must be a non-empty string or a non-empty list of user messages"
    extra = sorted(set(frame) - {"type", "previous_response_id", "input"})
    if extra:
        return f"a steer frame takes type, previous_response_id and input only (got {', '.join(extra)})"
    return None


def steer_accepted(steer_id: str, frame: Mapping[str, Any], sequence_number: int = 0) -> Event:
    """The server owns the input now (the successor's `response.created` commits it)."""
    return {"type": STEER_ACCEPTED, "sequence_number": sequence_number, "steer": _steer(steer_id, frame)}


def steer_pending(
    steer_id: str,
    frame: Mapping[str, Any],
    required_input: Sequence[Mapping[str, Any]],
    reason: str = WAITING_FOR_REQUIRED_INPUT,
    sequence_number: int = 1,
) -> Event:
    """Accepted input still queued after the response completed: it waits for these tool results (stubs)."""
    return {
        "type": STEER_PENDING,
        "sequence_number": sequence_number,
        "reason": reason,
        "required_input": [dict(stub) for stub in required_input],
        "steer": _steer(steer_id, frame),
    }


def steer_failed(frame: Mapping[str, Any], code: str, message: str | None = None, sequence_number: int = 0) -> Event:
    """The input was not taken: the frame's own input comes back, so that the client can send it again."""
    steer = {"input": frame.get("input"), "previous_response_id": frame.get("previous_response_id")}
    error = {"code": code, "message": message or STEER_MESSAGES.get(code, "Steering failed."), "type": _ERROR_TYPE}
    return {"type": STEER_FAILED, "sequence_number": sequence_number, "error": error, "steer": steer}


_ERROR_TYPE = "invalid_request_error"  # the SDK's only value for a steering error


def _steer(steer_id: str, frame: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": steer_id, "previous_response_id": frame.get("previous_response_id")}


def is_steer(text: str | None) -> bool:
    """Whether a frame's text is a steer frame (a recorded exchange's raw body)."""
    if not text or STEER not in text:
        return False
    try:
        frame = parse_json(text, what="frame")
    except ValueError:
        return False
    return isinstance(frame, dict) and frame.get("type") == STEER


def retarget(event: Mapping[str, Any], frame: Mapping[str, Any]) -> Event:
    """A recorded steer answer re-aimed at the live frame: the response it names and, when it failed, the input it
    hands back are the live frame's (a replay issues its own response ids)."""
    answer = dict(event)
    steer = answer.get("steer")
    if isinstance(steer, dict):
        steer = {**steer, "previous_response_id": frame.get("previous_response_id")}
        if answer.get("type") == STEER_FAILED:
            steer["input"] = frame.get("input")
        answer["steer"] = steer
    return answer


def answer_problems(frame_text: str | None, events: Sequence[Mapping[str, Any]]) -> list[tuple[int | None, str]]:
    """What is wrong with the answer to a client frame that was not a request, as (event index, detail): a steer
    frame's answer is steer answers, at least one; another frame (relayed as it came) has no rule."""
    if not is_steer(frame_text):
        return []
    if not events:
        return [(None, "a steer frame got no answer")]
    return [
        (index, f"{event.get('type')!r} answers no steer frame")
        for index, event in enumerate(events)
        if event.get("type") not in STEER_ANSWERS
    ]

"""Answering a WebSocket `response.steer` frame as a script's steer step says (or failed, without one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..protocol import steer
from ..protocol.events import Event
from ..protocol.ids import IdGenerator
from ..protocol.steer import steer_problem

if TYPE_CHECKING:
    from .models import SteerStep


def answer_steer(frame: Mapping[str, Any], step: SteerStep | None, ids: IdGenerator) -> list[Event]:
    """The events that answer a steer frame: as `step` says, or failed (`steering_not_supported`) without one; a
    frame the service would not take fails with `invalid_input` whatever the script says."""
    problem = steer_problem(frame)
    if problem is not None:
        return [steer.steer_failed(frame, "invalid_input", problem)]
    if step is None:
        return [steer.steer_failed(frame, steer.NOT_SUPPORTED)]
    if step.answer == "failed":
        return [steer.steer_failed(frame, step.code, step.message)]
    steer_id = ids.new("steer")
    accepted = steer.steer_accepted(steer_id, frame)
    if step.answer == "accepted":
        return [accepted]
    return [accepted, steer.steer_pending(steer_id, frame, step.required_input, step.reason)]

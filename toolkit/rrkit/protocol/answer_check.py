"""Every answer in a request's logical input (a `function_call_output`, ...) follows the call it names: one naming
no call before it is refused with the service's 400, as the service checks a continuation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .calls import CLIENT_CALLS
from .exceptions import BadRequest
from .request import COMPACTION_ITEM

CHECKED_ANSWERS: dict[str, str] = {
    call.answer_type: call.call_type for call in CLIENT_CALLS.values() if call.link == call.names == "call_id"
}
"""The answers checked, with the type of call each one answers: those linked to their call by `call_id`. The
service's words are observed for `function_call_output`, `custom_tool_call_output` and `tool_search_output` (and
follow one pattern); a `local_shell_call_output` (linked by `id`) and an `mcp_approval_response` (by
`approval_request_id`) are taken unchecked: how the service pairs them is not observed, and a fake that refuses
what the service takes fails a client that works."""

NO_CALL_FOUND = "No tool call found for {answer} with call_id {call_id}."
"""The service's 400 for an answer naming no call before it (`param: input`, no code; seen for a
`function_call_output`, a `custom_tool_call_output` and a `tool_search_output`, over HTTP and in a WebSocket
`error` frame)."""


def check_answers(items: Sequence[Any]) -> None:
    """BadRequest for the first answer in `items` whose `call_id` no call before it has issued (items as the model
    sees them: a continued response's input and output first). After a `compaction` item nothing is checked: the
    calls it replaced are in it, out of sight."""
    issued: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == COMPACTION_ITEM:
            return
        call_id = item.get("call_id")
        if type(call_id) is not str or type(kind) is not str:
            continue
        if kind in CLIENT_CALLS:
            issued.add(call_id)
        elif kind in CHECKED_ANSWERS and call_id not in issued:
            answer = kind.replace("_", " ")
            raise BadRequest(NO_CALL_FOUND.format(answer=answer, call_id=call_id), param="input")

"""What the fake server's exchanges say of a client's run beyond its attempts: the tool calls it was sent and the
outputs it answered, what it did after a compaction, and what it sent again into a conversation."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence

from ..protocol.calls import answered_key, call_key, tool_called, tool_declared
from ..protocol.events import done_items
from ..protocol.outcome import OutcomeKind
from ..protocol.request import (
    COMPACTION_ITEM,
    Item,
    input_items,
    is_compaction_request,
    item_key,
    retained_by_compaction,
)
from ..protocol.response_object import conversation_id
from ..protocol.routes import COMPACT, CONVERSATIONS_CREATE, CREATE, ITEMS_CREATE, route_of
from ..server.capture import Exchange
from .checks import AfterCompaction


def _completed(exchange: Exchange) -> bool:
    return exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED


def _output(exchange: Exchange) -> list[Item]:
    """The items a completed response stated done."""
    if not _completed(exchange):
        return []
    items = done_items([sent.event for sent in exchange.events.done_items()])
    return [item for item in items if isinstance(item, dict)]


def _body(exchange: Exchange) -> dict[str, object]:
    """The JSON object a route answered with (not a stream), or an empty one."""
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        body = json.loads(exchange.response_body or b"")
        if isinstance(body, dict):
            return body
    return {}


def _sent(exchange: Exchange) -> list[Item]:
    """A create's logical input: its own items after those of the response it continues."""
    request = exchange.logical_request or exchange.wire_request or {}
    items = input_items(request) if isinstance(request.get("input"), (list, str)) else []
    return [item for item in items if isinstance(item, dict)]


def calls_sent(exchanges: Sequence[Exchange]) -> tuple[str, ...]:
    """The ids of the calls the client must run in completed responses (a call's `call_id`, an approval request's
    `id`: what its answer names)."""
    return tuple(key for exchange in exchanges for item in _output(exchange) if (key := call_key(item)) is not None)


def names_called(exchanges: Sequence[Exchange]) -> tuple[str, ...]:
    """The tools the calls in completed responses need declared (protocol.calls.tool_called), each once."""
    return tuple(
        dict.fromkeys(
            tool for exchange in exchanges for item in _output(exchange) if (tool := tool_called(item)) is not None
        )
    )


def tools_declared(exchanges: Sequence[Exchange]) -> tuple[str, ...]:
    """The tools the client's requests declared (protocol.calls.tool_declared: a function's name, a tool type)."""
    names: dict[str, None] = {}
    for exchange in exchanges:
        request = exchange.logical_request or exchange.wire_request or {}
        tools = request.get("tools")
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and (name := tool_declared(tool)) is not None:
                names[name] = None
    return tuple(names)


def outputs_sent(exchanges: Sequence[Exchange]) -> tuple[str, ...]:
    """The ids of the calls the requests' input answered (the logical input: an incremental's too)."""
    return tuple(
        dict.fromkeys(
            key for exchange in exchanges for item in _sent(exchange) if (key := answered_key(item)) is not None
        )
    )


def _compaction_items(exchange: Exchange) -> list[Item]:
    """The compaction items a compaction answered with: `POST /responses/compact`'s output, or a create whose
    input ends with a compaction trigger."""
    if exchange.route == COMPACT and exchange.response_status == 200:
        output = _body(exchange).get("output")
        items = [item for item in output if isinstance(item, dict)] if isinstance(output, list) else []
    elif exchange.route == CREATE and exchange.wire_request and is_compaction_request(exchange.wire_request):
        items = _output(exchange)
    else:
        return []
    return [item for item in items if item.get("type") == COMPACTION_ITEM]


def _label(item: Item) -> str:
    role = item.get("role")
    kind = str(item.get("type", "message"))
    return f"{role} {kind}" if role else kind


def after_compaction(exchanges: Sequence[Exchange]) -> AfterCompaction | None:
    """The first compaction answered, and what the first create after it carried of it and of what it replaced."""
    answered = [(index, items) for index, exchange in enumerate(exchanges) if (items := _compaction_items(exchange))]
    if not answered:
        return None
    index, items = answered[0]
    returned = tuple(str(item.get("encrypted_content")) for item in items)
    following = next(
        (
            later
            for later in exchanges[index + 1 :]
            if later.route == CREATE and not later.warmup and not is_compaction_request(later.wire_request or {})
        ),
        None,
    )
    if following is None:
        return AfterCompaction(returned)
    sent = _sent(following)
    carried = {str(item.get("encrypted_content")) for item in sent if item.get("type") == COMPACTION_ITEM}
    stale = [
        _label(item)
        for item in sent
        if not retained_by_compaction(item)
        and not (item.get("type") == COMPACTION_ITEM and item.get("encrypted_content") in returned)
    ]
    return AfterCompaction(
        returned, tuple(content for content in returned if content in carried), tuple(dict.fromkeys(stale)), True
    )


def repeated_in_conversation(exchanges: Sequence[Exchange]) -> tuple[str, ...]:
    """The items a create sent that the conversation it named already held: what earlier creates naming it sent
    and were answered, and the items the client put in it itself (on creating it, or added)."""
    held: dict[str, set[str]] = {}
    repeated: list[str] = []
    for exchange in exchanges:
        wire = exchange.wire_request or {}
        if exchange.route == CONVERSATIONS_CREATE and exchange.response_status == 200:
            named = str(_body(exchange).get("id") or "")
            given = wire.get("items")
        elif exchange.route == ITEMS_CREATE and exchange.response_status == 200:
            named = route_of(exchange.method, exchange.path).params.get("conversation_id", "")
            given = wire.get("items")
        elif exchange.route == CREATE:
            found = conversation_id(wire.get("conversation"))
            if found is None:
                continue
            keys = held.setdefault(found, set())
            sent = [item for item in input_items(dict(wire)) if isinstance(item, dict)]
            repeated += [_label(item) for item in sent if item_key(item) in keys]
            if _completed(exchange):
                keys.update(item_key(item) for item in [*sent, *_output(exchange)])
            continue
        else:
            continue
        items = [item for item in given if isinstance(item, dict)] if isinstance(given, list) else []
        held.setdefault(named, set()).update(item_key(item) for item in items)
    return tuple(repeated)

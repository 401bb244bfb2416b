"""Compare the client's trace with what a server captured: both views of every request must agree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..protocol.routes import CREATE
from ..protocol.steer import is_steer
from .trace import Trace


class CapturedExchange(Protocol):
    """What a capture (e.g. the fake server's `Exchange`) knows about one request."""

    @property
    def transport(self) -> str: ...

    @property
    def wire_request(self) -> dict[str, Any] | None: ...

    @property
    def logical_request(self) -> dict[str, Any] | None: ...

    @property
    def route(self) -> str: ...

    @property
    def raw_body(self) -> str | None: ...

    @property
    def successor_of(self) -> str | None: ...


def view_mismatches(trace: Trace, exchanges: Sequence[CapturedExchange]) -> list[str]:
    """Every way the sent requests differ from the captured ones: count, transport, wire, rebuilt logical.

    An empty list means the server rebuilt exactly the logical request the client meant, for every request. Only
    the creates the client sent are compared (not a steer frame, nor a steered response's successor): a resumed
    stream (a GET of the response) is a request of no trace entry of its own. The logical request of a create
    naming a conversation is not: the server puts the conversation's items before it.
    """
    sent = trace.sent
    exchanges = [exchange for exchange in exchanges if exchange.route == CREATE and _client_request(exchange)]
    problems: list[str] = []
    if len(sent) != len(exchanges):
        problems.append(f"the client sent {len(sent)} requests, the server captured {len(exchanges)}")
    for position, (entry, exchange) in enumerate(zip(sent, exchanges, strict=False)):
        where = f"request {position} ({entry.describe()})"
        if entry.transport != exchange.transport:
            problems.append(f"{where}: sent over {entry.transport}, captured over {exchange.transport}")
        if entry.wire != exchange.wire_request:
            problems.append(f"{where}: the captured wire request differs from the one sent")
        # a conversation's items come before a request's input on the server only (with ids the server gave them)
        named = (exchange.wire_request or {}).get("conversation") is not None
        if not named and entry.logical != exchange.logical_request:
            problems.append(f"{where}: the server rebuilt a different logical request than the client meant")
    return problems


def _client_request(exchange: CapturedExchange) -> bool:
    """A create the client sent: not a steer frame (no request), nor a steered response's successor (the server
    made its request)."""
    return exchange.successor_of is None and not is_steer(exchange.raw_body)

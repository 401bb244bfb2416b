"""`rrkit conform --server` holds a server to the rules inside each event family (issue 48): a server that streams
a stream broken one way (each mutation of tests/protocol/test_protocol_order_mutations.py, on the first stream
rrkit builds that it applies to) gets a `must` finding naming that rule on the probe that reads a stream; the same
server sending the stream unbroken gets none. The server's own check of what it sent names the same rule."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rrkit.conform.server import Target, run_server
from rrkit.protocol import Rule
from rrkit.report import Severity
from rrkit.script.models import Script
from rrkit.tools.self_check import breaks_text, broken_rules

from ..errortrap import Serve
from ..protocol.test_protocol_order_mutations import MUTATIONS, STREAMS, stream

PROBE = "sse-text"
"""One streamed create over HTTP: the probe that reads the server's stream whole."""


def first_broken(mutation: str) -> list[dict[str, Any]]:
    """The mutation applied to the first stream it applies to."""
    mutate = MUTATIONS[mutation][0]
    return next(broken for name in STREAMS if (broken := mutate(stream(*STREAMS[name]))) is not None)


def serving(events: list[dict[str, Any]]) -> Script:
    """A script whose every reply is these events, verbatim."""
    return Script.model_validate({"name": "verbatim", "default": {"events": [{"event": event} for event in events]}})


def must_reasons(serve: Serve, events: list[dict[str, Any]]) -> set[str]:
    server = serve(serving(events))
    report = run_server(Target(server.http_url, timeout=10), transports=("http",), only=(PROBE,))
    return {finding.reason for finding in report.findings if finding.severity is Severity.MUST}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_server_sending_a_stream_broken_inside_a_family_gets_a_must_naming_the_rule(
    serve: Serve, mutation: str
) -> None:
    rule: Rule = MUTATIONS[mutation][1]
    assert rule.value in must_reasons(serve, first_broken(mutation))


@pytest.mark.parametrize("mutation", ["created already ended", "in_progress already cancelled"])
def test_the_server_s_own_check_names_an_opening_event_whose_response_ended(serve: Serve, mutation: str) -> None:
    """What `rrkit serve` prints after the exchange's line (`tools.self_check`), for a script's verbatim events."""
    server = serve(serving(first_broken(mutation)))
    body = {"model": "gpt-test", "input": "hi", "stream": True}
    httpx.post(f"{server.http_url}/responses", json=body, trust_env=False)
    (exchange,) = server.settle().exchanges
    assert broken_rules(exchange) == [Rule.OPENING_STATE.name.lower()]
    assert breaks_text(exchange) == "  breaks opening_state"


def test_the_same_server_sending_every_stream_unbroken_breaks_no_order_rule(serve: Serve) -> None:
    order_rules = {rule.value for rule in Rule}
    for name in ("message", "reasoning", "web-search", "image-generation", "mcp-call-failed"):
        assert not must_reasons(serve, stream(*STREAMS[name])) & order_rules, name

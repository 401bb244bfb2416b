"""The server's own check of each stream it sent, scripted or relayed from an upstream: the protocol rules it
breaks, found as `rrkit validate` finds them in a cassette, for the exchange's line."""

from __future__ import annotations

from ..server.capture import Exchange

CHECKED_EVENTS = 5_000
"""Longer streams are not checked as they end (a check reads every event again, beside the server's work):
`rrkit validate` checks them in the cassette."""


def broken_rules(exchange: Exchange) -> list[str] | None:
    """The rules the exchange's stream breaks (`rrkit validate`'s names, each once, in the order first broken), or
    None when it sent no stream or one longer than CHECKED_EVENTS."""
    if not 0 < len(exchange.events) <= CHECKED_EVENTS:
        return None
    from ..cassette.record import recorded_exchange  # the cassette models: loaded by the first stream checked
    from .validate import stream_findings

    recorded = recorded_exchange(exchange, exchange.started_at)
    findings = stream_findings(recorded, [event.event for event in recorded.events])
    return list(dict.fromkeys(finding.rule for finding in findings))


def breaks_text(exchange: Exchange) -> str:
    """`  breaks in_progress, part_closed` after an exchange's line when its stream breaks rules, else nothing;
    `  unchecked (ErrorName)` when the check itself failed on what a peer sent: the line, and every line after it,
    is still printed."""
    try:
        rules = broken_rules(exchange)
    except Exception as error:  # a peer's stream is anything: it never stops the exchange log
        return f"  unchecked ({type(error).__name__})"
    return f"  breaks {', '.join(rules)}" if rules else ""

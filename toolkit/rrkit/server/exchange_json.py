"""The admin API's JSON of what the server saw: an exchange (its summary, or whole with its credentials masked) and a
near miss."""

from __future__ import annotations

from typing import Any

from ..protocol.encoding import body_form
from ..protocol.outcome import json_of_body
from ..protocol.request import input_items
from ..protocol.secrets import REDACTED, mask_headers, mask_request, scrub_key_like
from .capture import Exchange
from .state import Unmatched


def exchange_summary(exchange: Exchange) -> dict[str, Any]:
    wire = exchange.wire_request
    logical = exchange.logical_request
    model = (wire or {}).get("model")
    return {
        "id": exchange.id,
        "session": exchange.session,
        "transport": exchange.transport,
        "connection": exchange.connection_id,
        "method": exchange.method,
        "path": exchange.path,
        "route": exchange.route,
        "model": model if isinstance(model, str) else None,
        "request": "incremental" if exchange.incremental else "full",
        "warmup": exchange.warmup,
        "previous_response_id": (wire or {}).get("previous_response_id") or None,
        "input_items": {
            "wire": len(input_items(wire)) if wire is not None else None,
            "logical": len(input_items(logical)) if logical is not None else None,
        },
        "response_id": exchange.response_id,
        "status": exchange.response_status,
        "outcome": exchange.outcome.to_dict() if exchange.outcome is not None else None,
        "event_count": len(exchange.events),
        "replayed": exchange.replayed,
        "started_at": round(exchange.started_at, 6),
        "duration_ms": round(exchange.duration * 1000, 3) if exchange.duration is not None else None,
    }


def exchange_full(exchange: Exchange) -> dict[str, Any]:
    content_type = next((v for k, v in exchange.response_headers.items() if k.lower() == "content-type"), "")
    body = exchange.response_body
    events = list(exchange.events)  # a response echoes the request's tools: their credentials too
    return {
        **exchange_summary(exchange),
        "query": exchange.query or None,
        "request_headers": mask_headers(exchange.request_headers, REDACTED),
        "wire_request": mask_request(exchange.wire_request, REDACTED),
        "logical_request": mask_request(exchange.logical_request, REDACTED),
        "raw_body": scrub_key_like(exchange.raw_body, REDACTED) if exchange.raw_body is not None else None,
        "response_headers": dict(exchange.response_headers),
        "response_body": _masked(body_form(body, content_type, json_of_body)) if body is not None else None,
        "events": [{"at": round(sent.at, 6), "event": mask_request(sent.event, REDACTED)} for sent in events],
    }


def _masked(form: dict[str, Any]) -> dict[str, Any]:
    """An answer's body form with its credentials masked (a response object echoes the request's tools)."""
    if "json" in form:
        return {**form, "json": mask_request(form["json"], REDACTED)}
    if "text" in form:
        return {**form, "text": scrub_key_like(form["text"], REDACTED)}
    return form


def unmatched_json(unmatched: Unmatched) -> dict[str, Any]:
    report = unmatched.report
    return {
        "exchange": unmatched.exchange_id,
        "transport": unmatched.transport,
        "connection": unmatched.connection_id,
        "at": round(unmatched.at, 6),
        "request": report.request,
        "what": report.what,
        "closest": list(report.closest),
        "hint": report.hint,
        "message": report.message(),
        "wire_request": mask_request(unmatched.wire_request, REDACTED),
    }

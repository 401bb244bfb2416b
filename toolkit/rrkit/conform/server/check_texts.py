"""What each server check holds an answer to, in words: `rrkit conform --server URL --list` shows them without
loading the checks (rrkit.conform.server.checks runs them)."""

from __future__ import annotations

CHECK_TEXTS: dict[str, str] = {
    "stream": "the stream's events follow the order rules of every event family and parse as the SDK's types",
    "completed": "the request is answered: a completed response",
    "response_object": "one JSON response object, consistent, for a request without `stream`",
    "refused": "refused with the status and the OpenAI error shape (HTTP body or WebSocket error frame)",
    "no_output": "a warmup (`generate: false`) answered without output",
    "upgrade": "the WebSocket upgrade as RFC 6455 says (101, Upgrade, Connection, the accept key)",
    "ok": "another route of the resource answered 2xx with one JSON object of its type (`object`)",
    "status": "a response object in one of the statuses allowed (`statuses`): a background lifecycle",
    "resumed": (
        "a resumed stream (`starting_after`) continues at starting_after + 1 with no gap and no repeat, to its end"
    ),
    "page": "a page of input items: at most `limit`, in the order asked, after `after`, `has_more` right",
    "steered": (
        "a steer frame sent while the response streams is answered (or refused with an error frame); accepted, the "
        "response ends and a successor commits the input and completes"
    ),
}

FIELDS = "fields"

PROBE_CHECK_TEXTS: dict[str, str] = {
    FIELDS: (
        "every body and event the server sends holds to the OpenAPI description, field by field (each field path "
        "once per probe; `must` where a client with a strict schema breaks)"
    ),
}
"""The checks every probe runs on all its answers, whatever its steps expect."""

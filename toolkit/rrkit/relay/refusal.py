"""What a client gets when the upstream refuses: its status, headers and error body as they came (a body that is
no JSON object made an OpenAI-shaped error), or a 502 naming what failed; and an upstream `error` frame as the
same rejection."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol import errors
from ..protocol.events import ERROR
from ..protocol.jsontext import parse_peer_json
from ..protocol.plan import Rejection
from .headers import response_headers

UPSTREAM_ERROR_STATUS = 502


def refusal(status: int, body: bytes | bytearray, headers: Iterable[tuple[str, str]]) -> Rejection:
    """The upstream's refusal (of a WebSocket upgrade) as the client's: a status from 300 to 599 as it came, any
    other a 502; its headers worth passing on; its body as an error object (one made up when it is empty)."""
    status = status if 300 <= status <= 599 else UPSTREAM_ERROR_STATUS
    return Rejection(status, json_body(body, status), response_headers(headers))


def json_body(raw: bytes | bytearray, status: int) -> dict[str, Any]:
    """An upstream error body as a JSON object (a non-JSON body becomes an OpenAI-shaped error with its text)."""
    try:
        body = parse_peer_json(raw, what="upstream's error body")
    except ValueError:  # UnsafeJSON: not JSON, or nested too deep to read
        body = None
    if isinstance(body, dict):
        return body
    text = raw.decode("utf-8", errors="replace").strip() or f"Upstream answered with status {status}."
    return errors.error_body(text, type=errors.default_error_type(status))


def upstream_error(message: str, code: str = "upstream_unreachable") -> dict[str, Any]:
    return errors.error_body(f"rrkit proxy: {message}", type="server_error", code=code)


def frame_rejection(event: Mapping[str, Any]) -> Rejection | None:
    """An upstream `error` frame with an error status, as the same rejection (the app sends it as a frame)."""
    status = event.get("status")
    if event.get("type") != ERROR or not isinstance(status, int) or not 400 <= status <= 599:
        return None
    error = event.get("error")
    body = {"error": error if isinstance(error, dict) else {"message": str(error or event.get("message", ""))}}
    raw_headers = event.get("headers")
    headers = {str(k): str(v) for k, v in raw_headers.items()} if isinstance(raw_headers, dict) else {}
    return Rejection(status, body, headers)

"""Which headers a relay sends on: the client's to the upstream, the upstream's back to the client (all but
hop-by-hop, framing and transport ones), and the compression a WebSocket client offered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..protocol.headers import HOP_BY_HOP, SERVER_FRAMED, TURN_STATE_HEADER, is_transport_header

_REQUEST_DROP = HOP_BY_HOP | {"host", "proxy-connection", "proxy-authorization", "accept-encoding"}
"""Never forwarded upstream."""
_RESPONSE_DROP = SERVER_FRAMED | {TURN_STATE_HEADER}
"""Never passed back to the client: the fake server's app frames its own responses (the turn state goes apart)."""


def forwarded_request_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The client's request headers to send upstream: all but hop-by-hop and transport ones."""
    return {k.lower(): v for k, v in headers.items() if not is_transport_header(k.lower(), _REQUEST_DROP)}


def response_headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The upstream's response headers worth passing on (retry-after, x-request-id, openai-model, rate limits,
    ...): all but hop-by-hop, framing and transport ones, and the turn state (passed on separately)."""
    kept: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        if is_transport_header(key, _RESPONSE_DROP):
            continue
        kept[key] = f"{kept[key]}, {value}" if key in kept else value
    return kept


def offers_deflate(headers: Mapping[str, str]) -> bool:
    """Whether the client's upgrade offered permessage-deflate (the proxy asks the upstream for no more)."""
    return any(
        name.lower() == "sec-websocket-extensions" and "permessage-deflate" in value.lower()
        for name, value in headers.items()
    )

"""What a relay is told: its upstream's endpoints (from a base URL, whose secrets never appear in a message), its
timeouts, the size of what it reads at once, the redirects it follows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from ..protocol.exceptions import SettingError
from ..protocol.limits import UPSTREAM_CONNECT_TIMEOUT, UPSTREAM_TIMEOUT, Limits
from ..protocol.secrets import URL_MARKER, redact_url, url_secrets

REDIRECTS = ("none", "same-origin")
"""What a relay does with an upstream's redirect: hand it to the client as it came (`none`), or follow a 307 or
308 (which keep the POST and its body) when it names the upstream's own scheme, host and port (`same-origin`)."""
PATH_SAFE = "/:@!$&'()*+,;=-._~"
"""What stays as it is when a decoded path is quoted again for the upstream (RFC 3986 pchar and `/`)."""
FRAME_REPLY_WINDOW = 0.5
"""Seconds the proxy waits for the upstream's answer to a client frame other than a request (it may send none)."""


@dataclass(frozen=True)
class RelaySettings:
    """`timeout`: how long the upstream may stay silent before a stream counts as cut (None: no limit);
    `connect_timeout`: reaching it (TCP, TLS, the WebSocket handshake); `max_message`: an SSE line or message, a
    whole answer, a WebSocket frame read at once; `redirects`: one of REDIRECTS. `RelaySettings.of(base_url)`."""

    base_url: str
    http_url: str
    ws_url: str
    shown_url: str
    secrets: tuple[str, ...]
    timeout: float | None = UPSTREAM_TIMEOUT
    connect_timeout: float = UPSTREAM_CONNECT_TIMEOUT
    frame_reply_window: float = FRAME_REPLY_WINDOW
    max_message: int = Limits().upstream_message
    redirects: str = "none"

    @classmethod
    def of(cls, base_url: str, **options: Any) -> RelaySettings:
        """The settings of a relay to the Responses endpoint under `base_url` (`.../v1`); ValueError, the URL
        redacted, for a URL that is not http(s) or ws(s) or a `redirects` that is not one of REDIRECTS."""
        if options.get("redirects", "none") not in REDIRECTS:
            raise SettingError(f"redirects={options['redirects']!r}: give one of {', '.join(REDIRECTS)}")
        base = base_url.strip()
        http_url, ws_url = endpoints(base)
        return cls(base, http_url, ws_url, redact_url(base), tuple(url_secrets(base)), **options)

    def route_url(self, path: str, query: str = "") -> str:
        """The upstream URL of `path` under the API base (`/responses/resp_1/cancel`: the base's path, then this;
        `path` as the server decoded it, quoted again), with the base's and the client's query strings."""
        parts = urlsplit(self.http_url)
        base = parts.path.removesuffix("/responses")
        where = urlunsplit((parts.scheme, parts.netloc, base + quote(path, safe=PATH_SAFE), parts.query, ""))
        return with_query(where, query)

    def shown(self, text: str) -> str:
        """`text` (an error message that may quote the URL) with the URL's secrets redacted."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, URL_MARKER)
        return text


def endpoints(base_url: str, what: str = "upstream URL") -> tuple[str, str]:
    """(HTTP URL, WebSocket URL) of `{base_url}/responses`; a URL that is not http(s) or ws(s) is a SettingError
    naming it as `what`."""
    shown = redact_url(base_url.strip())
    try:
        parts = urlsplit(base_url.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as error:
        raise SettingError(f"invalid {what} {shown!r}: {error}") from None
    schemes = {"http": ("http", "ws"), "https": ("https", "wss"), "ws": ("http", "ws"), "wss": ("https", "wss")}
    if parts.scheme.lower() not in schemes or not parts.hostname:
        raise SettingError(
            f"invalid {what} {shown!r}: expected http(s)://host[:port][/path], "
            "the base URL of a Responses endpoint (for example https://api.openai.com/v1)"
        )
    http_scheme, ws_scheme = schemes[parts.scheme.lower()]
    path = parts.path.rstrip("/") + "/responses"
    http = urlunsplit((http_scheme, parts.netloc, path, parts.query, ""))
    return http, urlunsplit((ws_scheme, parts.netloc, path, parts.query, ""))


def with_query(url: str, query: str) -> str:
    """`url` with the client's query string added to its own (the upstream's base URL may carry one)."""
    if not query:
        return url
    return f"{url}&{query}" if urlsplit(url).query else f"{url}?{query}"

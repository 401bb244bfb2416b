"""Where Responses traffic carries credentials: headers named like one, body fields named like one, an MCP tool's
`authorization` and `headers`, values that look like API keys; and a request or headers with them masked."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

REDACTED = "<redacted>"
"""How a report (the admin API, the journal) shows a credential; cassettes use their own marker."""
SECRET_HEADERS = ("authorization", "api-key", "openai-organization", "openai-project", "cookie", "set-cookie")
"""The headers a cassette redacts by default (the account's identity goes with its key)."""
SECRET_WORDS = ("authorization", "api-key", "api_key", "apikey", "cookie", "token", "secret", "password")
"""A header or body field whose name contains one of these (case and `-`/`_` aside) holds a credential."""
NOT_SECRET_FIELDS = frozenset({"max_output_tokens", "max_tokens", "input_tokens", "output_tokens", "total_tokens"})
"""Request fields whose names contain a secret word and hold none (token counts)."""
SECRET_VALUE = re.compile(r"(?:sk|rk|sess|pk)-[A-Za-z0-9_\-]{16,}|Bearer\s+\S{8,}")
"""A string that is an API key or a bearer credential, wherever it is."""
TOOL_SECRET_FIELDS = ("authorization", "headers")
"""An MCP tool's (or a connector's) credential fields in `tools[*]`: every value under them is a secret."""


_FOLDED_WORDS = tuple(word.replace("_", "-") for word in SECRET_WORDS)


def secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a header or body field of this name holds a credential (`extra`: more names, exact, any case)."""
    return _secret(name, frozenset(name.lower() for name in extra))


@functools.lru_cache(maxsize=4096)  # a request's keys repeat item after item
def _secret(name: str, extra: frozenset[str]) -> bool:
    lowered = name.lower()
    folded = lowered.replace("_", "-")
    if lowered in NOT_SECRET_FIELDS or folded.endswith("-tokens"):
        return False
    return folded in SECRET_HEADERS or lowered in extra or any(word in folded for word in _FOLDED_WORDS)


def mask_headers(headers: Mapping[str, str], marker: str, extra: Iterable[str] = ()) -> dict[str, str]:
    names = frozenset(name.lower() for name in extra)
    return {name: marker if _secret(name, names) else value for name, value in headers.items()}


def mask_request(
    request: Any, marker: str, extra: Iterable[str] = (), found: Callable[[str], None] | None = None
) -> Any:
    """A copy of a request body with every credential replaced by `marker`: fields named like one (anywhere), every
    value under a tool's `authorization` / `headers`, and strings that look like keys; `found` is told each value
    masked (to scrub its copies elsewhere). A value already the marker stays; the input is not changed."""
    names = frozenset(name.lower() for name in extra)

    def masked(value: Any) -> Any:
        if found is not None and value != marker and value is not None:
            for text in _texts(value):
                found(text)
        return marker

    def walk(value: Any, in_tool: bool = False) -> Any:
        if isinstance(value, str):
            return masked(value) if SECRET_VALUE.fullmatch(value) else value
        if isinstance(value, list):
            return [walk(item, in_tool) for item in value]
        if not isinstance(value, dict):
            return value
        return {key: field(key, item, in_tool) for key, item in value.items()}

    def field(key: str, item: Any, in_tool: bool) -> Any:
        """A field of an object (of a tool, `in_tool`), masked if it is a credential."""
        if in_tool and key == "headers" and isinstance(item, dict):
            return {name: masked(header) if header is not None else None for name, header in item.items()}
        if (in_tool and key in TOOL_SECRET_FIELDS and item is not None) or (
            isinstance(item, str) and _secret(key, names)
        ):
            return masked(item)
        if key == "tools" and isinstance(item, list):
            return [walk(tool, in_tool=True) for tool in item]
        return walk(item)

    return walk(request)


def scrub_key_like(text: str, marker: str) -> str:
    """`text` with every run that looks like a key (`sk-...`, `Bearer ...`) replaced by `marker`: for what is not
    read as JSON fields (a raw body, an answer's text)."""
    return SECRET_VALUE.sub(marker, text)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return [str(value)]


# -- URLs: userinfo and query values ------------------------------------------------------------------------------

URL_MARKER = "[REDACTED]"
"""What stands for a secret of a URL (the cassette marker)."""
SECRET_QUERY_NAMES = frozenset(
    {"api-key", "api_key", "apikey", "key", "token", "access_token", "auth", "sig", "signature", "password"}
    | {"secret", "client_secret", "code", "session"}
)
"""Query parameters whose values are redacted whatever they look like (Azure's `api-key`, SAS `sig`, ...)."""
_SECRET_LOOKING = re.compile(r"(?:sk|rk|sess|pk)-[\w-]{8,}|[A-Za-z0-9_\-]*\d[A-Za-z0-9_\-]*[A-Za-z][A-Za-z0-9_\-]{30,}")
MIN_SECRET = 8  # shorter values are too likely to occur by chance to be scrubbed everywhere


def _secret_query_value(name: str, value: str, names: Iterable[str]) -> bool:
    return name.lower() in SECRET_QUERY_NAMES or name.lower() in names or bool(_SECRET_LOOKING.fullmatch(value))


def query_secrets(query: str, names: Iterable[str] = ()) -> list[str]:
    """The values of a query string that are secrets (by name, by configured name, or by their look)."""
    found = []
    for part in query.split("&"):
        name, sep, value = part.partition("=")
        if sep and value and _secret_query_value(unquote_plus(name), unquote_plus(value), tuple(names)):
            found += [value, unquote_plus(value)]
    return found


def redact_query(query: str, names: Iterable[str] = (), marker: str = URL_MARKER) -> str:
    """The query string with its secret values replaced by the marker, everything else as it was."""
    names = tuple(n.lower() for n in names)
    parts = []
    for part in query.split("&"):
        name, sep, value = part.partition("=")
        secret = sep and value and _secret_query_value(unquote_plus(name), unquote_plus(value), names)
        parts.append(f"{name}={marker}" if secret else part)
    return "&".join(parts)


def redact_url(url: str, names: Iterable[str] = (), marker: str = URL_MARKER) -> str:
    """A URL fit for messages and files: userinfo and secret query values replaced by the marker."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{marker}@{netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, parts.path, redact_query(parts.query, names, marker), parts.fragment))


def url_secrets(url: str, names: Iterable[str] = ()) -> list[str]:
    """The secrets a URL carries: its userinfo (and password) and its secret query values."""
    parts = urlsplit(url)
    found = query_secrets(parts.query, names)
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        found += [userinfo, userinfo.partition(":")[2]]
    return [secret for secret in found if secret]

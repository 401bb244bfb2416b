"""Where Responses traffic carries credentials: headers named like one, body fields named like one, an MCP tool's
`authorization` and `headers`, values that look like API keys; and a request or headers with them masked."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

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
        out: dict[str, Any] = {}
        for key, item in value.items():
            if in_tool and key == "headers" and isinstance(item, dict):
                out[key] = {name: masked(header) if header is not None else None for name, header in item.items()}
            elif (in_tool and key in TOOL_SECRET_FIELDS and item is not None) or (
                isinstance(item, str) and _secret(key, names)
            ):
                out[key] = masked(item)
            elif key == "tools" and isinstance(item, list):
                out[key] = [walk(tool, in_tool=True) for tool in item]
            else:
                out[key] = walk(item)
        return out

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

"""Where Responses traffic carries credentials: headers named like one, body fields named like one, an MCP tool's
`authorization` and `headers`, values that look like API keys; and a request or headers with them masked."""

from __future__ import annotations

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


def secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a header or body field of this name holds a credential (`extra`: more names, exact, any case)."""
    folded = name.lower().replace("_", "-")
    if name.lower() in NOT_SECRET_FIELDS or folded.endswith("-tokens"):
        return False
    if folded in SECRET_HEADERS or name.lower() in {e.lower() for e in extra}:
        return True
    return any(word.replace("_", "-") in folded for word in SECRET_WORDS)


def mask_headers(headers: Mapping[str, str], marker: str, extra: Iterable[str] = ()) -> dict[str, str]:
    extra = tuple(extra)
    return {name: marker if secret_name(name, extra) else value for name, value in headers.items()}


def mask_request(
    request: Any, marker: str, extra: Iterable[str] = (), found: Callable[[str], None] | None = None
) -> Any:
    """A copy of a request body with every credential replaced by `marker`: fields named like one (anywhere), every
    value under a tool's `authorization` / `headers`, and strings that look like keys; `found` is told each value
    masked (to scrub its copies elsewhere). A value already the marker stays; the input is not changed."""
    extra = tuple(extra)

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
                isinstance(item, str) and secret_name(key, extra)
            ):
                out[key] = masked(item)
            elif key == "tools" and isinstance(item, list):
                out[key] = [walk(tool, in_tool=True) for tool in item]
            else:
                out[key] = walk(item)
        return out

    return walk(request)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return [str(value)]

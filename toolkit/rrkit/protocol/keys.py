"""API keys as the service checks them: the key a request bears, and the 401 a missing or wrong one gets."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from .errors import error_body

UNAUTHORIZED = 401
INVALID_API_KEY = "invalid_api_key"
KEYS_PAGE = "https://platform.openai.com/account/api-keys"
MISSING_KEY_MESSAGE = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth "
    "(i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the "
    f"API from your browser and are prompted for a username. You can obtain an API key from {KEYS_PAGE}."
)


def bearer_key(headers: Mapping[str, str]) -> str | None:
    """The key a request bears: `Authorization: Bearer KEY` (headers named in lower case), else Azure's `api-key`."""
    authorization = headers.get("authorization", "").strip()
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() == "bearer" and key.strip():
        return key.strip()
    return headers.get("api-key", "").strip() or None


def shown_key(key: str) -> str:
    """A key as the service's error shows it: its start and its last four characters, the rest starred."""
    if len(key) <= 12:
        return "*" * len(key)
    return key[:8] + "*" * (len(key) - 12) + key[-4:]


def key_refusal(required: str, headers: Mapping[str, str]) -> dict[str, Any] | None:
    """The 401 body for a request without `required` as its key (None: the key is right)."""
    given = bearer_key(headers)
    if given is None:
        return error_body(MISSING_KEY_MESSAGE, type="invalid_request_error")
    if secrets.compare_digest(given.encode("utf-8", "surrogatepass"), required.encode("utf-8", "surrogatepass")):
        return None
    message = f"Incorrect API key provided: {shown_key(given)}. You can find your API key at {KEYS_PAGE}."
    return error_body(message, type="invalid_request_error", code=INVALID_API_KEY)

"""The routes of the Responses resource (docs/protocol.md, "Every route"): which one a method and path take, by name,
written once for the server, the proxy, the cassette and the tools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

from .exceptions import BadRequest
from .numbers import LARGEST, integer

CREATE = "responses.create"
RETRIEVE = "responses.retrieve"
DELETE = "responses.delete"
CANCEL = "responses.cancel"
INPUT_ITEMS = "responses.input_items"
INPUT_TOKENS = "responses.input_tokens"
COMPACT = "responses.compact"
CONVERSATIONS_CREATE = "conversations.create"
CONVERSATIONS_RETRIEVE = "conversations.retrieve"
CONVERSATIONS_UPDATE = "conversations.update"
CONVERSATIONS_DELETE = "conversations.delete"
ITEMS_LIST = "conversations.items.list"
ITEMS_CREATE = "conversations.items.create"
ITEMS_RETRIEVE = "conversations.items.retrieve"
ITEMS_DELETE = "conversations.items.delete"
MODELS_LIST = "models.list"
MODELS_RETRIEVE = "models.retrieve"
MODELS_DELETE = "models.delete"
OTHER = "other"
"""A method and path outside the table: the proxy relays it, a cassette replays it, the fake server answers 404."""

API_PREFIX = "/v1"
"""The API base's path on the real service; the fake server answers under it and under `/`."""

ROUTES: tuple[tuple[str, str, str], ...] = (
    ("POST", "/responses", CREATE),
    ("POST", "/responses/input_tokens", INPUT_TOKENS),
    ("POST", "/responses/compact", COMPACT),
    ("GET", "/responses/{response_id}", RETRIEVE),
    ("DELETE", "/responses/{response_id}", DELETE),
    ("POST", "/responses/{response_id}/cancel", CANCEL),
    ("GET", "/responses/{response_id}/input_items", INPUT_ITEMS),
    ("POST", "/conversations", CONVERSATIONS_CREATE),
    ("GET", "/conversations/{conversation_id}", CONVERSATIONS_RETRIEVE),
    ("POST", "/conversations/{conversation_id}", CONVERSATIONS_UPDATE),
    ("DELETE", "/conversations/{conversation_id}", CONVERSATIONS_DELETE),
    ("GET", "/conversations/{conversation_id}/items", ITEMS_LIST),
    ("POST", "/conversations/{conversation_id}/items", ITEMS_CREATE),
    ("GET", "/conversations/{conversation_id}/items/{item_id}", ITEMS_RETRIEVE),
    ("DELETE", "/conversations/{conversation_id}/items/{item_id}", ITEMS_DELETE),
    ("GET", "/models", MODELS_LIST),
    ("GET", "/models/{model}", MODELS_RETRIEVE),
    ("DELETE", "/models/{model}", MODELS_DELETE),
)
"""Every route the official SDKs call on the resource: method, path under the API base, name."""

ROUTE_NAMES: tuple[str, ...] = (*(name for _, _, name in ROUTES), OTHER)


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request went: the route's name and the path's parameters (`response_id`, `conversation_id`, ...)."""

    name: str
    params: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> str:
        return self.params[key]


def api_path(path: str) -> str:
    """A request's path under the API base: `/v1/responses/x` and `/responses/x` are both `/responses/x`."""
    if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
        path = path[len(API_PREFIX) :]
    return path.rstrip("/") or "/"


def route_of(method: str, path: str) -> Route:
    """The route `method` and `path` (with or without the `/v1` prefix) take; `OTHER` when none of the table's."""
    parts = api_path(path).strip("/").split("/")
    for route_method, template, name in ROUTES:
        params = _params(template, parts) if route_method == method.upper() else None
        if params is not None:
            return Route(name, params)
    return Route(OTHER)


def allowed_methods(path: str) -> list[str]:
    """The methods the table has for `path` (empty: no route has this path); a request with another method is
    answered 405."""
    parts = api_path(path).strip("/").split("/")
    return list(dict.fromkeys(method for method, template, _ in ROUTES if _params(template, parts) is not None))


def _params(template: str, parts: list[str]) -> dict[str, str] | None:
    """The parameters `parts` (a path's segments) give `template`, or None when it does not fit."""
    shape = template.strip("/").split("/")
    if len(shape) != len(parts):
        return None
    params: dict[str, str] = {}
    for want, got in zip(shape, parts, strict=True):
        if want.startswith("{") and got:
            params[want[1:-1]] = unquote(got)
        elif want != got:
            return None
    return params


def route_paths() -> list[str]:
    """Every distinct path template of the table (for a server's routing)."""
    return list(dict.fromkeys(template for _, template, _ in ROUTES))


def resumed_after(query: str | Mapping[str, str]) -> int | None:
    """The sequence number a retrieve's query resumes a stream after (`stream=true&starting_after=N`), or None when
    it asks for no stream or names no integer cursor."""
    fields = dict(parse_qsl(query)) if isinstance(query, str) else query
    after = fields.get("starting_after", "")
    if fields.get("stream") != "true":
        return None
    try:
        return integer(after, "starting_after", low=-LARGEST)
    except BadRequest:
        return None

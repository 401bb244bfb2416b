"""The objects of the resource beyond the stream (docs/protocol.md, "Every route"): stored items, cursor pages,
conversations, token counts, compactions, models, deletions and the errors of a missing id; shaped as the newest
official SDK parses them strictly."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import errors
from .events import estimate_tokens, usage
from .exceptions import BadRequest
from .ids import PREFIXES, IdGenerator
from .numbers import integer
from .request import COMPACTION_ITEM, Item

RESPONSE_STATUSES = ("queued", "in_progress", "completed", "failed", "incomplete", "cancelled")
ACTIVE_STATUSES = frozenset({"queued", "in_progress"})
"""A background response in one of these can still be cancelled, and a stream of it still grows."""
ENDED_STATUSES = frozenset({"completed", "failed", "incomplete", "cancelled"})

PAGE_LIMIT = 20
"""Items a page holds when the request does not say (`limit`), as the API's default; at most `MAX_PAGE_LIMIT`."""
MAX_PAGE_LIMIT = 100

DEFAULT_MODELS = ("gpt-rrkit", "gpt-test", "gpt-5.5", "gpt-5.4", "gpt-5.4-mini")
"""The model catalogue `GET /v1/models` lists when the script names none."""
MODELS_ETAG_HEADER = "x-models-etag"


def _content_part(role: str, part: object) -> object:
    if isinstance(part, str):
        return _text_part(role, part)
    return part


def _text_part(role: str, text: str) -> dict[str, Any]:
    if role == "assistant":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {"type": "input_text", "text": text}


def stored_item(item: Item, ids: IdGenerator) -> Item:
    """An input item as the service keeps it: an `id` (made when the client sent none), a message's `status` and
    its content as a list of parts (a plain string becomes one text part)."""
    kept = dict(item)
    kind = str(kept.get("type") or "message")
    kept["type"] = kind
    if not kept.get("id"):
        kept["id"] = ids.new(kind) if kind in PREFIXES else "item_" + ids.new("call")[len(PREFIXES["call"]) :]
    if kind == "message":
        role = str(kept.get("role") or "user")
        kept["role"] = role
        kept.setdefault("status", "completed")
        content = kept.get("content")
        if isinstance(content, str):
            kept["content"] = [_text_part(role, content)]
        elif isinstance(content, list):
            kept["content"] = [_content_part(role, part) for part in content]
    elif kind in ("function_call_output", "custom_tool_call_output", "function_call"):
        kept.setdefault("status", "completed")
    return kept


def stored_items(items: Iterable[Item], ids: IdGenerator) -> list[Item]:
    return [stored_item(item, ids) for item in items if isinstance(item, Mapping)]


def page(
    items: Sequence[Item], *, after: str | None = None, limit: int = PAGE_LIMIT, order: str = "desc"
) -> dict[str, Any]:
    """A cursor page of `items` (kept oldest first): `order` "desc" lists the newest first, as the API's default;
    `after` is the id of the item the page starts after. An unknown `after` gives an empty page."""
    ordered = list(items) if order == "asc" else list(reversed(items))
    start = 0
    if after:
        ids = [str(item.get("id")) for item in ordered]
        start = ids.index(after) + 1 if after in ids else len(ordered)
    chosen = ordered[start : start + limit]
    return {
        "object": "list",
        "data": chosen,
        "first_id": str(chosen[0].get("id")) if chosen else None,
        "last_id": str(chosen[-1].get("id")) if chosen else None,
        "has_more": start + limit < len(ordered),
    }


def page_query(query: Mapping[str, str]) -> tuple[str | None, int, str]:
    """(`after`, `limit`, `order`) of a list request's query; a BadPage says which is wrong."""
    after = query.get("after") or None
    try:
        limit = integer(query.get("limit", str(PAGE_LIMIT)), "limit", low=1, high=MAX_PAGE_LIMIT)
    except BadRequest as error:
        raise BadPage(error.message, "limit") from None
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise BadPage(f"Invalid 'order': expected 'asc' or 'desc', got {order!r}.", "order")
    return after, limit, order


class BadPage(BadRequest):
    """A list request's query the API answers with 400: `param` names the query parameter at fault."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message, param=param)


def conversation_object(conversation_id: str, created_at: int, metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": conversation_id, "object": "conversation", "created_at": created_at, "metadata": dict(metadata)}


def deleted(object_id: str, kind: str) -> dict[str, Any]:
    """What a DELETE answers: `{"id", "object": "<kind>.deleted" | kind, "deleted": true}`."""
    return {"id": object_id, "object": kind, "deleted": True}


def input_tokens_object(count: int) -> dict[str, Any]:
    return {"object": "response.input_tokens", "input_tokens": count}


def count_input_tokens(body: Mapping[str, Any]) -> int:
    """The fake service's input token count of a request body (the estimate its `usage` figures use): instructions,
    input and tools."""
    return sum(estimate_tokens(body.get(name)) for name in ("instructions", "input", "tools"))


def compaction_item(ids: IdGenerator, summary: str = "") -> Item:
    """The one item a compaction ends with: an opaque summary of what came before."""
    return {"type": COMPACTION_ITEM, "id": ids.new("compaction"), "encrypted_content": summary or "rrkit-compacted"}


def compacted_output(items: Sequence[Item], ids: IdGenerator, summary: str = "") -> list[Item]:
    """What `POST /v1/responses/compact` returns as output by default: every user message of the input, then
    one compaction item (the SDK's `CompactedResponse.output`)."""
    users = [item for item in stored_items(items, ids) if item.get("type") == "message" and item.get("role") == "user"]
    return [*users, compaction_item(ids, summary)]


def compaction_object(
    response_id: str, output: Sequence[Item], *, input_tokens: int, created_at: int | None = None
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response.compaction",
        "created_at": int(time.time()) if created_at is None else created_at,
        "output": list(output),
        "usage": usage(input_tokens, estimate_tokens(list(output))),
    }


def model_object(model_id: str, created: int = 1_700_000_000, owned_by: str = "rrkit") -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": owned_by}


def models_page(models: Iterable[str]) -> dict[str, Any]:
    return {"object": "list", "data": [model_object(model) for model in models]}


def not_found(kind: str, object_id: str, *, param: str | None = None) -> dict[str, Any]:
    """The 404 body of an id the service does not have (a response deleted, never stored, or evicted)."""
    return errors.error_body(f"{kind} with id '{object_id}' not found.", param=param)


def models_etag(models: Iterable[str]) -> str:
    """The catalogue's `x-models-etag`: changes exactly when the list of models does."""
    return hashlib.sha256("\n".join(models).encode()).hexdigest()[:16]


FINE_TUNED_PREFIX = "ft:"
"""A fine-tuned model's id begins so (`ft:gpt-4o-mini:acemeco:suffix:abc123`): the only models a DELETE removes."""


def model_not_found(model_id: str) -> dict[str, Any]:
    """The 404 body of a model the service does not have (or the caller may not see), as the service words it."""
    message = f"The model `{model_id}` does not exist or you do not have access to it."
    return errors.error_body(message, code="model_not_found")


def model_not_deletable(model_id: str) -> dict[str, Any]:
    """The 403 body of a DELETE of a base model: only the fine-tuned models an organization owns can be deleted."""
    message = (
        f"The model '{model_id}' cannot be deleted: only fine-tuned models ({FINE_TUNED_PREFIX}...) your "
        "organization owns can be deleted, by a member with the Owner role."
    )
    return errors.error_body(message, type=errors.default_error_type(403))

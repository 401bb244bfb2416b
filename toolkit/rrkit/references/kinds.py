"""What each body and event is, in the OpenAPI description's names: the schema a route's 2xx body is held to,
and the union every streamed event is a member of."""

from __future__ import annotations

from typing import Final, Literal

from ..protocol import routes

BodyKind = Literal[
    "response",
    "item_list",
    "input_tokens",
    "compaction",
    "conversation",
    "deleted_conversation",
    "conversation_item",
    "conversation_item_list",
    "model",
    "model_list",
    "deleted_model",
    "error",
]
"""What a body is: a route's 2xx object, or `error`, the object under an error body's (or frame's) `error`."""

BODY_SCHEMAS: Final[dict[BodyKind, str]] = {
    "response": "Response",
    "item_list": "ResponseItemList",
    "input_tokens": "TokenCountsResource",
    "compaction": "CompactResource",
    "conversation": "ConversationResource",
    "deleted_conversation": "DeletedConversationResource",
    "conversation_item": "ConversationItem",
    "conversation_item_list": "ConversationItemList",
    "model": "Model",
    "model_list": "ListModelsResponse",
    "deleted_model": "DeleteModelResponse",
    "error": "Error",
}
"""Each kind of body -> the component schema the spec gives it."""

EVENT_UNION: Final = "ResponseStreamEvent"
"""The spec's union of every streamed event (SSE data, WebSocket frame), told apart by `type`."""

ROOTS: Final[tuple[str, ...]] = (*BODY_SCHEMAS.values(), EVENT_UNION)
"""The schemas the vendored excerpt keeps, with every schema they reach."""

ROUTE_KINDS: Final[dict[str, BodyKind]] = {
    routes.CREATE: "response",
    routes.RETRIEVE: "response",
    routes.CANCEL: "response",
    routes.INPUT_ITEMS: "item_list",
    routes.INPUT_TOKENS: "input_tokens",
    routes.COMPACT: "compaction",
    routes.CONVERSATIONS_CREATE: "conversation",
    routes.CONVERSATIONS_RETRIEVE: "conversation",
    routes.CONVERSATIONS_UPDATE: "conversation",
    routes.CONVERSATIONS_DELETE: "deleted_conversation",
    routes.ITEMS_LIST: "conversation_item_list",
    routes.ITEMS_CREATE: "conversation_item_list",
    routes.ITEMS_RETRIEVE: "conversation_item",
    routes.ITEMS_DELETE: "conversation",
    routes.MODELS_LIST: "model_list",
    routes.MODELS_RETRIEVE: "model",
    routes.MODELS_DELETE: "deleted_model",
}
"""The kind of a route's 2xx JSON body (`rrkit.protocol.routes` names). `responses.delete` has none: the spec
documents no 200 body for it (see `artefacts`)."""

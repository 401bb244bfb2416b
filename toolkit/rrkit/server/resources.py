"""The fake server's own answers on every route but the create (docs/protocol.md, "Every route"), read from and
written to its one response store: retrieve (and resume a background stream), cancel, delete, input items, input
token counts, compaction, conversations and their items, models."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl

from ..protocol import errors, routes
from ..protocol import resources as shapes
from ..protocol.events import ResponseEvents, done_items
from ..protocol.exceptions import BadRequest
from ..protocol.ids import IdGenerator
from ..protocol.input_check import check_input_items, check_storable, resolve_references
from ..protocol.numbers import LARGEST, integer
from ..protocol.outcome import OutcomeKind
from ..protocol.plan import NO_FAULT, Rejection, ResponsePlan, VerbatimBody
from ..protocol.request import Item, input_items, json_type
from ..protocol.response_object import conversation_id, echoed_request
from ..protocol.sse import encode_json
from ..script.select import RequestView
from .background import BackgroundRun
from .capture import Exchange
from .respond import RequestRefused, Responder, ServerState, invalid_request
from .store import Conversation, Stored, stated_of


def answer(state: ServerState, view: RequestView) -> ResponsePlan:
    """The store's answer to `view` (any route but `responses.create`)."""
    handler = _HANDLERS.get(view.route.name)
    if handler is None:
        allowed = routes.allowed_methods(view.path)
        if allowed:
            message = (
                f"Method {view.method} is not allowed on {routes.API_PREFIX}{view.path}: use {', '.join(allowed)}."
            )
            refusal = Rejection(405, errors.error_body(message), {"allow": ", ".join(allowed)})
            return ResponsePlan(rejection=refusal)
        message = f"Invalid URL ({view.method} {routes.API_PREFIX}{view.path})"
        return ResponsePlan(rejection=Rejection(404, errors.error_body(message)))
    try:
        return handler(state, view)
    except RequestRefused as refused:
        return ResponsePlan(rejection=Rejection(refused.status, refused.body, refused.headers))
    except BadRequest as bad:  # a query parameter (`limit`, `starting_after`, ...) the API refuses, named
        return ResponsePlan(rejection=Rejection(400, errors.error_body(bad.message, param=bad.param, code=bad.code)))


def _json(value: Mapping[str, Any] | list[Any], headers: Mapping[str, str] | None = None) -> ResponsePlan:
    return ResponsePlan(body=VerbatimBody(200, encode_json(value)), headers=dict(headers or {}))


def _query(view: RequestView) -> dict[str, str]:
    return dict(parse_qsl(view.query, keep_blank_values=True))


def _refused(status: int, message: str, *, param: str | None = None, code: str | None = None) -> RequestRefused:
    return RequestRefused(status, errors.error_body(message, param=param, code=code))


def _stored(state: ServerState, view: RequestView) -> tuple[str, Stored]:
    response_id = view.route["response_id"]
    stored = state.http_store.get(response_id)
    if stored is None or (stored.response is None and stored.run is None):
        raise RequestRefused(404, shapes.not_found("Response", response_id))
    return response_id, stored


def _item_ids(owner: str) -> IdGenerator:
    """Ids for the items of `owner` (a response) that came without one: the same on every read, so that a page's
    `after` names the same item each time."""
    counter = itertools.count(1)
    token = owner.split("_", 1)[-1]
    return IdGenerator(lambda: f"{token}{next(counter):04d}")


def _retrieve(state: ServerState, view: RequestView) -> ResponsePlan:
    response_id, stored = _stored(state, view)
    query = _query(view)
    if query.get("stream", "").lower() != "true":
        return _json(stored.run.polled() if stored.run is not None else stored.stated)
    if stored.run is None:
        message = "Streaming a stored response is only supported for responses created with background=true."
        raise _refused(400, message, param="stream")
    after_text = query.get("starting_after")
    after = integer(after_text, "starting_after", low=-LARGEST) if after_text else None
    return ResponsePlan(stored.run.follow(after), response_id=response_id)


def _delete(state: ServerState, view: RequestView) -> ResponsePlan:
    response_id, stored = _stored(state, view)
    if stored.run is not None and not stored.run.ended:
        stored.run.cancel()
    del state.http_store[response_id]
    return _json(shapes.deleted(response_id, "response"))


def _cancel(state: ServerState, view: RequestView) -> ResponsePlan:
    _, stored = _stored(state, view)
    run = stored.run
    if run is None:
        raise _refused(400, "Only responses created with background=true can be cancelled.")
    if run.status == "cancelled" or not run.ended:
        return _json(run.cancel() if not run.ended else run.response)
    raise _refused(400, f"Cannot cancel a response with status '{run.status}'.")


def _input_items(state: ServerState, view: RequestView) -> ResponsePlan:
    response_id, stored = _stored(state, view)
    after, limit, order = shapes.page_query(_query(view))
    items = shapes.stored_items(stored.logical_input, _item_ids(response_id))
    return _json(shapes.page(items, after=after, limit=limit, order=order))


def _body_logical(state: ServerState, view: RequestView, *, model_required: bool = True) -> dict[str, Any]:
    """The logical request of a body that reads like a create's (input tokens, compaction), its fields checked as
    a create's are: its input after the response it continues or the conversation it names."""
    responder = Responder(state)
    body = dict(view.wire) if model_required else {"model": None, **view.wire}
    return responder.logical(responder.parse(body, transport="http"), state.http_store)


def _input_tokens(state: ServerState, view: RequestView) -> ResponsePlan:
    logical = _body_logical(state, view, model_required=False)
    return _json(shapes.input_tokens_object(shapes.count_input_tokens(logical)))


def _compact(state: ServerState, view: RequestView) -> ResponsePlan:
    logical = _body_logical(state, view)
    output = shapes.compacted_output(input_items(logical), view.ids)
    compacted = shapes.compaction_object(
        view.ids.new("response"), output, input_tokens=shapes.count_input_tokens(logical)
    )
    return _json(compacted)


def _conversation(state: ServerState, view: RequestView) -> Conversation:
    conversation_id = view.route["conversation_id"]
    conversation = state.http_store.conversation(conversation_id)
    if conversation is None:
        raise RequestRefused(404, shapes.not_found("Conversation", conversation_id))
    return conversation


def _metadata(view: RequestView, *, required: bool = False) -> dict[str, Any]:
    """A conversation's `metadata` (an update must give it: the API's 400 names it, as for a wrong type)."""
    metadata = view.wire.get("metadata")
    if required and "metadata" not in view.wire:
        raise invalid_request(BadRequest.missing("metadata"))
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid_request(BadRequest.wrong_type("'metadata'", "an object", json_type(metadata), "metadata"))
    return dict(metadata or {})


def _items_of_body(state: ServerState, view: RequestView) -> list[Item]:
    """The items a body adds to a conversation, checked as a create's input is (each reference replaced by the item
    it names), then as the conversation keeps them: each of the spec's `ConversationItem` shape (a 400 naming the
    first field a strict client would refuse)."""
    items = view.wire.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise _refused(400, "Invalid 'items': expected an array of items.", param="items")
    from ..references.request_fields import items_refusal  # the spec's schemas: loaded by the first item

    try:
        check_input_items(items, field="items")
        check_storable(items, field="items")
        kept = shapes.stored_items(resolve_references(items, state.http_store.find_item), view.ids)
    except BadRequest as error:
        raise invalid_request(error) from None
    refused = items_refusal(kept, "items")
    if refused is not None:
        raise invalid_request(refused)
    return kept


def _conversation_object(conversation: Conversation) -> dict[str, Any]:
    return shapes.conversation_object(conversation.id, conversation.created_at, conversation.metadata)


def _create_conversation(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = Conversation(view.ids.new("conversation"), _metadata(view))
    conversation.items = _items_of_body(state, view)
    state.http_store.keep_conversation(conversation)
    return _json(_conversation_object(conversation))


def _retrieve_conversation(state: ServerState, view: RequestView) -> ResponsePlan:
    return _json(_conversation_object(_conversation(state, view)))


def _update_conversation(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = _conversation(state, view)
    conversation.metadata = _metadata(view, required=True)
    state.http_store.keep_conversation(conversation)
    return _json(_conversation_object(conversation))


def _delete_conversation(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = _conversation(state, view)
    state.http_store.drop_conversation(conversation.id)
    return _json(shapes.deleted(conversation.id, "conversation.deleted"))


def _list_items(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = _conversation(state, view)
    after, limit, order = shapes.page_query(_query(view))
    return _json(shapes.page(conversation.items, after=after, limit=limit, order=order))


def _create_items(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = _conversation(state, view)
    added = _items_of_body(state, view)
    conversation.items.extend(added)
    state.http_store.keep_conversation(conversation)
    return _json(shapes.page(added, limit=max(len(added), 1), order="asc"))


def _find_item(conversation: Conversation, view: RequestView) -> int:
    item_id = view.route["item_id"]
    for index, item in enumerate(conversation.items):
        if item.get("id") == item_id:
            return index
    raise RequestRefused(404, shapes.not_found("Item", item_id))


def _retrieve_item(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = _conversation(state, view)
    return _json(conversation.items[_find_item(conversation, view)])


def _delete_item(state: ServerState, view: RequestView) -> ResponsePlan:
    conversation = _conversation(state, view)
    del conversation.items[_find_item(conversation, view)]
    state.http_store.keep_conversation(conversation)
    return _json(_conversation_object(conversation))


def _catalogue_headers() -> dict[str, str]:
    return {shapes.MODELS_ETAG_HEADER: shapes.models_etag(shapes.DEFAULT_MODELS)}


def _list_models(state: ServerState, view: RequestView) -> ResponsePlan:
    return _json(shapes.models_page(shapes.DEFAULT_MODELS), headers=_catalogue_headers())


def _retrieve_model(state: ServerState, view: RequestView) -> ResponsePlan:
    model = view.route["model"]
    if state.http_store.model_deleted(model):
        raise RequestRefused(404, shapes.model_not_found(model))
    return _json(shapes.model_object(model), headers=_catalogue_headers())


def _delete_model(state: ServerState, view: RequestView) -> ResponsePlan:
    """A fine-tuned model is deleted (once: then it is gone); a base model of the catalogue is not the caller's to
    delete; any other id is a model the service does not have."""
    model = view.route["model"]
    if model.startswith(shapes.FINE_TUNED_PREFIX) and state.http_store.delete_model(model):
        return _json(shapes.deleted(model, "model"))  # the spec's DeleteModelResponse
    if model in shapes.DEFAULT_MODELS:
        raise RequestRefused(403, shapes.model_not_deletable(model))
    raise RequestRefused(404, shapes.model_not_found(model))


_HANDLERS: dict[str, Callable[[ServerState, RequestView], ResponsePlan]] = {
    routes.RETRIEVE: _retrieve,
    routes.DELETE: _delete,
    routes.CANCEL: _cancel,
    routes.INPUT_ITEMS: _input_items,
    routes.INPUT_TOKENS: _input_tokens,
    routes.COMPACT: _compact,
    routes.CONVERSATIONS_CREATE: _create_conversation,
    routes.CONVERSATIONS_RETRIEVE: _retrieve_conversation,
    routes.CONVERSATIONS_UPDATE: _update_conversation,
    routes.CONVERSATIONS_DELETE: _delete_conversation,
    routes.ITEMS_LIST: _list_items,
    routes.ITEMS_CREATE: _create_items,
    routes.ITEMS_RETRIEVE: _retrieve_item,
    routes.ITEMS_DELETE: _delete_item,
    routes.MODELS_LIST: _list_models,
    routes.MODELS_RETRIEVE: _retrieve_model,
    routes.MODELS_DELETE: _delete_model,
}


def begin_background(
    state: ServerState, plan: ResponsePlan, exchange: Exchange, wire: Mapping[str, Any], logical: Mapping[str, Any]
) -> ResponsePlan:
    """Start a background response: its events are made by a run of their own, kept in the store from now on; the
    client gets the run's stream from its start (`stream: true`, with the plan's faults: a cut leaves the run
    going), else the response object, `queued`."""
    response_id = plan.response_id or state.ids.new("response")
    lifecycle = plan.lifecycle
    stored = Stored(input_items(dict(logical)), [], input_given=input_items(dict(wire)))

    def grew(run: BackgroundRun) -> None:
        if state.http_store.get(response_id) is stored:
            state.http_store[response_id] = stored  # counted again as it grows: a long run may evict older ones

    def ended(run: BackgroundRun) -> None:
        stored.output = done_items(run.done_events())
        grew(run)
        if run.status == "completed":
            _add_items(state, wire, stored.input_given or [], stored.output)

    first = ResponseEvents(echoed_request(wire, logical), response_id=response_id, ids=state.ids)
    run = BackgroundRun(
        first.response_object("queued"),
        queued_polls=lifecycle.queued_polls,
        queued_seconds=lifecycle.queued_seconds,
        in_progress_polls=lifecycle.in_progress_polls,
        on_end=ended,
        on_grow=grew,
    )
    stored.run = run
    state.http_store[response_id] = stored
    run.start(replace(plan, fault=NO_FAULT), state.stopping)  # the run is whole: a fault cuts a client's stream
    exchange.response_id = response_id
    if wire.get("stream") is True:
        return replace(plan, events=run.follow(None), response_id=response_id, release=None)
    return ResponsePlan(
        response_id=response_id, body=VerbatimBody(200, encode_json(run.response)), headers=plan.headers
    )


def add_to_conversation(state: ServerState, exchange: Exchange, wire: Mapping[str, Any]) -> None:
    """A completed create that names a conversation (over either transport) adds its input and its output to it."""
    if exchange.outcome is None or exchange.outcome.kind is not OutcomeKind.COMPLETED:
        return
    _, output, _ = stated_of(exchange)
    _add_items(state, wire, input_items(dict(wire)), output)


def _add_items(state: ServerState, wire: Mapping[str, Any], given: list[Item], output: list[Item]) -> None:
    named = conversation_id(wire.get("conversation"))
    conversation = state.http_store.conversation(named) if named else None
    if conversation is None:
        return
    conversation.items.extend([*shapes.stored_items(given, state.ids), *shapes.stored_items(output, state.ids)])
    state.http_store.keep_conversation(conversation)

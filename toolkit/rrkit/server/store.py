"""The responses and conversations a server keeps: bounded, least recently used evicted first, within the memory
budget's share (`Limits.memory`, "responses")."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from ..protocol.events import done_items, response_id_of
from ..protocol.exceptions import SettingError
from ..protocol.jsontext import json_size
from ..protocol.outcome import OutcomeKind, response_of_body
from ..protocol.request import Item, input_items
from .background import BackgroundRun
from .capture import Exchange


@dataclass
class Stored:
    """A response kept: what a later request continues with `previous_response_id` (its logical input and output),
    and, kept over HTTP, what the resource's routes read: the response object, its background run, the
    conversation it belongs to."""

    logical_input: list[Item]
    output: list[Item]
    response: dict[str, Any] | None = None  # None: kept only to be continued (a WebSocket connection's own)
    run: BackgroundRun | None = None
    conversation: str | None = None
    input_given: list[Item] | None = None  # the items of this request's own input (the conversation gets them)

    @property
    def stated(self) -> dict[str, Any]:
        """The response object as it stands (a background one's as its run states it)."""
        if self.run is not None:
            return self.run.response
        return dict(self.response or {})

    @property
    def status(self) -> str:
        if self.run is None and self.response is None:
            return "completed"
        return str(self.stated.get("status"))

    @property
    def continuable(self) -> bool:
        """Whether a later request may name it as `previous_response_id`: only a completed response."""
        return self.status == "completed"

    def size(self) -> int:
        size = json_size(self.logical_input) + json_size(self.output)
        if self.response is not None:
            size += json_size(self.response)
        if self.run is not None:
            size += self.run.wire_bytes
        return size


@dataclass
class Conversation:
    """A conversation: its items, oldest first, each with an id."""

    id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)
    created_at: int = field(default_factory=lambda: int(time.time()))

    def size(self) -> int:
        return json_size(self.items) + json_size(self.metadata)


HTTP_STORE_SIZE = 1000
"""Responses (and, apart, conversations) kept over HTTP (the least recently used one goes first)."""
WS_STORE_SIZE = 100
"""Completed responses each WebSocket connection keeps for `previous_response_id`."""


class ResponseStore(MutableMapping[str, Stored]):
    """The responses a later request may continue or read, by id, and the conversations: bounded, least recently
    used evicted first. An evicted id is answered `previous_response_not_found` (or 404), as the real service
    answers an id it no longer has."""

    def __init__(self, size: int = HTTP_STORE_SIZE, max_bytes: int | None = None) -> None:
        if size < 1:
            raise SettingError(f"a response store keeps at least one response, got size {size}")
        self.size = size
        self.max_bytes = max_bytes  # None: bounded by `size` alone
        self.kept_bytes = 0
        self.evicted = 0
        self._kept: OrderedDict[str, Stored] = OrderedDict()
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self._deleted_models: OrderedDict[str, None] = OrderedDict()  # fine-tunes deleted, newest last

    def __getitem__(self, response_id: str) -> Stored:
        stored = self._kept[response_id]
        self._kept.move_to_end(response_id)
        return stored

    def __setitem__(self, response_id: str, stored: Stored) -> None:
        if response_id in self._kept:
            del self[response_id]
        self._kept[response_id] = stored
        self._count(response_id, stored.size() if self.max_bytes is not None else 0)

    def __delitem__(self, response_id: str) -> None:
        del self._kept[response_id]
        self.kept_bytes -= self._sizes.pop(response_id, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def continuable(self, response_id: str) -> Stored | None:
        """The response a request may continue with `previous_response_id` (a completed one), or None."""
        stored = self.get(response_id)
        return stored if stored is not None and stored.continuable else None

    def find_item(self, item_id: str) -> Item | None:
        """An item a kept response took or gave, or a kept conversation holds, by its id (newest first)."""
        for stored in reversed(self._kept.values()):
            for item in (*stored.output, *stored.logical_input):
                if item.get("id") == item_id:
                    return item
        for conversation in reversed(self._conversations.values()):
            for item in conversation.items:
                if item.get("id") == item_id:
                    return item
        return None

    def conversation(self, conversation_id: str) -> Conversation | None:
        conversation = self._conversations.get(conversation_id)
        if conversation is not None:
            self._conversations.move_to_end(conversation_id)
        return conversation

    def keep_conversation(self, conversation: Conversation) -> None:
        """Keep (or keep again, once changed) a conversation, counted in the budget."""
        key = "conversation:" + conversation.id
        self.kept_bytes -= self._sizes.pop(key, 0)
        self._conversations[conversation.id] = conversation
        self._conversations.move_to_end(conversation.id)
        self._count(key, conversation.size() if self.max_bytes is not None else 0)

    def drop_conversation(self, conversation_id: str) -> None:
        self._conversations.pop(conversation_id, None)
        self.kept_bytes -= self._sizes.pop("conversation:" + conversation_id, 0)

    def delete_model(self, model: str) -> bool:
        """Delete a fine-tuned model: False when it already was. The ids deleted are kept (as many as responses),
        so a later read of one is a 404."""
        if model in self._deleted_models:
            return False
        self._deleted_models[model] = None
        while len(self._deleted_models) > self.size:
            self._deleted_models.popitem(last=False)
        return True

    def model_deleted(self, model: str) -> bool:
        return model in self._deleted_models

    def _count(self, key: str, size: int) -> None:
        if self.max_bytes is not None:
            self._sizes[key] = size
            self.kept_bytes += size
        while len(self._kept) > self.size or (
            self.max_bytes is not None and self.kept_bytes > self.max_bytes and len(self._kept) > 1
        ):
            del self[next(iter(self._kept))]
            self.evicted += 1
        while len(self._conversations) > self.size or (
            self.max_bytes is not None and self.kept_bytes > self.max_bytes and len(self._conversations) > 1
        ):
            self.drop_conversation(next(iter(self._conversations)))
            self.evicted += 1

    async def aclose(self) -> None:
        """Stop every background response still being made."""
        for stored in list(self._kept.values()):
            if stored.run is not None:
                await stored.run.aclose()

    def clear(self) -> None:
        self._kept.clear()
        self._conversations.clear()
        self._deleted_models.clear()
        self._sizes.clear()
        self.kept_bytes = 0


def store_ended(
    store: MutableMapping[str, Stored], exchange: Exchange, *, keep_object: bool = False, kept: bool = True
) -> None:
    """Note an ended response's id on its exchange and keep it (unless not `kept`): a completed one to be continued
    with `previous_response_id`, and with `keep_object` (HTTP, `store` not false) every one that states its
    response object, for the resource's routes."""
    response_id, output, stated = stated_of(exchange, with_response=keep_object)
    exchange.response_id = response_id
    completed = exchange.outcome is not None and exchange.outcome.kind is OutcomeKind.COMPLETED
    if not kept or not response_id or not (completed or (keep_object and stated is not None)):
        return
    request = exchange.logical_request or {}
    store[response_id] = Stored(
        input_items(request),
        output,
        response=stated if keep_object else None,
        input_given=input_items(exchange.wire_request or {}) if keep_object else None,
    )


def stated_of(
    exchange: Exchange, *, with_response: bool = True
) -> tuple[str | None, list[Item], dict[str, Any] | None]:
    """The response id, the output items and the response object an answer states: those of the response object
    of a whole body, or of the stream's lifecycle events and done items (and its last event's response object
    only `with_response`: else None, that event left unparsed)."""
    sent = exchange.events
    body = response_of_body(exchange.response_body) if exchange.response_body is not None and not sent else None
    if body is not None:
        output = [item for item in body.get("output") or [] if isinstance(item, dict)]
        return str(body.get("id") or "") or exchange.response_id, output, body
    done = done_items(sent.done_events())
    response_id = exchange.response_id or response_id_of(sent.parsed())  # parsed up to the event that states it
    ending = sent.last_ending() if with_response else None
    final = ending.event.get("response") if ending is not None else None
    return response_id, done, final if isinstance(final, dict) else None

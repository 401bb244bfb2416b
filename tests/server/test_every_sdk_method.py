"""Every method the newest official Python SDK has on the resource (`responses` and its beta, input items, input
tokens, `conversations` and their items, `models`) called against the fake server, at strict validation: none is
answered 405 or with a body that is not JSON; `models.delete` answers as the service does."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from openai.resources.beta.responses import Responses as BetaResponses
from openai.resources.beta.responses.input_items import InputItems as BetaInputItems
from openai.resources.beta.responses.input_tokens import InputTokens as BetaInputTokens
from openai.resources.conversations import Conversations
from openai.resources.conversations.items import Items
from openai.resources.models import Models
from openai.resources.responses import Responses
from openai.resources.responses.input_items import InputItems
from openai.resources.responses.input_tokens import InputTokens

from rrkit.protocol import routes
from rrkit.protocol.resources import DEFAULT_MODELS
from rrkit.script import Script, reply, text
from rrkit.server import FakeServer

from ..errortrap import Serve

FINE_TUNE = "ft:gpt-4o-mini:acemeco:suffix:abc123"
"""The fine-tuned model the SDK's own test of `models.delete` deletes."""
SLOW_BACKGROUND = reply(text("Still thinking.")).in_background(queued_polls=2, in_progress_polls=2)
"""A background response that is still running when it is cancelled."""
HISTORY: Any = [{"role": "assistant", "content": "Hi."}]
Call = Callable[[openai.OpenAI, dict[str, str]], object]


def _completed(events: Any) -> str:
    return str(next(event for event in events if event.type == "response.completed").response.id)


def _connect(resource: Responses | BetaResponses) -> str:
    with resource.connect() as connection:
        connection.response.create(model="gpt-test", input="Over a socket.")
        return _completed(connection)


def _stream(client: openai.OpenAI) -> str:
    with client.responses.stream(model="gpt-test", input="Streamed.") as stream:
        return stream.get_final_response().id


CALLS: dict[type[Any], dict[str, Call]] = {
    Responses: {
        "create": lambda c, ids: ids.setdefault("response", c.responses.create(model="gpt-test", input="Hi.").id),
        "stream": lambda c, ids: _stream(c),
        "parse": lambda c, ids: c.responses.parse(model="gpt-test", input="Parsed."),
        "retrieve": lambda c, ids: c.responses.retrieve(ids["response"]),
        "cancel": lambda c, ids: c.responses.cancel(c.responses.create(model="m", input="x", background=True).id),
        "compact": lambda c, ids: c.responses.compact(model="gpt-test", input=HISTORY),
        "connect": lambda c, ids: _connect(c.responses),
        "delete": lambda c, ids: c.responses.delete(c.responses.create(model="gpt-test", input="Bye.").id),
    },
    InputItems: {"list": lambda c, ids: c.responses.input_items.list(ids["response"])},
    InputTokens: {"count": lambda c, ids: c.responses.input_tokens.count(model="gpt-test", input="Count me.")},
    BetaResponses: {
        "create": lambda c, ids: ids.setdefault("beta", c.beta.responses.create(model="gpt-test", input="Hi.").id),
        "retrieve": lambda c, ids: c.beta.responses.retrieve(ids["beta"]),
        "cancel": lambda c, ids: c.beta.responses.cancel(
            c.beta.responses.create(model="m", input="x", background=True).id
        ),
        "compact": lambda c, ids: c.beta.responses.compact(model="gpt-test", input=HISTORY),
        "connect": lambda c, ids: _connect(c.beta.responses),
        "delete": lambda c, ids: c.beta.responses.delete(c.beta.responses.create(model="gpt-test", input="Bye.").id),
    },
    BetaInputItems: {"list": lambda c, ids: c.beta.responses.input_items.list(ids["beta"])},
    BetaInputTokens: {"count": lambda c, ids: c.beta.responses.input_tokens.count(model="gpt-test", input="Count.")},
    Conversations: {
        "create": lambda c, ids: ids.setdefault("conversation", c.conversations.create(metadata={"a": "b"}).id),
        "retrieve": lambda c, ids: c.conversations.retrieve(ids["conversation"]),
        "update": lambda c, ids: c.conversations.update(ids["conversation"], metadata={"a": "c"}),
        "delete": lambda c, ids: c.conversations.delete(c.conversations.create().id),
    },
    Items: {
        "create": lambda c, ids: ids.setdefault(
            "item",
            str(
                c.conversations.items.create(
                    ids["conversation"], items=[{"type": "message", "role": "user", "content": "Hi."}]
                )
                .data[0]
                .id
            ),
        ),
        "retrieve": lambda c, ids: c.conversations.items.retrieve(ids["item"], conversation_id=ids["conversation"]),
        "list": lambda c, ids: c.conversations.items.list(ids["conversation"]),
        "delete": lambda c, ids: c.conversations.items.delete(ids["item"], conversation_id=ids["conversation"]),
    },
    Models: {
        "list": lambda c, ids: c.models.list(),
        "retrieve": lambda c, ids: c.models.retrieve("gpt-test"),
        "delete": lambda c, ids: c.models.delete(FINE_TUNE),
    },
}
"""Each resource class of the SDK and a call of each of its methods, in an order where each finds what it needs
(`ids`: what earlier calls made)."""


def strict(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)


@pytest.fixture
def server(serve: Serve) -> Iterator[FakeServer]:
    with serve.running(Script(default=SLOW_BACKGROUND)) as running:
        yield running


def sdk_methods(resource: type[Any]) -> set[str]:
    """The public methods of one of the SDK's resource classes (its sub-resources and raw-response views aside)."""
    return {name for name, value in vars(resource).items() if not name.startswith("_") and inspect.isfunction(value)}


@pytest.mark.parametrize("resource", list(CALLS), ids=lambda resource: f"{resource.__module__}.{resource.__name__}")
def test_the_walk_calls_every_method_the_sdk_has(resource: type[Any]) -> None:
    assert set(CALLS[resource]) == sdk_methods(resource)


def test_every_sdk_method_is_answered_and_none_with_405_or_a_body_that_is_not_json(server: FakeServer) -> None:
    client, ids = strict(server), dict[str, str]()
    for resource, calls in CALLS.items():
        for name, call in calls.items():
            try:
                call(client, ids)
            except openai.APIError as error:
                pytest.fail(f"{resource.__name__}.{name}: {error}")
    exchanges = [exchange for exchange in server.settle().exchanges if exchange.transport == "http"]
    answered = {(exchange.method, exchange.route, exchange.response_status) for exchange in exchanges}
    assert {route for _, route, _ in answered} == {name for _, _, name in routes.ROUTES}  # every route taken
    for exchange in exchanges:
        where = f"{exchange.method} {exchange.path}"
        assert exchange.response_status == 200, (where, exchange.response_status, exchange.response_body)
        media = exchange.response_headers["content-type"]
        assert media.startswith(("application/json", "text/event-stream")), (where, media)
        if media.startswith("application/json"):
            json.loads(exchange.response_body or b"")


def test_a_fine_tuned_model_is_deleted_once_then_gone(server: FakeServer) -> None:
    client = strict(server)
    assert client.models.delete(FINE_TUNE).model_dump() == {"id": FINE_TUNE, "object": "model", "deleted": True}
    for gone in (lambda: client.models.retrieve(FINE_TUNE), lambda: client.models.delete(FINE_TUNE)):
        with pytest.raises(openai.NotFoundError) as refused:
            gone()
        assert refused.value.code == "model_not_found" and FINE_TUNE in refused.value.message
    assert FINE_TUNE not in [model.id for model in client.models.list()]


def test_a_base_model_is_not_the_caller_s_to_delete_and_an_unknown_one_is_not_found(server: FakeServer) -> None:
    client = strict(server)
    with pytest.raises(openai.PermissionDeniedError) as forbidden:
        client.models.delete(DEFAULT_MODELS[0])
    assert forbidden.value.status_code == 403 and "fine-tuned" in forbidden.value.message
    with pytest.raises(openai.NotFoundError) as unknown:
        client.models.delete("no-such-model")
    assert unknown.value.code == "model_not_found"
    assert [model.id for model in client.models.list()] == list(DEFAULT_MODELS)  # the catalogue is as it was

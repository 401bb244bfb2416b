"""Input items checked as the API checks them (issue 48): the table of types and required fields is the newest
SDK's input item union (less `id` and `status`, which a client sending its history back may leave out); over
HTTP and over a WebSocket, every type is taken with its required fields, and refused with the API's 400 naming
`input[N].field` without one of them; an unknown type, an item that is not an object and an item without a type
are refused the same way."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openai.types.responses import response_input_item_param
from websockets.sync.client import connect

from rrkit.protocol.answer_check import CHECKED_ANSWERS
from rrkit.protocol.input_check import INPUT_ITEMS, ITEM_REFERENCE
from rrkit.server import FakeServer

from ..errortrap import Serve

LEFT_OUT = {"id", "status"}
"""Required by the SDK's types, not by the service for an item sent back (Codex sends its history without them)."""


def sdk_table() -> dict[str, set[str]]:
    """Each input item type of the SDK's union and the fields it requires (its shortest shape, for `message`)."""
    table: dict[str, set[str]] = {}
    for shape in typing.get_args(response_input_item_param.ResponseInputItemParam):
        annotations: dict[str, Any] = {}
        for klass in reversed(shape.__mro__):
            annotations.update(getattr(klass, "__annotations__", {}))
        text = {name: getattr(value, "__forward_arg__", str(value)) for name, value in annotations.items()}
        kind = re.findall(r"Literal\['([^']+)'\]", text["type"])[0]
        required = {name for name, annotation in text.items() if annotation.startswith("Required[")}
        required -= {"type", *(LEFT_OUT if kind != ITEM_REFERENCE else ())}  # a reference is its id
        table[kind] = required if kind not in table else table[kind] & required
    return table


def item(kind: str, *, without: str | None = None) -> dict[str, Any]:
    """The smallest item of `kind` (every required field, each an empty string), less `without`."""
    return {"type": kind, **{name: "" for name in INPUT_ITEMS[kind] if name != without}}


class Creates:
    """Creates sent to one server over one connection (a refusal leaves an HTTP connection and a socket open)."""

    def __init__(self, server: FakeServer, transport: str) -> None:
        self.server, self.transport = server, transport
        self.client = httpx.Client(timeout=10)
        self.socket = connect(server.responses_ws_url, open_timeout=10) if transport == "ws" else None

    def refusal(self, items: list[Any], **fields: Any) -> dict[str, Any] | None:
        """The error object the server answers a create with these input items with (None: it answered)."""
        body = {"model": "m", "input": items, "stream": True, **fields}
        if self.socket is None:
            answer = self.client.post(self.server.http_url + "/responses", json=body)
            if answer.status_code == 200:
                return None
            assert answer.status_code == 400, answer.text
            error: dict[str, Any] = answer.json()["error"]
            return error
        self.socket.send(json.dumps({"type": "response.create", **body}))
        while True:
            event = json.loads(self.socket.recv(timeout=10))
            if event["type"] == "error":
                assert event["status"] == 400, event
                frame_error: dict[str, Any] = event["error"]
                return frame_error
            if event["type"] == "response.completed":
                return None


@pytest.fixture(params=["http", "ws"])
def creates(serve: Serve, request: pytest.FixtureRequest) -> Iterator[Creates]:
    sent = Creates(serve(), request.param)
    yield sent
    sent.client.close()
    if sent.socket is not None:
        sent.socket.close()


def test_the_table_is_the_sdk_s_input_item_union_less_the_fields_an_item_sent_back_may_leave_out() -> None:
    assert {kind: set(fields) for kind, fields in INPUT_ITEMS.items()} == sdk_table()


def test_every_input_item_type_is_taken_with_its_required_fields(creates: Creates) -> None:
    for kind in INPUT_ITEMS.keys() - {ITEM_REFERENCE}:  # a reference must name a stored item (below)
        answered = CHECKED_ANSWERS.get(kind)  # an answer follows the call it names (test_continuation_answers)
        assert creates.refusal([*([item(answered)] if answered else []), item(kind)]) is None, kind
    assert creates.refusal([{"role": "user", "content": "hi"}]) is None  # a message's short form


def test_an_item_without_a_required_field_is_refused_naming_it(creates: Creates) -> None:
    for kind, fields in INPUT_ITEMS.items():
        for field in fields:
            error = creates.refusal([item("message", without=None), item(kind, without=field)])
            assert error is not None, f"{kind} without {field}"
            assert (error["param"], error["code"]) == (f"input[1].{field}", "missing_required_parameter")
            assert error["message"] == f"Missing required parameter: 'input[1].{field}'."
            assert error["type"] == "invalid_request_error"


def test_an_unknown_type_a_bare_value_and_an_untyped_item_are_refused_naming_the_place(creates: Creates) -> None:
    bogus = creates.refusal([{"type": "bogus"}])
    assert bogus is not None and (bogus["param"], bogus["code"]) == ("input[0].type", "invalid_value")
    assert bogus["message"].startswith("Invalid value: 'bogus'. Supported values are: 'message', 'function_call'")
    bare = creates.refusal(["hello"])
    assert bare is not None and (bare["param"], bare["code"]) == ("input[0]", "invalid_type")
    assert bare["message"] == "Invalid type for 'input[0]': expected an input item, but got a string instead."
    untyped = creates.refusal([{"content": "hi"}])
    assert untyped is not None and (untyped["param"], untyped["code"]) == (
        "input[0].type",
        "missing_required_parameter",
    )


WRONG_TYPES: list[tuple[dict[str, Any], str, str]] = [
    (
        {"role": "user", "content": [{"type": "input_text", "text": 7}]},
        "input[0].content[0].text",
        "expected a string, but got an integer instead",
    ),
    (
        {"role": "user", "content": None},
        "input[0].content",
        "expected one of an array of objects or string, but got null",
    ),
    ({"role": "user", "content": ["hi"]}, "input[0].content[0]", "expected an object, but got a string instead"),
    ({"role": 1, "content": "hi"}, "input[0].role", "expected a string, but got an integer instead"),
    (
        {"role": "user", "content": [{"type": "input_image", "image_url": {"url": "x"}}]},
        "input[0].content[0].image_url",
        "expected a string, but got an object instead",
    ),
    (
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": {"city": "Paris"}},
        "input[0].arguments",
        "expected a string, but got an object instead",
    ),
    (
        {"type": "function_call_output", "call_id": "c", "output": {"text": "x"}},
        "input[0].output",
        "expected one of a string or array of objects, but got an object instead",
    ),
    (
        {"type": "custom_tool_call_output", "call_id": "c", "output": [{"type": "input_text", "text": None}]},
        "input[0].output[0].text",
        "expected a string, but got null instead",
    ),
]
"""A field inside an input item of the wrong type, the field's path and the service's words for it."""


def test_a_field_inside_an_item_of_the_wrong_type_is_refused_naming_its_path(creates: Creates) -> None:
    for wrong, param, words in WRONG_TYPES:
        error = creates.refusal([wrong])
        assert error is not None, param
        assert (error["param"], error["code"], error["type"]) == (param, "invalid_type", "invalid_request_error")
        assert error["message"].startswith(f"Invalid type for '{param}': {words}"), error["message"]
    image = {"type": "input_image", "image_url": None, "file_id": "file_1", "detail": "auto"}
    taken = {"role": "user", "content": [{"type": "input_text", "text": "hi"}, image]}  # an image's fields may be null
    assert creates.refusal([taken]) is None


def test_an_item_reference_is_the_stored_item_it_names_and_one_nothing_holds_is_refused(creates: Creates) -> None:
    """The first response's message, named by `item_reference` (and by the short form, an object with only its
    `id`) in a request that continues nothing, is that message in the request the model sees; an id no store
    holds is refused with the service's 400 (`param: input`, no code)."""
    assert creates.refusal([{"role": "user", "content": "hi"}], store=True) is None
    creates.server.settle()
    done = [sent.event["item"] for sent in creates.server.exchanges[-1].events.done_items()]
    (said,) = [item for item in done if item["type"] == "message"]
    for reference in ({"type": ITEM_REFERENCE, "id": said["id"]}, {"id": said["id"]}):
        assert creates.refusal([reference, {"role": "user", "content": "again"}]) is None
        creates.server.settle()
        logical = creates.server.exchanges[-1].logical_request
        assert logical is not None and logical["input"][0] == said
    missing = creates.refusal([{"type": ITEM_REFERENCE, "id": "msg_nowhere"}])
    assert missing is not None and (missing["param"], missing["code"]) == ("input", None)
    assert missing["message"].startswith("Item with id 'msg_nowhere' not found. Items are not persisted when")

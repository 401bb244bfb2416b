"""The official `openai` SDK, with strict validation, consumes the fake server over SSE and WebSocket."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from rrkit.protocol import check_order
from rrkit.script import Script, failed, reply
from rrkit.server import FakeServer

from ..errortrap import Serve


def strict_client(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.http_url, api_key="sk-test", max_retries=0, _strict_response_validation=True)


def test_sdk_streams_default_text_reply_with_create(serve: Serve) -> None:
    server = serve()
    client = strict_client(server)
    events = list(client.responses.create(model="gpt-test", input="Hello", stream=True))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == "Hello from rrkit, the fake Responses server."
    assert check_order([event.model_dump() for event in events]) == []


def test_sdk_stream_helper_returns_final_response(serve: Serve) -> None:
    server = serve()
    client = strict_client(server)
    with client.responses.stream(model="gpt-test", input="Hello") as stream:
        final = stream.get_final_response()
    assert final.status == "completed"
    assert final.output_text == "Hello from rrkit, the fake Responses server."
    assert final.usage is not None and final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens
    assert server.exchanges[0].response_id == final.id


def test_sdk_websocket_warmup_then_incremental_request(serve: Serve) -> None:
    server = serve()
    client = strict_client(server)
    context = [{"role": "user", "content": "You are in a test."}]
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-test", input=context, generate=False)
        warmup_events = []
        for event in connection:
            warmup_events.append(event)
            if event.type == "response.completed":
                break
        warmup_id = warmup_events[-1].response.id
        assert [event.type for event in warmup_events] == ["response.created", "response.completed"]
        assert warmup_events[-1].response.output == []

        new_item = {"role": "user", "content": "Now say hello."}
        connection.response.create(model="gpt-test", input=[new_item], previous_response_id=warmup_id)
        text = ""
        for event in connection:
            if event.type == "response.output_text.delta":
                text += event.delta
            if event.type == "response.completed":
                break
    assert text == "Hello from rrkit, the fake Responses server."
    warmup, real = server.exchanges
    assert warmup.warmup and real.incremental
    assert real.logical_request is not None
    assert real.logical_request["input"] == [*context, new_item]


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_request_that_prewarms_the_prompt_cache_is_a_warmup_whatever_its_generate_says(
    serve: Serve, transport: str
) -> None:
    """`prompt_cache_options.prewarm: true` sets `generate` to false (the SDK's documentation): created and
    completed, no output, and the exchange reads as a warmup, even beside `generate: true`."""
    server = serve()
    client = strict_client(server)
    prewarm: Any = {"prewarm": True}
    if transport == "http":
        with client.responses.stream(
            model="gpt-test", input="Hello", prompt_cache_options=prewarm, extra_body={"generate": True}
        ) as stream:
            types = [event.type for event in stream]
            final = stream.get_final_response()
    else:
        with client.responses.connect() as connection:
            connection.response.create(model="gpt-test", input="Hello", prompt_cache_options=prewarm, generate=True)
            types = []
            for event in connection:
                types.append(event.type)
                if event.type == "response.completed":
                    final = event.response
                    break
    assert types == ["response.created", "response.completed"] and final.output == []
    assert server.exchanges[0].warmup


@pytest.mark.parametrize("beta", [None, "responses_websockets=2026-02-06"])
def test_websocket_upgrade_accepted_with_or_without_beta_header(serve: Serve, beta: str | None) -> None:
    server = serve()
    client = strict_client(server)
    headers = {"OpenAI-Beta": beta} if beta else {}
    with client.responses.connect(extra_headers=headers) as connection:
        connection.response.create(model="gpt-test", input="hi")
        types = []
        for event in connection:
            types.append(event.type)
            if event.type == "response.completed":
                break
    assert types[0] == "response.created"
    assert server.connections[0].status == 101
    assert server.connections[0].handshake_headers.get("openai-beta") == beta


def test_sdk_non_streaming_create_gets_the_final_response_object(serve: Serve) -> None:
    server = serve()
    client = strict_client(server)
    response = client.responses.create(model="gpt-test", input="Hello")
    assert response.status == "completed"
    assert response.output_text == "Hello from rrkit, the fake Responses server."
    exchange = server.settle().exchanges[0]
    assert exchange.response_headers["content-type"] == "application/json"
    assert exchange.outcome is not None and exchange.outcome.kind == "completed"


def test_sdk_non_streaming_create_sees_a_failed_response_and_a_drop(serve: Serve) -> None:
    server = serve()
    server.use(Script().queue(failed("invalid_prompt"), reply("never seen").drop_after(2)))
    client = strict_client(server)
    response = client.responses.create(model="gpt-test", input="Hello")
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "invalid_prompt"
    with pytest.raises(openai.APIConnectionError):
        client.responses.create(model="gpt-test", input="Hello")
    assert [e.outcome.kind for e in server.settle().exchanges if e.outcome] == ["failed", "dropped"]

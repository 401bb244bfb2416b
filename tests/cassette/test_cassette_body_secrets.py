"""Credentials inside request bodies: an MCP tool's `authorization` and `headers`, fields named like a credential,
strings that are keys. Masked by one function (rrkit.protocol.secrets); redacted in a recorded cassette's wire and
logical requests (the official SDK through the recording proxy, over SSE and WebSocket) while the upstream got
them as sent; a redacted cassette still matches the live request; the admin API and the journal show them
`<redacted>`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import openai

from rrkit.cassette import CassetteSource, MatchConfig, Redactor, load_cassette
from rrkit.cassette.proxy import RecordingProxy
from rrkit.protocol.secrets import REDACTED, mask_headers, mask_request, secret_name
from rrkit.script import Script, reply
from rrkit.server import FakeServer
from rrkit.server.exchange_log import exchange_record

from ..errortrap import Serve

MCP_TOKEN = "mcp-oauth-7Qx2vLp9RzT4wK8m"
HEADER_SECRET = "hdr-secret-5d1f0c9e8b7a"
KEY = "sk-proj-4f8a2c6e1b9d7f3a5c0e"
TOOLS: list[dict[str, Any]] = [
    {
        "type": "mcp",
        "server_label": "deepwiki",
        "server_url": "https://mcp.example/sse",
        "authorization": MCP_TOKEN,
        "headers": {"X-Team-Auth": HEADER_SECRET},
        "require_approval": "never",
    },
    {
        "type": "function",
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"token": {"type": "string"}}},
    },
]
SECRETS = (MCP_TOKEN, HEADER_SECRET, KEY)


def request_with_secrets() -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "input": [{"role": "user", "content": "What does the wiki say?"}],
        "tools": copy.deepcopy(TOOLS),
        "metadata": {"client_secret": "meta-secret-value", "user": "me"},
        "prompt_cache_key": "thread-1",
        "max_output_tokens": 64,
        "safety_identifier": KEY,
    }


def test_every_credential_in_a_request_is_masked_and_nothing_else() -> None:
    request = request_with_secrets()
    before = copy.deepcopy(request)
    found: list[str] = []
    masked = mask_request(request, "#", found=found.append)
    assert request == before  # the input is left as it was
    assert masked["tools"][0]["authorization"] == "#" and masked["tools"][0]["headers"] == {"X-Team-Auth": "#"}
    assert masked["tools"][1] == TOOLS[1]  # a schema property named token is not a credential
    assert masked["metadata"] == {"client_secret": "#", "user": "me"}
    assert masked["safety_identifier"] == "#"  # a key, whatever its field
    assert (masked["prompt_cache_key"], masked["max_output_tokens"], masked["input"]) == (
        "thread-1",
        64,
        request["input"],
    )
    assert set(found) == {MCP_TOKEN, HEADER_SECRET, KEY, "meta-secret-value"}
    assert mask_request(masked, "#") == masked  # idempotent


def test_credential_names_are_known_by_their_words_and_token_counts_are_not() -> None:
    for name in ("Authorization", "x-api-key", "API_KEY", "access_token", "refresh-token", "password", "Cookie"):
        assert secret_name(name), name
    for name in ("max_output_tokens", "input_tokens", "prompt_cache_key", "session-id", "model", "reasoning"):
        assert not secret_name(name), name
    assert secret_name("x-team", ["X-Team"])
    assert mask_headers({"OpenAI-Project": "p", "thread-id": "t"}, "#") == {"OpenAI-Project": "#", "thread-id": "t"}


def record_through_the_proxy(serve: Serve, path: Path) -> FakeServer:
    with (
        serve.running(Script(default=reply("The wiki says hi."))) as upstream,
        RecordingProxy(upstream.http_url) as proxy,
    ):
        serve.guard(proxy)
        client = openai.OpenAI(base_url=proxy.http_url, api_key="sk-test", max_retries=0)
        body = request_with_secrets()
        with client.responses.stream(**body) as stream:
            stream.get_final_response()
        with client.responses.connect() as connection:
            connection.response.create(**body)
            for event in connection:
                if event.type == "response.completed":
                    break
        proxy.save(path)
        upstream.settle()
    return upstream


def test_the_sdk_through_the_proxy_leaves_no_body_credential_in_the_cassette_yet_sends_them_upstream(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    upstream = record_through_the_proxy(serve, path)
    assert [exchange.transport for exchange in upstream.exchanges] == ["http", "ws"]
    for exchange in upstream.exchanges:  # forwarded as sent
        assert exchange.wire_request is not None and exchange.wire_request["tools"][0]["authorization"] == MCP_TOKEN
    written = path.read_text(encoding="utf-8")
    assert not [secret for secret in SECRETS if secret in written]
    cassette = load_cassette(path)
    for exchange in cassette.exchanges:
        for view in (exchange.wire_request, exchange.logical_request):
            assert view is not None and view["tools"][0]["authorization"] == "[REDACTED]"
            assert view["tools"][0]["headers"] == {"X-Team-Auth": "[REDACTED]"}


def test_a_redacted_cassette_answers_the_live_request_that_carries_the_real_credentials(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    record_through_the_proxy(serve, path)
    source = CassetteSource(load_cassette(path), match=MatchConfig())
    replaying = serve(source=source)
    client = openai.OpenAI(base_url=replaying.http_url, api_key="sk-test", max_retries=0)
    with client.responses.stream(**request_with_secrets()) as stream:
        assert stream.get_final_response().output_text == "The wiki says hi."
    assert replaying.exchanges[0].replayed and not replaying.unmatched


def test_bodies_false_keeps_what_was_sent() -> None:
    from rrkit.cassette import Cassette, RecordedExchange

    request = request_with_secrets()
    kept = Redactor(bodies=False).apply(
        Cassette(exchanges=[RecordedExchange(id=0, transport="http", wire_request=request)])
    )
    assert kept.exchanges[0].wire_request == request


def test_the_admin_api_and_the_journal_show_body_credentials_redacted(serve: Serve) -> None:
    server = serve(Script(default=reply("ok")))
    with httpx.Client(timeout=30, trust_env=False) as client:
        body = {**request_with_secrets(), "stream": True}
        sent = client.post(server.http_url + "/responses", json=body, headers={"authorization": f"Bearer {KEY}"})
        assert sent.status_code == 200
        server.settle()
        full = client.get(server.admin_url + "/exchanges/0").text
    journal = json.dumps(exchange_record(server.exchanges[0]))
    for report in (full, journal):
        assert not [secret for secret in SECRETS if secret in report], report[:400]
        assert REDACTED in report
    assert server.exchanges[0].wire_request is not None  # the server itself keeps what was sent
    assert server.exchanges[0].wire_request["tools"][0]["authorization"] == MCP_TOKEN


def test_an_error_quoting_a_credential_of_the_request_keeps_it_out_of_the_cassette() -> None:
    """An upstream's refusal may quote what it refused: the outcome's message is scrubbed like every copy."""
    from rrkit.cassette import Cassette, RecordedExchange
    from rrkit.protocol.outcome import Outcome, OutcomeKind

    refused = Outcome(OutcomeKind.REFUSED, status=400, message=f"Invalid value for 'safety_identifier': '{KEY}'.")
    exchange = RecordedExchange(id=0, transport="http", wire_request=request_with_secrets(), outcome=refused)
    kept = Redactor().apply(Cassette(exchanges=[exchange]))
    assert kept.exchanges[0].outcome is not None and KEY not in str(kept.exchanges[0].outcome.message)
    assert kept.exchanges[0].outcome.message.startswith("Invalid value for 'safety_identifier'")

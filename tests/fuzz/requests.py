"""Request bodies and frames for the server fuzz tests: request-shaped (so that fuzzing reaches past the JSON parser
into field checks, matching and playing) with any JSON value anywhere, and what checks their answers."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import zstandard
from hypothesis import strategies as st

from rrkit.protocol import SSEDecoder

from . import ENCODINGS, HUGE_INTS, JSON_VALUES, RAW_LITERALS, TEXT, json_text, to_bytes

TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error"})
NORMAL = {"model": "gpt-test", "input": [{"type": "message", "role": "user", "content": "Hello"}], "stream": True}

ANY = JSON_VALUES
CONTENT = st.one_of(
    TEXT,
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["input_text", "output_text", "input_image", "weird"]) | TEXT},
            optional={"text": TEXT | ANY},
        ),
        max_size=3,
    ),
    ANY,
)
ITEM = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("message"), "role": st.sampled_from(["user", "assistant", "system", "developer"]) | TEXT},
        optional={"content": CONTENT, "id": TEXT},
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function_call", "function_call_output", "custom_tool_call", "reasoning"])},
        optional={"call_id": TEXT, "name": TEXT, "arguments": TEXT, "output": TEXT | ANY, "summary": ANY},
    ),
    ANY,
)
TOOL = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("function"), "name": TEXT},
        optional={"parameters": ANY, "strict": st.booleans() | ANY, "description": TEXT},
    ),
    st.fixed_dictionaries({"type": st.just("function")}, optional={"parameters": st.dictionaries(TEXT, HUGE_INTS)}),
    ANY,
)
NUMBER = st.one_of(st.floats(), HUGE_INTS, RAW_LITERALS, ANY)
FIELDS = {
    "model": TEXT | st.sampled_from(["gpt-模型", "gpt\r\nx-injected: yes", "gpt-\x00", "gpt-test"]) | ANY,
    "input": TEXT | st.lists(ITEM, max_size=4) | ANY,
    "instructions": TEXT | ANY,
    "stream": st.booleans() | ANY,
    "tools": st.lists(TOOL, max_size=3) | ANY,
    "tool_choice": st.sampled_from(["auto", "none", "required"]) | ANY,
    "parallel_tool_calls": st.booleans() | ANY,
    "store": st.booleans() | ANY,
    "temperature": NUMBER,
    "top_p": NUMBER,
    "max_output_tokens": NUMBER,
    "previous_response_id": TEXT | ANY,
    "reasoning": ANY,
    "text": ANY,
    "include": st.lists(TEXT) | ANY,
    "stream_options": ANY,
    "client_metadata": ANY,
    "generate": st.booleans() | ANY,
    "metadata": ANY,
}
REQUESTS = st.fixed_dictionaries({}, optional=FIELDS) | st.dictionaries(TEXT, ANY, max_size=5)
"""Request-shaped bodies: any subset of the fields, each of the right type or any JSON value; or any object."""
VALID_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
VALID_REQUESTS = st.fixed_dictionaries(
    {"model": st.just("gpt-test"), "input": VALID_TEXT | st.just(NORMAL["input"]), "stream": st.booleans()},
    optional={
        "instructions": VALID_TEXT,
        "tools": st.lists(
            st.fixed_dictionaries(
                {"type": st.just("function"), "name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True)},
                optional={"parameters": st.dictionaries(VALID_TEXT, HUGE_INTS | VALID_TEXT, max_size=3)},
            ),
            max_size=2,
        ),
        "temperature": st.floats(0, 2),
        "max_output_tokens": st.integers(1, 2**40),
    },
)
"""Requests the API takes: unicode text, tools with big integers in their schemas."""
NEAR_VALID = st.tuples(
    VALID_REQUESTS, st.sampled_from(sorted(FIELDS)).flatmap(lambda key: st.tuples(st.just(key), FIELDS[key]))
).map(lambda pair: {**pair[0], pair[1][0]: pair[1][1]})
"""A request the API takes with one field changed to anything."""
BODIES = st.one_of(VALID_REQUESTS, NEAR_VALID, REQUESTS, ANY)
FRAMES = st.one_of(
    VALID_REQUESTS.map(lambda body: {"type": "response.create", **body}),
    NEAR_VALID.map(lambda body: {"type": "response.create", **body}),
    REQUESTS.map(lambda body: {"type": "response.create", **body}),
    REQUESTS.map(lambda body: {**body, "type": "response.create"}),
    REQUESTS.flatmap(lambda body: (TEXT | ANY).map(lambda kind: {**body, "type": kind})),
    ANY,
)
"""`response.create` frames, valid and not, frames of other types, and any JSON value."""


class Payload(bytes):
    """Bytes shown shortened in a failing example (100,000 nested lists make a 200 KB repr)."""

    def __repr__(self) -> str:
        shown = bytes(self)
        return repr(shown) if len(shown) <= 300 else f"{shown[:150]!r} ... {shown[-150:]!r} ({len(shown)} bytes)"


@st.composite
def json_payloads(draw: st.DrawFn, values: st.SearchStrategy[Any] = BODIES) -> Payload:
    """A JSON value as the bytes a client may send: escaped or raw surrogates, UTF-8 or another encoding."""
    value = draw(values)
    text = json_text(value, ascii_only=draw(st.booleans()))
    return Payload(to_bytes(text, draw(ENCODINGS)))


CONTENT_TYPES = st.sampled_from(
    ["application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "a/b"]
) | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20).map(str.strip)
"""Header values h11 sends (printable ASCII, no surrounding blanks)."""
ENCODING_NAMES = st.sampled_from(
    ["gzip", "deflate", "zstd", "identity", "br", "gzip, zstd", "GZIP", "", "x-gzip", "a,,b"]
)


def encode_as(body: bytes, coding: str) -> bytes:
    """`body` encoded as `coding` says (codings applied in the listed order), where rrkit knows the coding."""
    for name in (c.strip().lower() for c in coding.split(",")):
        if name in ("gzip", "x-gzip"):
            body = gzip.compress(body)
        elif name == "deflate":
            body = zlib.compress(body)
        elif name == "zstd":
            body = zstandard.ZstdCompressor().compress(body)
    return body


@st.composite
def http_headers_and_body(draw: st.DrawFn, payload: bytes) -> tuple[dict[str, str], Payload]:
    """Headers with or without `content-type` / `content-encoding`; the body encoded as said, or not."""
    headers: dict[str, str] = {}
    if draw(st.booleans()):
        headers["content-type"] = draw(CONTENT_TYPES)
    if draw(st.integers(0, 3)) == 0:
        coding = draw(ENCODING_NAMES)
        headers["content-encoding"] = coding
        if draw(st.booleans()):
            payload = encode_as(payload, coding)
    return headers, Payload(payload)


def check_error_body(data: Any) -> None:
    """An OpenAI-shaped error body: `{"error": {"message": str, "type": str, ...}}`."""
    assert isinstance(data, dict) and isinstance(data.get("error"), dict), data
    error = data["error"]
    assert isinstance(error.get("message"), str) and error["message"], error
    assert isinstance(error.get("type"), str), error


def sse_events(content: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    messages = decoder.feed(content)
    assert not decoder.has_partial, f"the stream ends mid-message: {content[-200:]!r}"
    return [json.loads(message.data) for message in messages if message.data != "[DONE]"]


def check_answer(status: int, content_type: str, content: bytes) -> list[dict[str, Any]]:
    """A 400 with a JSON error, or a 200: an SSE stream ending in a terminal event or a JSON response object.
    Returns the events of a stream (empty for a JSON answer)."""
    assert status in (200, 400), f"status {status}: {content[:500]!r}"
    if status == 400:
        assert content_type.startswith("application/json"), content_type
        check_error_body(json.loads(content))
        return []
    if content_type.startswith("text/event-stream"):
        events = sse_events(content)
        assert events, "an empty stream"
        assert events[-1].get("type") in TERMINAL, [event.get("type") for event in events]
        return events
    assert content_type.startswith("application/json"), content_type
    data = json.loads(content)
    assert isinstance(data, dict) and data.get("object") == "response", data
    return []

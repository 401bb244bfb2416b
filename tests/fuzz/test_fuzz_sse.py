"""The SSE decoder under arbitrary bytes and arbitrary chunking. tests/protocol/test_protocol_sse.py covers encoded
streams (every split, line endings, fields); these add what no encoder writes: any bytes (invalid UTF-8, lone CRs,
NULs, fields without colons), in any chunking, with and without `keep_comments`. The decoder documents no error:
`feed` and `close` never raise, the messages do not depend on the chunking, and they are what the WHATWG
event-stream rules (the reference below, written from the spec) give for the whole stream."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from rrkit.protocol import SSEDecoder, SSEMessage
from rrkit.protocol.sse import encode_event

from . import TEXT, fuzz

LINE_END = re.compile(rb"\r\n|\r|\n")

PIECES = st.one_of(
    st.binary(max_size=12),
    st.sampled_from([b"\n", b"\r", b"\r\n", b"\n\n", b"\r\r", b":", b": ", b"data", b"data:", b"data: ", b"event:"]),
    st.sampled_from([b"id:", b"id: 7", b"id: a\x00b", b"retry: 10", b"retry: x"]),
    st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\x00"]),
    # digits that are not ASCII: '²' passes str.isdigit() but not int(); '١٢' passes both (the spec: ASCII only)
    st.sampled_from(["retry: ²", "retry: 1²", "retry: ١٢", "retry: \uff13", "retry:  1", "retry: +1"]).map(str.encode),
    TEXT.map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.builds(lambda text: encode_event({"type": "response.output_text.delta", "delta": text}), TEXT),
)
STREAMS = st.lists(PIECES, max_size=25).map(b"".join)
"""Bytes that look like SSE often enough to reach every field rule, and anything else."""


def reference(stream: bytes, *, keep_comments: bool = False) -> tuple[list[SSEMessage], bool]:
    """The messages of a whole stream by the WHATWG rules, and whether an unfinished message remains."""
    *lines, rest = LINE_END.split(stream)
    messages: list[SSEMessage] = []
    data: list[str] = []
    event_type, last_id, retry = "", None, None
    for raw in lines:
        line = raw.decode("utf-8", errors="replace")
        if line == "":
            if data:
                messages.append(SSEMessage("\n".join(data), event_type or "message", last_id, retry))
            data, event_type = [], ""
            continue
        if line.startswith(":"):
            if keep_comments:
                messages.append(SSEMessage(data="", event="", comment=line[1:]))
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event_type = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    return messages, bool(rest or data or event_type)


def decode(chunks: list[bytes], *, keep_comments: bool = False) -> tuple[list[SSEMessage], SSEDecoder]:
    decoder = SSEDecoder(keep_comments=keep_comments)
    messages: list[SSEMessage] = []
    for chunk in chunks:
        messages.extend(decoder.feed(chunk))
    return messages, decoder


@st.composite
def chunked(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """A stream and a chunking of it: cuts anywhere, often right after a CR (the CRLF pair split), repeated cuts
    making empty reads."""
    stream = draw(STREAMS)
    after_cr = [index + 1 for index, byte in enumerate(stream) if byte == 0x0D]
    offsets = st.integers(0, len(stream)) | (st.sampled_from(after_cr) if after_cr else st.nothing())
    cuts = sorted(draw(st.lists(offsets, max_size=15)))
    chunks = [stream[start:end] for start, end in itertools.pairwise([0, *cuts, len(stream)])]
    return stream, chunks


@fuzz(600)
@given(case=chunked(), keep_comments=st.booleans())
def test_sse_decoder_on_any_bytes_in_any_chunking_never_raises_and_gives_the_whole_stream_messages(
    case: tuple[bytes, list[bytes]], keep_comments: bool
) -> None:
    stream, chunks = case
    whole, whole_decoder = decode([stream], keep_comments=keep_comments)
    messages, decoder = decode(chunks, keep_comments=keep_comments)
    assert messages == whole
    assert decoder.has_partial == whole_decoder.has_partial


@fuzz(600)
@given(stream=STREAMS, keep_comments=st.booleans())
def test_sse_decoder_on_any_bytes_agrees_with_the_whatwg_rules(stream: bytes, keep_comments: bool) -> None:
    messages, decoder = decode([stream], keep_comments=keep_comments)
    expected, partial = reference(stream, keep_comments=keep_comments)
    assert messages == expected
    assert decoder.has_partial == partial


@fuzz(300)
@given(stream=STREAMS)
def test_sse_decoder_one_byte_at_a_time_gives_the_same_messages(stream: bytes) -> None:
    assert decode([stream[i : i + 1] for i in range(len(stream))])[0] == decode([stream])[0]


@fuzz(300)
@given(case=chunked())
def test_sse_decoder_close_after_any_bytes_never_raises_and_leaves_nothing_partial(
    case: tuple[bytes, list[bytes]],
) -> None:
    _, decoder = decode(case[1])
    assert decoder.close() == []
    assert not decoder.has_partial

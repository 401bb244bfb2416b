"""How an SSE answer's bytes are written: the head with its first events at once, then what the stream has ready
at once gathered into one write (a script's events: not one write per run), while what waits goes out as it waits;
pieces of a body (a fault) stay one write each."""

from __future__ import annotations

import asyncio.selector_events
import threading
from collections.abc import Iterator

import pytest

from rrkit.script import Script, reply, text

from .faultclient import Serve, port_of
from .test_faults_bytes import raw_chunks

_Transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bytes]]:
    """The bytes of each write the server's loop thread makes to a socket (the test's client is not asyncio)."""
    written: list[bytes] = []
    write = _Transport.write

    def counted(self: asyncio.Transport, data: bytes) -> None:
        if threading.current_thread().name == "rrkit-server":
            written.append(bytes(data))
        write(self, data)

    monkeypatch.setattr(_Transport, "write", counted)
    yield written


def test_a_scripted_answer_is_its_head_with_the_first_event_then_the_rest_in_one_write(
    serve: Serve, writes: list[bytes]
) -> None:
    server = serve(Script(default=reply(text("one two three four five six seven eight", chunks=8))))
    chunks = raw_chunks(port_of(server))
    assert len(writes) == 2, [write[:60] for write in writes]
    head, rest = writes
    assert head.startswith(b"HTTP/1.1 200 ") and head.count(b"event: ") == 1
    assert rest.endswith(b"0\r\n\r\n") and rest.count(b"event: ") == b"".join(chunks).count(b"event: ") - 1


def test_an_answer_that_waits_sends_what_came_before_each_wait(serve: Serve, writes: list[bytes]) -> None:
    server = serve(Script(default=reply(text("a b c", chunks=3)).delayed(each=0.05)))
    chunks = raw_chunks(port_of(server))
    events = b"".join(chunks).count(b"event: ")
    assert sum(write.count(b"event: ") for write in writes) == events
    assert len(writes) >= 4  # each event that waited went out once its wait was over, not gathered with the rest


def test_pieces_of_a_body_are_each_their_own_write(serve: Serve, writes: list[bytes]) -> None:
    whole = reply(text("a b c", chunks=3))
    server = serve(Script(default=whole.model_copy(update={"fault": whole.fault.model_validate({"chunk_bytes": 5})})))
    chunks = raw_chunks(port_of(server))
    assert len(writes) >= len(chunks)
